// Keyboard-fast reviewing (keys_help.html lists the keys): j/k move between calls, a approves, e edits, r rejects
// (the reason field, or a checkpoint's guidance, gets the focus; Enter sends), ? shows the keys. In the queue's
// triage list j/k open each row's card in the pane beside it (htmx) and a/e/r act on that card; on a call's page
// they act on its card. Focus only ever lands on calls still waiting for a decision.
(function () {
  "use strict";

  var keyed = false; // the last decision in the pane was made from the keyboard: go on to the next row
  var chosen = ""; // the id of the row the reviewer chose last: a card that settles after they moved on leaves it marked
  var PHONE = window.matchMedia("(max-width: 640px)");

  function rows() { return Array.from(document.querySelectorAll('#queue li.qrow[data-pending="1"]')); }
  // The card keys act on: a page shows one (the pane's, or the call page's).
  function current() { return document.querySelector('article.call[data-pending="1"]:not(.decided-elsewhere)'); }

  // htmx binds what it swaps in only when the swap settles (20 ms later, longer on a busy machine); a key pressed
  // before that would follow the plain link or submit the plain form. Bind it now (htmx skips it at settle).
  function ready(el) { if (window.htmx) htmx.process(el); return el; }

  function select(row) { // the row whose card is (being) opened in the pane
    document.querySelectorAll("#queue li.qrow.selected").forEach(function (other) {
      other.classList.remove("selected");
      other.removeAttribute("aria-current");
    });
    row.classList.add("selected");
    row.setAttribute("aria-current", "true");
    chosen = row.id;
  }

  function openRow(row) {
    if (!row) return;
    select(row);
    var link = ready(row).querySelector("a.row-link");
    link.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    link.click(); // htmx loads the card into the pane; without htmx the link opens the call's page
  }

  function moveRow(step) {
    var list = rows(), i = list.indexOf(document.querySelector("#queue li.qrow.selected"));
    if (!list.length) return false;
    openRow(i < 0 ? list[step > 0 ? 0 : list.length - 1] : list[Math.max(0, Math.min(list.length - 1, i + step))]);
    return true;
  }

  function nextRow(row) { // the next pending row after this one, else the one before it
    var list = rows().filter(function (other) { return other !== row; });
    var after = list.filter(function (other) { return row.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING; });
    return after[0] || list[list.length - 1] || null;
  }

  function focusCard(card) {
    if (!card) return;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }

  function viaKey(form) { // the decision's trail records how it was made: a form sent from the keyboard says so
    if (!(form instanceof HTMLFormElement)) return;
    var via = form.querySelector('input[name="via"]');
    if (!via) via = form.appendChild(Object.assign(document.createElement("input"), { type: "hidden", name: "via" }));
    via.value = "key";
  }

  function press(card, selector) {
    var el = card && card.querySelector(selector);
    if (el && !el.disabled && el.getAttribute("aria-disabled") !== "true") { ready(card); viaKey(el.form); el.click(); }
  }

  function inField(event) { // a key typed in a field is the field's, but Escape leaves it and Enter sends its form
    var target = event.target;
    if (event.key === "Escape") { target.blur(); focusCard(target.closest("article.call")); }
    if (event.key === "Enter" && target.closest("#detail")) keyed = true;
    if (event.key === "Enter") viaKey(target.form);
  }

  function act(key) { // one of our keys, outside a field: says whether it was ours
    var card = current(), help = document.getElementById("keys-help");
    var reason = card && card.querySelector('input[name="reason"]:not([type="hidden"]), textarea[name="guidance"]');
    if (key === "j" || key === "k") { if (!moveRow(key === "j" ? 1 : -1)) focusCard(card); }
    else if (key === "a") { keyed = true; press(card, 'button[data-key="a"]'); }
    else if (key === "e") press(card, '[data-key="e"]');
    else if (key === "r" && reason && !reason.disabled) reason.focus();
    else if (key === "?" && help) { if (help.open) help.close(); else help.showModal(); }
    else return false;
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable]")) inField(event);
    else if (act(event.key)) event.preventDefault();
  });

  // A row clicked: its card opens in the pane. On a phone there is no room for the pane beside the list: the row
  // opens the call's page (its plain link), so htmx must never hear the click. Keep in step with app.css.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("#queue a.row-link");
    if (link && PHONE.matches) event.stopPropagation();
    else if (link && !event.ctrlKey && !event.metaKey && !event.shiftKey) select(link.closest("li.qrow"));
  }, true);

  // The call in the pane was decided here (live.js): open the next row, if the reviewer is still on this one.
  document.addEventListener("reviewhub:decided", function (event) {
    var row = event.detail.row;
    if (!keyed || !row.classList.contains("selected")) return;
    keyed = false;
    var next = nextRow(row);
    setTimeout(function () { if (row.classList.contains("selected")) openRow(next); }, 600);
  });

  // A call is leaving (decided here or elsewhere, live.js): if the reviewer was on it, its row hands the focus to
  // the next row; its card lets it go.
  document.addEventListener("reviewhub:leaving", function (event) {
    var el = event.target, active = document.activeElement, row = el.matches("li.qrow");
    if (!el.contains(active)) return;
    var next = row && nextRow(el);
    if (next) next.querySelector("a.row-link").focus({ preventScroll: true });
    else if (!row) active.blur();
  });

  document.addEventListener("htmx:load", function (event) {
    var el = event.detail.elt, active = document.activeElement;
    var card = document.querySelector("#detail article.call"), row = card && document.getElementById("row-" + card.dataset.callId);
    // The list re-read from the database, or a card loaded in the pane: mark the row of the card in the pane,
    // unless the reviewer has chosen another row since (its card is on its way).
    if (row && (el.id === "queue-main" || el === card)) select(document.getElementById(chosen) || row);
    // New content (the edit form, a refused reason): the cursor goes where the reviewer will type, unless they are.
    if (!el.querySelector || (active && active.matches("input, textarea, select"))) return;
    var field = el.querySelector(".invalid [name^=arg_], [aria-invalid=true]") || el.querySelector("form.edit [name^=arg_]");
    if (field) field.focus();
  });
})();
