// Live review on htmx's WebSocket extension. The sockets push fragments rendered
// from the database after each commit (templates: live_push.html, run_changed.html),
// swapped out of band; transport, reconnection and swapping are htmx's. The pages
// re-read what they show when a socket (re)opens and, while one is down, on each
// "livePoll" this file sends. What stays here is the reviewer's side: where a
// pushed row goes, never replacing a panel someone is working in, calls decided
// elsewhere, toasts and notifications, and the live status. A push carries the
// call's row of the queue's triage list (queue_row.html), not its full card: the
// list changes one row at a time, and a card on the page is re-read over HTTP.
(function () {
  "use strict";

  var POLL_EVERY = 5000;  // ms between re-reads while a socket is down
  var LEAVE_AFTER = 1500; // ms a call you decided stays in your queue, showing the outcome
  var RETRIED = [1006, 1011, 1012, 1013]; // close codes the extension reconnects after
  var STATUS_TEXT = { live: "live", reconnecting: "reconnecting…", polling: "polling" };
  var REREAD = "X-ReviewHub-Reread"; // the header of a card's re-read after a push

  var baseTitle = document.title.replace(/^\(\d+\) /, "");
  var announced = new Set(); // calls this page showed or announced
  var gone = new Set();      // "call@round" seen decided: a later "pending" for it is stale
  var leftNow = new Set();   // calls that just left the queue, decided by someone else: their toast shows
  var down = new Set();      // socket elements that are not open
  var owed = new Map();       // call id → its decided row, for a card that was busy with a request of its own
  var pollTimer = null;

  htmx.config.wsReconnectDelay = function (retries) { // 0.5 s doubling to 5 s, with jitter
    return Math.min(500 * Math.pow(2, retries), 5000) * (0.75 + Math.random() / 2);
  };

  // --- calls ------------------------------------------------------------------------

  function queue() { return document.getElementById("queue"); } // the triage list's rows
  function pane() { return document.getElementById("detail"); }  // the card of the open call, beside the list
  function roundOf(el) { return el.dataset.callId + "@" + el.dataset.round; }

  function inFlight(card) { // a request from this panel is under way; htmx will swap its answer in
    return card.classList.contains("htmx-request") || !!card.querySelector(".htmx-request");
  }

  function working(card) { // the reviewer is typing in it, or has its edit form or a preview open
    var active = document.activeElement;
    return !!card.querySelector("form.edit, .preview") || (card.contains(active) && active.matches("input, textarea, select"));
  }

  function busy(card) { return working(card) || inFlight(card); } // ... or is deciding it

  // keys.js moves the focus away from a call before it stops being actionable.
  function leaving(el) { el.dispatchEvent(new CustomEvent("reviewhub:leaving", { bubbles: true })); }

  // An open card of a call someone else decided: keep it, show the outcome ("Approved by bob"), disable it.
  function showDecided(card, fresh) {
    if (!card.classList.contains("decided-elsewhere")) {
      leaving(card);
      card.classList.add("decided-elsewhere");
      card.dataset.pending = "0";
      card.querySelectorAll("button, input, textarea, select").forEach(function (el) { el.disabled = true; });
      card.querySelectorAll("a[data-key]").forEach(function (a) { a.setAttribute("aria-disabled", "true"); a.tabIndex = -1; });
    }
    var box = card.querySelector(".live-outcome");
    if (!box) {
      box = document.createElement("div");
      box.className = "live-outcome";
      box.setAttribute("role", "status");
      card.querySelector(".description").after(box);
    }
    box.replaceChildren.apply(box, Array.from(fresh.querySelectorAll(".outcome, .output")).map(function (el) { return el.cloneNode(true); }));
  }

  // May a fresh copy of a card (re-read over HTTP) replace the one on the page? If not, do what is due instead.
  function mayReplace(card, fresh) {
    if (fresh.dataset.pending === "1") return !gone.has(roundOf(fresh)) && !busy(card) && !card.classList.contains("decided-elsewhere");
    var decidedHere = card.dataset.pending === "0" || inFlight(card); // the htmx answer shows the outcome
    if ((decidedHere || fresh.dataset.decidedByYou === "1") && !card.classList.contains("decided-elsewhere")) return true;
    showDecided(card, fresh);
    return false;
  }

  // A pushed row says a call changed. A card of it on this page (the pane, the call page) follows:
  // decided elsewhere, it shows who decided; still pending, it is re-read from the database unless in use.
  function follow(row) {
    var card = document.getElementById("call-" + row.dataset.callId);
    if (!card || card.classList.contains("decided-elsewhere")) return;
    if (row.dataset.pending !== "1") {
      if (card.dataset.pending !== "1") return;
      if (inFlight(card)) owed.set(row.dataset.callId, row); // told once the card's own request has answered
      else showDecided(card, row);
    } else if (card.dataset.pending === "1" && !busy(card)) {
      // Marked by a header of its own: its answer is swapped in only if the reviewer has not started on the card
      // meanwhile (a mark on the card would also stop the answer of the reviewer's own request, an Edit… say).
      var headers = {}; headers[REREAD] = "1";
      htmx.ajax("GET", row.querySelector("a.row-link").getAttribute("href"), { target: card, swap: "outerHTML", headers: headers });
    }
  }

  // A card whose own request was in flight when its call was decided elsewhere: if that request was not this
  // reviewer's decision (a claim, a preview), the card still says pending once it has answered; say who decided.
  function settleOwed() {
    owed.forEach(function (row, id) {
      var card = document.getElementById("call-" + id);
      if (card && inFlight(card)) return;
      owed.delete(id);
      if (card && card.dataset.pending === "1" && !card.classList.contains("decided-elsewhere")) showDecided(card, row);
    });
  }

  function shown(change) { // the number of calls the list says it shows
    var count = document.getElementById("queue-shown");
    if (!count || count.dataset.more) return; // "1,000+": counted no further, so not counted on here either
    var n = Math.max(0, parseInt(count.dataset.count || "0", 10) + change);
    count.dataset.count = n;
    count.textContent = n;
  }

  function removeRow(row) { leaving(row); row.remove(); shown(-1); }

  // Would a new call be in this list? The list says what it was filtered by (tool, tier, agent, group, mine)
  // and the row has those; search and "near deadline" cannot be told here.
  function fits(row) {
    var asked = queue().dataset;
    var ok = ["tool", "tier", "agent", "group"].every(function (name) { return !asked[name] || asked[name] === row.dataset[name]; });
    return ok && !(asked.mine && row.dataset.canDecide === "0");
  }

  function insert(list, row) {
    if (!fits(row)) return;
    if (list.dataset.liveInsert === "1") { // the whole queue, oldest first: a new call goes at the end
      htmx.swap(list, row.outerHTML, { swapStyle: "beforeend" });
      shown(1);
      return;
    }
    var bar = document.getElementById("queue-new"); // sorted, filtered or paged: say so, and let the reviewer reload
    if (!bar || bar.dataset[row.dataset.callId]) return;
    bar.dataset[row.dataset.callId] = "1";
    var n = bar.querySelector(".n");
    n.textContent = parseInt(n.textContent, 10) + 1;
    bar.hidden = false;
  }

  // A pushed row lands in #live-queue: it updates the list in place (one row in, out or changed) and any card of it.
  function land(detail) {
    var fresh = detail.fragment.firstElementChild;
    detail.shouldSwap = false;
    if (!fresh || !fresh.matches("li.qrow")) return;
    var id = fresh.dataset.callId, pending = fresh.dataset.pending === "1";
    if (pending && gone.has(roundOf(fresh))) return; // older than what this page knows
    if (!pending) { gone.add(roundOf(fresh)); announced.add(id); }
    follow(fresh);
    var row = document.getElementById(fresh.id), list = queue();
    var card = document.getElementById("call-" + id);
    if (row && pending) {
      fresh.classList.toggle("selected", row.classList.contains("selected"));
      htmx.swap(row, fresh.outerHTML, { swapStyle: "outerHTML" });
    } else if (row && card && pane() && pane().contains(card)) {
      row.classList.add("decided"); row.dataset.pending = "0"; // open in the pane: it stays until the reviewer moves on
      if (!card.classList.contains("decided-elsewhere")) return;
      leftNow.add(id);
    } else if (row) {
      removeRow(row);
      leftNow.add(id);
    } else if (pending && list) {
      insert(list, fresh);
    }
  }

  // A call you decided in the pane shows you the outcome, then its row leaves; keys.js opens the next one.
  function decidedByYou(card) {
    var row = document.getElementById("row-" + card.dataset.callId);
    if (!row) return;
    row.dataset.pending = "0";
    card.dispatchEvent(new CustomEvent("reviewhub:decided", { bubbles: true, detail: { row: row } }));
    setTimeout(function () { if (row.isConnected) removeRow(row); }, LEAVE_AFTER);
  }

  // The list re-read from the database (socket (re)opened, or a poll), or a card loaded in the pane: mark its row.
  function reread() {
    var card = pane() && pane().querySelector("article.call");
    var row = card && document.getElementById("row-" + card.dataset.callId);
    if (row) row.classList.add("selected");
  }

  // --- telling the reviewer ---------------------------------------------------------

  function syncTitle() {
    var badge = document.getElementById("queue-count");
    if (!badge) return;
    var count = parseInt(badge.dataset.count || "0", 10);
    document.title = (count > 0 ? "(" + badge.textContent.trim() + ") " : "") + baseTitle; // "1,000+" past the cap
  }

  function notify(note) {
    if (document.visibilityState !== "hidden" || !("Notification" in window) || Notification.permission !== "granted") return;
    if (note.dataset.notify === "0") return; // the reviewer turned browser notifications off for this tool or group
    var id = note.dataset.callId;
    var shown = new Notification("New call to review", { body: note.querySelector(".what").textContent, tag: "call-" + id });
    shown.onclick = function () {
      window.focus();
      var row = document.getElementById("row-" + id);
      if (row) row.querySelector("a.row-link").click(); else location.href = note.href;
      shown.close();
    };
  }

  // A pushed toast shows for a new call not announced yet, or for a call that just left this queue.
  function toast(detail) {
    var note = detail.fragment.firstElementChild, id = note.dataset.callId;
    if (note.dataset.toast !== "new") { detail.shouldSwap = leftNow.delete(id); return; }
    detail.shouldSwap = !announced.has(id);
    if (detail.shouldSwap) { announced.add(id); notify(note); }
  }

  function initNotifications() { // permission is asked for once, when the reviewer clicks; never on page load
    var button = document.getElementById("notify-enable");
    if (!button || !("Notification" in window) || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", function () { button.hidden = true; Notification.requestPermission(); });
  }

  // --- sockets ----------------------------------------------------------------------

  function poll() { down.forEach(function (socket) { htmx.trigger(socket, "livePoll"); }); }

  function track(socket, open, state) {
    if (open) down.delete(socket); else down.add(socket);
    if (socket.id === "live-queue") {
      document.body.dataset.live = state;
      var status = document.getElementById("live-status");
      if (status) status.textContent = STATUS_TEXT[state];
    }
    if (down.size && !pollTimer) pollTimer = setInterval(poll, POLL_EVERY);
    if (!down.size && pollTimer) { clearInterval(pollTimer); pollTimer = null; }
  }

  if (!("WebSocket" in window)) { // before htmx processes the page: poll instead
    document.querySelectorAll("[ws-connect]").forEach(function (socket) {
      socket.removeAttribute("ws-connect");
      track(socket, false, "polling");
    });
  }

  document.addEventListener("htmx:wsOpen", function (event) { track(event.detail.elt, true, "live"); });
  document.addEventListener("htmx:wsClose", function (event) {
    track(event.detail.elt, false, RETRIED.indexOf(event.detail.event.code) >= 0 ? "reconnecting" : "polling");
  });

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (detail.target.id === "live-queue") land(detail);
    else if (detail.target.id === "toasts") toast(detail);
    else if (detail.target.matches("article.call") && !mayReplace(detail.target, detail.fragment.firstElementChild)) detail.shouldSwap = false;
  });

  document.addEventListener("htmx:afterRequest", function () { if (owed.size) setTimeout(settleOwed, 0); });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target, headers = (event.detail.etc && event.detail.etc.headers) || {};
    if (headers[REREAD] !== "1") return;
    // Not over a card the reviewer has started on, nor over one with a request of its own in flight (a preview,
    // say), nor over one that a reviewer's own answer has already replaced.
    var started = !target.isConnected || working(target) || !!target.querySelector(".htmx-request");
    if (started || target.dataset.pending !== "1" || target.classList.contains("decided-elsewhere")) event.detail.shouldSwap = false;
  });

  document.addEventListener("htmx:load", function (event) {
    var el = event.detail.elt;
    if (el.id === "queue-count") syncTitle();
    else if (el.id === "queue-main") reread();
    else if (el.matches(".toast")) setTimeout(function () { el.remove(); }, 6000);
    else if (el.matches('article.call[data-pending="0"]')) { gone.add(roundOf(el)); if (pane() && pane().contains(el)) decidedByYou(el); }
    else if (el.matches("article.call") && pane() && pane().contains(el)) reread();
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("article.call, li.qrow").forEach(function (el) { announced.add(el.dataset.callId); });
    initNotifications();
  });
})();
