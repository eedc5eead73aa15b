// A compare run's page: every pane fills as its model's text arrives (no pacing: this mode is
// not blind), then shows what was saved (timings, tokens, cost, any error), then the verdict.
(function () {
  "use strict";
  var root = document.getElementById("compare-run");
  if (!root) return;
  var texts = {};

  function pane(slot) { return document.getElementById("slot-" + slot); }

  function render(slot) {
    pane(slot).querySelector(".bot-msg").innerHTML = window.ArenaMarkdown.render(texts[slot] || "");
  }

  Array.prototype.forEach.call(root.querySelectorAll(".pane"), function (el) {
    texts[el.dataset.slot] = el.querySelector(".bot-msg").dataset.text || "";
    render(el.dataset.slot);
  });

  function ms(value) { return value === null || value === undefined ? "–" : Math.round(value) + " ms"; }

  function answer(a) {
    var el = pane(a.slot);
    texts[a.slot] = a.text;  // what was saved: the whole text, even if a piece was missed
    render(a.slot);
    el.dataset.status = a.status;
    el.querySelector(".ttft").textContent = ms(a.ttft_ms);
    el.querySelector(".total").textContent = ms(a.total_ms);
    el.querySelector(".tokens").textContent =
      (a.output_tokens === null ? "–" : a.output_tokens) + (a.tokens_estimated ? " (estimated)" : "");
    el.querySelector(".cost").textContent = a.cost;
    el.querySelector(".finish").textContent = a.finish_reason || "–";
    var error = el.querySelector(".error");
    error.textContent = a.error ? a.error + (a.status === "partial" ? " (partial text kept)" : "") : "";
    error.hidden = !a.error;
  }

  var ended = { done: 1, failed: 1, cancelled: 1 };
  if (ended[root.dataset.status]) return;
  var source = new EventSource(root.dataset.events);
  source.addEventListener("delta", function (e) {
    var d = JSON.parse(e.data);
    texts[d.slot] = (texts[d.slot] || "") + d.text;
    render(d.slot);
  });
  source.addEventListener("answer", function (e) { answer(JSON.parse(e.data)); });
  source.addEventListener("run", function () {
    source.close();
    window.location.reload(); // the saved run, with the verdict and every judge call
  });
})();
