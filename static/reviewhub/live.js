// Live review on htmx's WebSocket extension. The sockets push fragments rendered from the database after each
// commit (live_push.html, run_changed.html), swapped out of band. Transport, reconnection and swapping are htmx's,
// and the templates declare what they can: a page re-reads what it shows when a socket (re)opens and every 5 s
// (hx-trigger), a toast leaves after 6 s (remove-me). What stays here is the reviewer's side: a poll goes out only
// while a socket is down; where a pushed row goes; never replacing a card someone is working in; calls decided
// elsewhere; which toasts show, browser notifications, and the live status. A push carries the call's row of the
// queue's triage list (queue_row.html), not its card: the list changes one row at a time, a card is re-read.
(function () {
  "use strict";

  var LEAVE_AFTER = 1500; // ms a call you decided stays in your queue, showing the outcome
  var RETRIED = [1006, 1011, 1012, 1013]; // close codes the extension reconnects after
  var STATUS_TEXT = { live: "live", reconnecting: "reconnecting…", polling: "polling" };
  var REREAD = "X-ReviewHub-Reread"; // the header of a card's re-read after a push (htmx:beforeSwap below)

  var baseTitle = document.title.replace(/^\([^)]*\) /, "");
  var announced = new Set(); // calls this page showed or announced
  var gone = new Set(); // "call@round" seen decided: a later "pending" for it is stale
  var leftNow = new Set(); // calls that just left the queue, decided by someone else: their toast shows
  var down = new Set(); // socket elements that are not open

  htmx.config.wsReconnectDelay = function (retries) { // 0.5 s doubling to 5 s, with jitter
    return Math.min(500 * Math.pow(2, retries), 5000) * (0.75 + Math.random() / 2);
  };

  function inPane(card) { return !!card.closest("#detail"); } // the pane beside the queue's list
  function roundOf(el) { return el.dataset.callId + "@" + el.dataset.round; }
  function inFlight(card) { return card.classList.contains("htmx-request") || !!card.querySelector(".htmx-request"); }
  function working(card) { // the reviewer is typing in it, or has its edit form or a preview open
    var active = document.activeElement;
    return !!card.querySelector("form.edit, .preview") || (card.contains(active) && active.matches("input, textarea, select"));
  }
  function busy(card) { return working(card) || inFlight(card); } // ... or is deciding it
  function elsewhere(card) { return card.classList.contains("decided-elsewhere"); }
  // keys.js moves the focus away from a call before it stops being actionable.
  function leaving(el) { el.dispatchEvent(new CustomEvent("reviewhub:leaving", { bubbles: true })); }

  // An open card of a call someone else decided: keep it, show the outcome ("Approved by bob"), disable it.
  function showDecided(card, fresh) {
    if (!elsewhere(card)) {
      leaving(card);
      card.classList.add("decided-elsewhere");
      card.dataset.pending = "0";
      card.querySelectorAll("button, input, textarea, select").forEach(function (el) { el.disabled = true; });
      card.querySelectorAll("a[data-key]").forEach(function (a) { a.setAttribute("aria-disabled", "true"); a.tabIndex = -1; });
    }
    var box = card.querySelector(".live-outcome");
    if (!box) {
      box = Object.assign(document.createElement("div"), { className: "live-outcome", role: "status" });
      card.querySelector(".description").after(box);
    }
    box.replaceChildren.apply(box, Array.from(fresh.querySelectorAll(".outcome, .output")).map(function (el) { return el.cloneNode(true); }));
  }

  // May a fresh copy of a card (re-read over HTTP) replace the one on the page? If not, do what is due instead.
  function mayReplace(card, fresh) {
    if (fresh.dataset.pending === "1") return !gone.has(roundOf(fresh)) && !busy(card) && !elsewhere(card);
    var decidedHere = card.dataset.pending === "0" || inFlight(card); // the htmx answer shows the outcome
    if ((decidedHere || fresh.dataset.decidedByYou === "1") && !elsewhere(card)) return true;
    showDecided(card, fresh);
    return false;
  }

  // A pushed row says a call changed. A card of it on this page (the pane, the call page) follows: decided
  // elsewhere, it shows who decided, once its own request in flight (a claim, a preview) has answered, if it still
  // says pending then; still pending, it is re-read from the database unless in use.
  function follow(row) {
    var card = document.getElementById("call-" + row.dataset.callId);
    if (!card || elsewhere(card) || card.dataset.pending !== "1") return;
    if (row.dataset.pending !== "1" && inFlight(card)) {
      card.addEventListener("htmx:afterRequest", function () { setTimeout(follow, 0, row); }, { once: true });
    } else if (row.dataset.pending !== "1") {
      showDecided(card, row);
    } else if (!busy(card)) {
      htmx.ajax("GET", row.querySelector("a.row-link").getAttribute("href"), { target: card, swap: "outerHTML", headers: { [REREAD]: "1" } });
    }
  }

  function shown(change) { // the number of calls the list says it shows
    var count = document.getElementById("queue-shown");
    if (!count || count.dataset.more) return; // "1,000+": counted no further, so not counted on here either
    count.dataset.count = count.textContent = Math.max(0, parseInt(count.dataset.count || "0", 10) + change);
  }

  function removeRow(row) { leaving(row); row.remove(); shown(-1); }

  // A new call: appended if the list is the whole queue oldest first and its filters (tool, tier, agent, group,
  // mine) fit the row; counted in a "N new calls — show" bar if sorted, filtered or paged. Search and "near
  // deadline" cannot be told here.
  function insert(list, row) {
    var asked = list.dataset, bar = document.getElementById("queue-new");
    var fits = ["tool", "tier", "agent", "group"].every(function (name) { return !asked[name] || asked[name] === row.dataset[name]; });
    if (!fits || (asked.mine && row.dataset.canDecide === "0")) return;
    if (list.dataset.liveInsert === "1") {
      htmx.swap(list, row.outerHTML, { swapStyle: "beforeend" });
      shown(1);
    } else if (bar && !bar.dataset[row.dataset.callId]) {
      bar.dataset[row.dataset.callId] = "1";
      bar.querySelector(".n").textContent = parseInt(bar.querySelector(".n").textContent, 10) + 1;
      bar.hidden = false;
    }
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
    var row = document.getElementById(fresh.id), card = document.getElementById("call-" + id);
    if (row && pending) {
      fresh.classList.toggle("selected", row.classList.contains("selected"));
      htmx.swap(row, fresh.outerHTML, { swapStyle: "outerHTML" });
    } else if (row && card && inPane(card)) {
      row.classList.add("decided"); // open in the pane: it stays until the reviewer moves on
      row.dataset.pending = "0";
      if (elsewhere(card)) leftNow.add(id);
    } else if (row) {
      removeRow(row);
      leftNow.add(id);
    } else if (pending && document.getElementById("queue")) {
      insert(document.getElementById("queue"), fresh);
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

  function syncTitle(badge) { // "(3) Review queue"; "1,000+" past the cap
    document.title = (parseInt(badge.dataset.count || "0", 10) > 0 ? "(" + badge.textContent.trim() + ") " : "") + baseTitle;
  }

  function notify(note) { // data-notify="0": the reviewer turned browser notifications off for this tool or group
    if (document.visibilityState !== "hidden" || note.dataset.notify === "0" || !window.Notification) return;
    if (Notification.permission !== "granted") return;
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
    if (!button || !window.Notification || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", function () { button.hidden = true; Notification.requestPermission(); });
  }

  function track(socket, open, state) {
    if (open) down.delete(socket); else down.add(socket);
    if (socket.id !== "live-queue") return;
    document.body.dataset.live = state;
    var status = document.getElementById("live-status");
    if (status) status.textContent = STATUS_TEXT[state];
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

  // A poll (hx-trigger="every 5s": it has no triggering event) goes out only while a socket of the page is down.
  document.addEventListener("htmx:confirm", function (event) {
    var poll = !event.detail.triggeringEvent && event.detail.elt.matches("[hx-trigger*='every ']");
    if (poll && !down.size) event.preventDefault();
  });

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (detail.target.id === "live-queue") land(detail);
    else if (detail.target.id === "toasts") toast(detail);
    else if (detail.target.matches("article.call") && !mayReplace(detail.target, detail.fragment.firstElementChild)) detail.shouldSwap = false;
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target, headers = (event.detail.etc && event.detail.etc.headers) || {};
    if (headers[REREAD] !== "1") return;
    // Not over a card the reviewer has started on, nor over one with a request of its own in flight (a preview,
    // say), nor over one that a reviewer's own answer has already replaced.
    var started = !target.isConnected || working(target) || !!target.querySelector(".htmx-request");
    if (started || target.dataset.pending !== "1" || elsewhere(target)) event.detail.shouldSwap = false;
  });

  document.addEventListener("htmx:load", function (event) {
    var el = event.detail.elt;
    if (el === document.body) initNotifications();
    if (el === document.body || el.id === "queue-body") { // the page, or the queue read again for new filters
      el.querySelectorAll("article.call, li.qrow").forEach(function (call) { announced.add(call.dataset.callId); });
    }
    if (el.id === "queue-count") syncTitle(el);
    else if (el.matches('article.call[data-pending="0"]')) { gone.add(roundOf(el)); if (inPane(el)) decidedByYou(el); }
  });
})();
