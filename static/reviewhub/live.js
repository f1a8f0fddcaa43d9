// Live review on htmx's WebSocket extension. The sockets push fragments rendered
// from the database after each commit (templates: live_push.html, run_changed.html),
// swapped out of band; transport, reconnection and swapping are htmx's. The pages
// re-read what they show when a socket (re)opens and, while one is down, on each
// "livePoll" this file sends. What stays here is the reviewer's side: where a
// pushed panel goes, never replacing a panel someone is working in, calls decided
// elsewhere, toasts and notifications, and the live status.
(function () {
  "use strict";

  var POLL_EVERY = 5000;  // ms between re-reads while a socket is down
  var LEAVE_AFTER = 1500; // ms a call you decided stays in your queue, showing the outcome
  var RETRIED = [1006, 1011, 1012, 1013]; // close codes the extension reconnects after
  var STATUS_TEXT = { live: "live", reconnecting: "reconnecting…", polling: "polling" };

  var baseTitle = document.title.replace(/^\(\d+\) /, "");
  var announced = new Set(); // calls this page showed or announced
  var gone = new Set();      // "call@round" seen decided: a later "pending" for it is stale
  var leftNow = new Set();   // calls that just left the queue, decided by someone else: their toast shows
  var down = new Set();      // socket elements that are not open
  var pollTimer = null;
  var rereadFrom = [];       // the pending cards when the queue's re-read was sent

  htmx.config.wsReconnectDelay = function (retries) { // 0.5 s doubling to 5 s, with jitter
    return Math.min(500 * Math.pow(2, retries), 5000) * (0.75 + Math.random() / 2);
  };

  // --- calls ------------------------------------------------------------------------

  function queue() { return document.getElementById("queue"); }
  function inQueue(card) { var list = queue(); return !!(list && list.contains(card)); }
  function roundOf(card) { return card.dataset.callId + "@" + card.dataset.round; }

  function inFlight(card) { // a request from this panel is under way; htmx will swap its answer in
    return card.classList.contains("htmx-request") || !!card.querySelector(".htmx-request");
  }

  function busy(card) { // the reviewer is typing in it, has its edit form or a preview open, or is deciding it
    var active = document.activeElement;
    return !!card.querySelector("form.edit, .preview") || inFlight(card) || (card.contains(active) && active.matches("input, textarea, select"));
  }

  // keys.js moves the focus away from a call before it stops being actionable.
  function leaving(card) { card.dispatchEvent(new CustomEvent("reviewhub:leaving", { bubbles: true })); }
  function leaveQueue(card) { leaving(card); card.remove(); }

  // An open copy of a call someone else decided: keep it, show the outcome, disable it.
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
    box.replaceChildren.apply(box, Array.from(fresh.querySelectorAll(".outcome, .output")));
  }

  // Someone else decided a call in this queue: it leaves, unless the reviewer was working on it.
  function decidedElsewhere(card, fresh) {
    if (!busy(card)) { leaveQueue(card); leftNow.add(card.dataset.callId); return; }
    showDecided(card, fresh); // show them why it stops, then let it go
    setTimeout(function () { if (card.isConnected) leaveQueue(card); }, 3 * LEAVE_AFTER);
  }

  // The policy: may the fresh panel of a call replace the one on the page? If not, do what is due instead.
  function mayReplace(card, fresh) {
    if (fresh.dataset.pending === "1") return !gone.has(roundOf(fresh)) && !busy(card) && !card.classList.contains("decided-elsewhere");
    var decidedHere = card.dataset.pending === "0" || inFlight(card); // the htmx answer shows the outcome
    if (inQueue(card)) {
      if (!decidedHere) decidedElsewhere(card, fresh);
      return false;
    }
    if ((decidedHere || fresh.dataset.decidedByYou === "1") && !card.classList.contains("decided-elsewhere")) return true;
    showDecided(card, fresh);
    return false;
  }

  // A panel pushed or re-read lands in #live-queue: put it where this page shows that call, if anywhere.
  function land(detail) {
    var fresh = detail.fragment.firstElementChild, card = document.getElementById(fresh.id);
    var pending = fresh.dataset.pending === "1";
    detail.shouldSwap = false;
    if (!pending) { gone.add(roundOf(fresh)); announced.add(fresh.dataset.callId); }
    if (card) {
      if (mayReplace(card, fresh)) htmx.swap(card, fresh.outerHTML, { swapStyle: "outerHTML" });
    } else if (pending && !gone.has(roundOf(fresh)) && queue()) {
      detail.target = queue();
      detail.shouldSwap = true;
    }
  }

  // The queue's re-read lists the pending calls: cards there before it was sent that it does not list were decided.
  function prune(listed) {
    var ids = listed.dataset.calls.split(" ");
    rereadFrom.forEach(function (card) {
      if (card.isConnected && card.dataset.pending === "1" && ids.indexOf(card.dataset.callId) < 0) {
        gone.add(roundOf(card));
        leaveQueue(card);
      }
    });
    rereadFrom = [];
  }

  // A call you decided shows you the outcome, then leaves the queue; you go on to the next.
  function decidedByYou(card) {
    leaving(card);
    setTimeout(function () { var now = document.getElementById(card.id); if (now && inQueue(now)) leaveQueue(now); }, LEAVE_AFTER);
  }

  // --- telling the reviewer ---------------------------------------------------------

  function syncTitle() {
    var badge = document.getElementById("queue-count");
    if (!badge) return;
    var count = parseInt(badge.dataset.count || "0", 10);
    document.title = (count > 0 ? "(" + count + ") " : "") + baseTitle;
  }

  function notify(note) {
    if (document.visibilityState !== "hidden" || !("Notification" in window) || Notification.permission !== "granted") return;
    if (note.dataset.notify === "0") return; // the reviewer turned browser notifications off for this tool or group
    var id = note.dataset.callId;
    var shown = new Notification("New call to review", { body: note.querySelector(".what").textContent, tag: "call-" + id });
    shown.onclick = function () {
      window.focus();
      var card = document.getElementById("call-" + id);
      if (card) card.focus(); else location.href = note.href;
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

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.elt.id === "queue-reread") rereadFrom = Array.from(document.querySelectorAll('#queue article.call[data-pending="1"]'));
  });

  document.addEventListener("htmx:load", function (event) {
    var el = event.detail.elt;
    if (el.id === "queue-count") syncTitle();
    else if (el.id === "queue-pending") prune(el);
    else if (el.matches(".toast")) setTimeout(function () { el.remove(); }, 6000);
    else if (el.matches('article.call[data-pending="0"]')) { gone.add(roundOf(el)); if (inQueue(el)) decidedByYou(el); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("article.call").forEach(function (card) { announced.add(card.dataset.callId); });
    initNotifications();
  });
})();
