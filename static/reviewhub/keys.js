// Keyboard-fast reviewing: j/k move between calls, a approves, e edits,
// r rejects (the reason field, or a checkpoint's guidance, gets the focus; Enter sends), ? shows the keys.
// Focus only ever lands on calls still waiting for a decision. In the queue's
// triage list, j/k move between rows and open each in the pane beside it
// (htmx), and a/e/r act on the card in the pane.
(function () {
  "use strict";

  var lastCard = null; // id of the call the reviewer was last on
  var keyed = false;    // the last decision in the pane was made from the keyboard: go on to the next row

  // --- the triage list: rows, and the card of the open one in the pane ---------------

  function rows() { return Array.from(document.querySelectorAll('#queue li.qrow[data-pending="1"]')); }
  function paneCard() {
    var card = document.querySelector('#detail article.call[data-pending="1"]:not(.decided-elsewhere)');
    return card || null;
  }

  function openRow(row) {
    if (!row) return;
    document.querySelectorAll("#queue li.qrow.selected").forEach(function (other) { other.classList.remove("selected"); other.removeAttribute("aria-current"); });
    row.classList.add("selected");
    row.setAttribute("aria-current", "true");
    var link = ready(row).querySelector("a.row-link");
    link.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    link.click(); // htmx loads the card into the pane; without htmx the link opens the call's page
  }

  function moveRow(step) {
    var list = rows();
    if (!list.length) return false;
    var at = document.querySelector("#queue li.qrow.selected");
    var i = list.indexOf(at);
    openRow(i < 0 ? list[step > 0 ? 0 : list.length - 1] : list[Math.max(0, Math.min(list.length - 1, i + step))]);
    return true;
  }

  function nextRow(row) { // the next pending row after this one, else the one before it
    var list = rows().filter(function (other) { return other !== row; });
    var after = list.filter(function (other) { return row.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING; });
    return after[0] || list[list.length - 1] || null;
  }

  // On a phone there is no room for the pane beside the list: a row opens the call's page (its plain link), so
  // htmx never hears the click. Keep in step with the phone breakpoint in app.css.
  var PHONE = window.matchMedia("(max-width: 640px)");
  document.addEventListener("click", function (event) {
    if (PHONE.matches && event.target.closest && event.target.closest("#queue a.row-link")) event.stopPropagation();
  }, true);

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("#queue a.row-link");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var row = link.closest("li.qrow");
    document.querySelectorAll("#queue li.qrow.selected").forEach(function (other) { if (other !== row) { other.classList.remove("selected"); other.removeAttribute("aria-current"); } });
    row.classList.add("selected");
    row.setAttribute("aria-current", "true");
  });

  // The call in the pane was decided here (live.js): open the next row, if the reviewer is still on this one.
  document.addEventListener("reviewhub:decided", function (event) {
    var row = event.detail.row;
    if (!keyed || !row.classList.contains("selected")) return;
    keyed = false;
    var next = nextRow(row);
    setTimeout(function () { if (row.classList.contains("selected")) openRow(next); }, 600);
  });

  // The filters apply as soon as one changes.
  document.addEventListener("change", function (event) {
    var form = event.target.form;
    if (form && form.id === "queue-filters" && event.target.name !== "q") form.requestSubmit();
  });

  function actionable() {
    return Array.from(document.querySelectorAll('article.call[data-pending="1"]:not(.decided-elsewhere)'));
  }

  function cardOf(el) {
    return el && el.closest ? el.closest("article.call") : null;
  }

  function focusCard(card) {
    if (!card) return;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }

  // The first actionable call after `card` in the page, else the last one before it.
  function neighbour(card) {
    var after = null, before = null;
    actionable().forEach(function (other) {
      if (other === card) return;
      var following = card.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING;
      if (following && !after) after = other;
      if (!following) before = other;
    });
    return after || before;
  }

  function current() {
    if (document.getElementById("queue")) return paneCard();
    var card = cardOf(document.activeElement);
    var cards = actionable();
    if (card && cards.indexOf(card) >= 0) return card;
    return cards.length === 1 ? cards[0] : null;
  }

  function move(step) {
    var cards = actionable();
    if (!cards.length) return;
    var card = cardOf(document.activeElement);
    var i = cards.indexOf(card);
    if (i < 0) {
      var near = card && card.isConnected ? neighbour(card) : null;
      focusCard(near || cards[step > 0 ? 0 : cards.length - 1]);
      return;
    }
    focusCard(cards[Math.max(0, Math.min(cards.length - 1, i + step))]);
  }

  // htmx binds what it swaps in only when the swap settles (20 ms later, longer on a busy machine); a key pressed
  // before that would follow the plain link or submit the plain form. Bind it now (htmx skips it at settle).
  function ready(el) { if (window.htmx) htmx.process(el); return el; }

  // The decision's trail records how it was made: a form sent from the keyboard says so (via=key).
  function viaKey(form) {
    if (!form || form.tagName !== "FORM") return;
    var via = form.querySelector('input[name="via"]');
    if (!via) { via = document.createElement("input"); via.type = "hidden"; via.name = "via"; form.appendChild(via); }
    via.value = "key";
  }

  function press(card, selector) {
    var el = card && card.querySelector(selector);
    if (el && !el.disabled && el.getAttribute("aria-disabled") !== "true") { ready(card); viaKey(el.form); el.click(); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var help = document.getElementById("keys-help");
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) {
      if (event.key === "Escape") { target.blur(); focusCard(cardOf(target)); }
      if (event.key === "Enter" && target.closest("#detail")) keyed = true;
      if (event.key === "Enter") viaKey(target.form);
      return;
    }
    var card;
    switch (event.key) {
      case "j": if (!moveRow(1)) move(1); break;
      case "k": if (!moveRow(-1)) move(-1); break;
      case "a": keyed = true; press(current(), 'button[data-key="a"]'); break;
      case "e": press(current(), '[data-key="e"]'); break;
      case "r":
        card = current();
        var reason = card && card.querySelector('input[name="reason"]:not([type="hidden"]), textarea[name="guidance"]');
        if (!reason || reason.disabled) return;
        reason.focus();
        break;
      case "?":
        if (!help) return;
        if (help.open) help.close(); else help.showModal();
        break;
      default:
        return;
    }
    event.preventDefault();
  });

  document.addEventListener("focusin", function (event) {
    var card = cardOf(event.target);
    if (card) lastCard = card.id;
  });

  // A call is leaving (decided here or elsewhere): if the reviewer was on it, go on to the next.
  document.addEventListener("reviewhub:leaving", function (event) {
    var card = event.target;
    if (card.matches("li.qrow")) { // a row leaves the list: the focus goes to the next row's link
      var next = card.contains(document.activeElement) ? nextRow(card) : null;
      if (next) next.querySelector("a.row-link").focus({ preventScroll: true });
      return;
    }
    var active = document.activeElement;
    var onIt = card.contains(active) || ((!active || active === document.body) && lastCard === card.id);
    if (!onIt) return;
    var next = neighbour(card);
    if (next) focusCard(next);
    else if (card.contains(active)) active.blur();
  });

  // New content from htmx (the edit form, a refused reason): put the cursor
  // where the reviewer will type, unless they are already typing somewhere.
  document.addEventListener("htmx:load", function (event) {
    var el = event.detail.elt;
    var active = document.activeElement;
    if (!el.querySelector || (active && active.matches("input, textarea, select"))) return;
    var field = el.querySelector(".invalid [name^=arg_], [aria-invalid=true]") || el.querySelector("form.edit [name^=arg_]");
    if (field) field.focus();
  });
})();
