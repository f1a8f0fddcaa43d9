// A call's card, for the decision's trail and the high-impact gate:
// - whether the card's facts were in view before deciding: each form sent from the card says so (facts_seen=1/0,
//   recorded in the decision's "shown" record: approvals/services/shown.py);
// - high-impact cards (approvals/partials/high_impact.html): Approve is enabled once the card has been shown for
//   its data-dwell seconds, and the countdown beside it says how long. The server checks the same (friction.py).
(function () {
  "use strict";

  var seen = typeof IntersectionObserver === "function" && new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      var card = entry.target.closest("article.call");
      if (entry.isIntersecting && card) card.dataset.factsSeen = "1";
    });
  }, { threshold: 0.6 });

  function watchFacts(root) {
    if (seen && root && root.querySelectorAll) root.querySelectorAll("article.call .facts").forEach(function (facts) {
      seen.observe(facts);
    });
  }

  document.addEventListener("submit", function (event) {
    var card = event.target.closest && event.target.closest("article.call");
    if (!card || !seen) return;
    var input = event.target.querySelector('input[name="facts_seen"]');
    if (!input) { input = document.createElement("input"); input.type = "hidden"; input.name = "facts_seen"; event.target.appendChild(input); }
    input.value = card.dataset.factsSeen ? "1" : "0";
  }, true);

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

  document.addEventListener("DOMContentLoaded", function () { armWithin(document); watchFacts(document); });
  document.addEventListener("htmx:load", function (event) { armWithin(event.target); watchFacts(event.target); });
})();
