// Live review. The server pushes hints rendered from the database after each
// commit; the database stays the truth: whenever a socket (re)opens, and every
// few seconds while it cannot, the page re-reads what it shows from the server.
(function () {
  "use strict";

  var RETRY_MAX = 5000;   // ms between reconnection attempts, at most
  var POLL_EVERY = 5000;  // ms between re-reads while there is no socket
  var LEAVE_AFTER = 1500; // ms a call you decided stays in your queue, showing the outcome

  var baseTitle = document.title.replace(/^\(\d+\) /, "");
  var announced = new Set(); // calls this page already showed or announced
  var gone = new Set();      // calls seen leaving the queue: a later "pending" for them is stale

  function wsUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  function parse(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content;
  }

  function fetchFragment(url) {
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.text();
    });
  }

  // --- the count, in the navigation and the tab title ---------------------------

  function setCount(count) {
    var badge = document.getElementById("queue-count");
    if (badge) { badge.textContent = count; badge.dataset.count = count; }
    document.title = (count > 0 ? "(" + count + ") " : "") + baseTitle;
  }

  function syncTitle() {
    var badge = document.getElementById("queue-count");
    if (badge) setCount(parseInt(badge.dataset.count || "0", 10));
  }

  // --- telling the reviewer ---------------------------------------------------------

  function toast(text, href) {
    var box = document.getElementById("toasts");
    if (!box) return;
    var el = document.createElement(href ? "a" : "div");
    el.className = "toast";
    el.textContent = text;
    if (href) el.href = href;
    box.appendChild(el);
    setTimeout(function () { el.remove(); }, 6000);
  }

  function initNotifications() {
    // Permission is asked for once, when the reviewer clicks; never on page load.
    var button = document.getElementById("notify-enable");
    if (!button || !("Notification" in window) || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", function () {
      button.hidden = true;
      Notification.requestPermission();
    });
  }

  function announce(id, description, url) {
    if (announced.has(id)) return;
    announced.add(id);
    toast("New call to review: " + description, url);
    if (document.visibilityState === "hidden" && "Notification" in window && Notification.permission === "granted") {
      var note = new Notification("New call to review", { body: description, tag: "call-" + id });
      note.onclick = function () {
        window.focus();
        var card = document.getElementById("call-" + id);
        if (card) card.focus(); else location.href = url;
        note.close();
      };
    }
  }

  // --- calls ------------------------------------------------------------------------

  function inQueue(el) {
    var list = document.getElementById("queue");
    return !!(list && list.contains(el));
  }

  // keys.js moves the focus away from a call before it stops being actionable.
  function leaving(card) {
    card.dispatchEvent(new CustomEvent("reviewhub:leaving", { bubbles: true }));
  }

  function leaveQueue(card) {
    leaving(card);
    card.remove();
    var list = document.getElementById("queue");
    if (list && !list.querySelector("article.call")) resyncQueue(); // the server renders the empty queue
  }

  function inFlight(card) { // a request from this panel is under way; htmx will swap its answer in
    return !!(card.classList.contains("htmx-request") || card.querySelector(".htmx-request"));
  }

  function busy(card) { // the reviewer is typing in it, has its edit form or a preview open, or is deciding it
    var active = document.activeElement;
    return !!(card.querySelector("form.edit, .preview") || inFlight(card) || (card.contains(active) && active.matches("input, textarea, select")));
  }

  function swap(existing, fresh) {
    existing.replaceWith(fresh);
    htmx.process(fresh);
  }

  // An open copy of a call someone else decided: keep it, show the outcome, disable it.
  function showDecided(existing, fresh) {
    if (!existing.classList.contains("decided-elsewhere")) {
      leaving(existing);
      existing.classList.add("decided-elsewhere");
      existing.dataset.pending = "0";
      existing.querySelectorAll("button, input, textarea, select").forEach(function (el) { el.disabled = true; });
      existing.querySelectorAll("a[data-key]").forEach(function (a) { a.setAttribute("aria-disabled", "true"); a.tabIndex = -1; });
    }
    var box = existing.querySelector(".live-outcome");
    if (!box) {
      box = document.createElement("div");
      box.className = "live-outcome";
      box.setAttribute("role", "status");
      existing.querySelector(".description").after(box);
    }
    box.replaceChildren.apply(box, Array.from(fresh.querySelectorAll(".outcome, .output")));
  }

  // A panel from a push or a re-read: show it wherever this page shows that call.
  function applyPanel(fresh, msg) {
    var id = fresh.dataset.callId;
    var existing = document.getElementById("call-" + id);
    var list = document.getElementById("queue");
    var description = (fresh.querySelector(".description") || fresh).textContent.trim();
    if (fresh.dataset.pending === "1") {
      if (gone.has(id)) return;
      if (existing) {
        if (!busy(existing) && !existing.classList.contains("decided-elsewhere")) swap(existing, fresh);
      } else if (list) {
        var empty = document.getElementById("queue-empty");
        if (empty) empty.remove();
        list.appendChild(fresh);
        htmx.process(fresh);
      }
      if (fresh.dataset.canDecide === "1") announce(id, description, msg.url || "");
      return;
    }
    gone.add(id);
    if (!existing) return;
    // Decided on this page: the htmx response shows (or is about to show) the outcome.
    var decidedHere = existing.dataset.pending === "0" || inFlight(existing);
    if (inQueue(existing)) {
      if (decidedHere) return; // yours: it shows the outcome, then leaves
      if (busy(existing)) { // they were typing in it: show them why it stops, then let it go
        showDecided(existing, fresh);
        setTimeout(function () { if (existing.isConnected) leaveQueue(existing); }, 3 * LEAVE_AFTER);
        return;
      }
      leaveQueue(existing);
      toast((msg.outcome || "Decided") + ": " + description);
    } else if (existing.classList.contains("decided-elsewhere") || !(decidedHere || msg.mine)) {
      showDecided(existing, fresh);
    } else {
      swap(existing, fresh);
    }
  }

  function onCallMessage(msg) {
    if (typeof msg.count === "number") setCount(msg.count);
    var fresh = parse(msg.html).firstElementChild;
    if (fresh) applyPanel(fresh, msg);
  }

  // --- re-reading from the database ---------------------------------------------------

  function resyncQueue() {
    var list = document.getElementById("queue");
    if (!list || !list.dataset.liveList) return;
    fetchFragment(list.dataset.liveList).then(function (html) {
      var fresh = parse(html);
      var ids = new Set();
      Array.from(fresh.querySelectorAll("article.call")).forEach(function (card) {
        ids.add(card.dataset.callId);
        applyPanel(card, { url: card.querySelector(".description a") ? card.querySelector(".description a").getAttribute("href") : "" });
      });
      list.querySelectorAll('article.call[data-pending="1"]').forEach(function (card) {
        if (!ids.has(card.dataset.callId)) { gone.add(card.dataset.callId); leaveQueue(card); }
      });
      var emptyState = fresh.querySelector("#queue-empty");
      if (emptyState && !list.querySelector("article.call") && !document.getElementById("queue-empty")) list.appendChild(emptyState);
    }).catch(function () {});
  }

  function resyncCallPage() {
    var page = document.getElementById("call-page");
    if (!page) return;
    fetchFragment(page.dataset.liveCall).then(function (html) {
      var fresh = parse(html).firstElementChild;
      if (fresh) applyPanel(fresh, {});
    }).catch(function () {});
  }

  function resync() {
    htmx.trigger(document.body, "queueResync"); // the count badge re-reads itself
    resyncQueue();
    resyncCallPage();
  }

  // --- sockets --------------------------------------------------------------------------

  var STATUS_TEXT = { live: "live", reconnecting: "reconnecting…", polling: "polling" };

  function setStatus(state) {
    document.body.dataset.live = state;
    var status = document.getElementById("live-status");
    if (status) status.textContent = STATUS_TEXT[state];
  }

  // Open a socket and keep it open. On every open, re-read; while closed, poll.
  function connect(path, onMessage, reread, showStatus) {
    var delay = 500, pollTimer = null;
    function poll() {
      if (!pollTimer) pollTimer = setInterval(reread, POLL_EVERY);
    }
    if (!("WebSocket" in window)) { if (showStatus) setStatus("polling"); poll(); return; }
    function open() {
      var socket = new WebSocket(wsUrl(path));
      socket.onopen = function () {
        delay = 500;
        if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
        if (showStatus) setStatus("live");
        reread(); // anything that changed while we were not listening
      };
      socket.onmessage = function (event) { onMessage(JSON.parse(event.data)); };
      socket.onclose = function () {
        if (showStatus) setStatus("reconnecting");
        poll();
        setTimeout(open, delay * (0.75 + Math.random() / 2));
        delay = Math.min(delay * 2, RETRY_MAX);
      };
    }
    open();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("article.call").forEach(function (card) { announced.add(card.dataset.callId); });
    syncTitle();
    initNotifications();
    document.body.addEventListener("htmx:load", function (event) {
      var card = event.detail.elt;
      if (card.id === "queue-count") syncTitle();
      // A call you decided shows you the outcome, then leaves the queue; you go on to the next.
      if (card.matches && card.matches('article.call[data-pending="0"]') && inQueue(card)) {
        gone.add(card.dataset.callId);
        leaving(card);
        setTimeout(function () { var now = document.getElementById(card.id); if (now && inQueue(now)) leaveQueue(now); }, LEAVE_AFTER);
      }
    });
    if (document.body.hasAttribute("data-reviewer")) {
      connect("/ws/queue/", function (msg) { if (msg.type === "call") onCallMessage(msg); }, resync, true);
    }
    var run = document.querySelector("[data-live-run]");
    if (run) {
      var changed = function () { htmx.trigger(document.getElementById("run-body"), "runChanged"); };
      connect("/ws/runs/" + run.dataset.liveRun + "/", changed, changed, false);
    }
  });
})();
