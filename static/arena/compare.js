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

  // Live, until each answer's saved figures replace them: the time since this page began
  // watching, when its first text came, and its length so far (about 4 characters a token).
  var began = performance.now();
  var live = {};
  var ticker = setInterval(function () {
    Object.keys(live).forEach(function (slot) {
      if (live[slot].done) return;
      pane(slot).querySelector(".total").textContent = ms(performance.now() - began) + "…";
    });
  }, 200);
  Array.prototype.forEach.call(root.querySelectorAll(".pane"), function (el) {
    if (el.dataset.status === "pending" || el.dataset.status === "running") live[el.dataset.slot] = {};
  });

  var source = new EventSource(root.dataset.events);
  source.addEventListener("delta", function (e) {
    var d = JSON.parse(e.data);
    var state = live[d.slot] || (live[d.slot] = {});
    var el = pane(d.slot);
    if (state.first === undefined) {
      state.first = performance.now() - began;
      el.querySelector(".ttft").textContent = "≈" + ms(state.first);
    }
    texts[d.slot] = (texts[d.slot] || "") + d.text;
    el.querySelector(".tokens").textContent = "≈" + Math.round(texts[d.slot].length / 4) + " so far";
    render(d.slot);
  });
  source.addEventListener("answer", function (e) {
    var a = JSON.parse(e.data);
    (live[a.slot] || (live[a.slot] = {})).done = true;
    answer(a);
  });
  source.addEventListener("run", function () {
    source.close();
    clearInterval(ticker);
    window.location.reload(); // the saved run, with the verdict and every judge call
  });
})();
