// High-impact cards (approvals/partials/high_impact.html): Approve is enabled once the card has been shown for its
// data-dwell seconds, and the countdown beside it says how long. The server checks the same time (friction.py).
(function () {
  "use strict";

  function arm(button) {
    if (button.dataset.armed) return;
    button.dataset.armed = "1";
    var left = parseInt(button.dataset.dwell, 10) || 0;
    var label = button.nextElementSibling;
    function tick() {
      if (!button.isConnected) return;
      if (left <= 0) {
        button.disabled = false;
        if (label) label.textContent = "";
        return;
      }
      if (label) label.textContent = "enabled in " + left + " s";
      left -= 1;
      setTimeout(tick, 1000);
    }
    tick();
  }

  function armWithin(root) {
    if (root && root.querySelectorAll) root.querySelectorAll("button[data-dwell]").forEach(arm);
  }

  document.addEventListener("DOMContentLoaded", function () { armWithin(document); });
  document.addEventListener("htmx:load", function (event) { armWithin(event.target); });
})();
