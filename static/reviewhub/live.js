// Live updates: the server pushes re-rendered partials; the database stays the truth.
// On every (re)connect the page re-reads the queue or run from the server.
(function () {
  "use strict";

  function wsUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  function setCount(count) {
    var badge = document.getElementById("queue-count");
    if (badge) { badge.textContent = count; badge.dataset.count = count; }
    var base = document.body.dataset.title || "ReviewHub";
    document.title = (count > 0 ? "(" + count + ") " : "") + base;
  }

  function toast(text) {
    var box = document.getElementById("toasts");
    if (!box) return;
    var el = document.createElement("div");
    el.className = "toast";
    el.textContent = text;
    box.appendChild(el);
    setTimeout(function () { el.remove(); }, 5000);
  }

  function connect(path, onMessage, onOpen, status) {
    var delay = 500, pollTimer = null;
    function open() {
      var socket = new WebSocket(wsUrl(path));
      socket.onopen = function () {
        delay = 500;
        if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
        if (status) status.textContent = "live";
        onOpen();
      };
      socket.onmessage = function (e) { onMessage(JSON.parse(e.data)); };
      socket.onclose = function () {
        if (status) status.textContent = "reconnecting…";
        if (!pollTimer) pollTimer = setInterval(onOpen, 10000);  // fall back to polling
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
      window.reviewhubSocket = socket;
    }
    open();
  }

  function initQueue(container) {
    var status = document.getElementById("live-status");
    var first = true;
    connect("/ws/queue/", function (msg) {
      if (msg.type !== "call") return;
      setCount(msg.count);
      var existing = document.getElementById("call-" + msg.id);
      var tpl = document.createElement("template");
      tpl.innerHTML = msg.html.trim();
      var fresh = tpl.content.firstElementChild;
      if (msg.pending) {
        if (!existing && container.hasAttribute("id") && container.id === "queue") {
          var empty = document.getElementById("queue-empty");
          if (empty) empty.remove();
          container.appendChild(fresh);
          htmx.process(fresh);
          toast("New: " + msg.description);
        }
        return;
      }
      if (existing) {
        existing.replaceWith(fresh);
        htmx.process(fresh);
        fresh.classList.add("decided-elsewhere");
        fresh.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        if (container.id === "queue") setTimeout(function () { fresh.remove(); }, 1500);
      }
    }, function () {
      if (first) { first = false; return; }
      htmx.trigger(document.body, "queueRefresh");
    }, status);
  }

  function initRun(container) {
    connect("/ws/runs/" + container.dataset.liveRun + "/", function (msg) {
      if (msg.type === "run") { container.innerHTML = msg.html; htmx.process(container); }
    }, function () {
      // Re-read on every open, the first too: the run may have changed between the page and the socket.
      htmx.trigger(document.body, "runRefresh");
    }, null);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var queue = document.querySelector("[data-live-queue]");
    if (queue) initQueue(queue);
    var run = document.querySelector("[data-live-run]");
    if (run) initRun(run);
    document.body.addEventListener("queueChanged", function () {
      var badge = document.getElementById("queue-count");
      if (badge) setCount(Math.max(0, parseInt(badge.dataset.count || "0", 10) - 1));
    });
  });
})();
