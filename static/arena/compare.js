// A compare run's page: every pane fills as its model's text arrives (no pacing: this mode is
// not blind), its summary row shows the live figures whose meaning never changes (elapsed time
// and tokens so far; TTFT only once the first text has arrived), then what was saved (timings,
// tokens, cost, any error), then the verdict. Cancel keeps the text that has arrived.
(function () {
  "use strict";
  var texts = {};

  function root() { return document.getElementById("compare-run"); }
  function pane(slot) { return document.getElementById("slot-" + slot); }
  function row(slot) { return document.getElementById("row-" + slot); }
  function cell(slot, name) { return row(slot).querySelector("." + name); }

  function render(slot, follow) {
    var box = pane(slot).querySelector(".bot-msg");
    // New text is followed only while the reader is at the bottom, as the battle page does.
    var following = follow && box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    box.innerHTML = window.ArenaMarkdown.render(texts[slot] || "");
    if (following) box.scrollTop = box.scrollHeight;
  }

  function renderAll() {
    Array.prototype.forEach.call(root().querySelectorAll(".pane"), function (el) {
      texts[el.dataset.slot] = el.querySelector(".bot-msg").dataset.text || "";
      render(el.dataset.slot);
    });
  }

  function ms(value) { return value === null || value === undefined ? "–" : Math.round(value) + " ms"; }

  function answer(a) {
    // What was saved: the whole text, unless nothing was saved where text had arrived.
    if (a.text || !texts[a.slot]) texts[a.slot] = a.text;
    render(a.slot);
    var el = pane(a.slot);
    el.dataset.status = a.status;
    cell(a.slot, "ttft").textContent = ms(a.ttft_ms);
    cell(a.slot, "total").textContent = ms(a.total_ms);
    cell(a.slot, "tokens").textContent =
      (a.output_tokens === null ? "–" : a.output_tokens) + (a.tokens_estimated ? " (estimated)" : "");
    cell(a.slot, "cost").textContent = a.cost;
    cell(a.slot, "finish").textContent = a.finish_reason || "–";
    var error = el.querySelector(".error");
    error.textContent = a.error ? a.error + (a.status === "partial" ? " (partial text kept)" : "") : "";
    error.hidden = !a.error;
    var state = el.querySelector(".state");
    if (state.dataset.cancelled !== "1") state.textContent = "";
  }

  // The saved run, with the verdict, the judge's reasons and every judge call, in place of the
  // live one (no reload: nothing on the page goes blank in between).
  function swap() {
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("compare-run");
        if (!fresh) throw new Error("no run on the page");
        root().replaceWith(document.importNode(fresh, true));
        renderAll();
      })
      .catch(function () { window.location.reload(); });
  }

  renderAll();
  var ended = { done: 1, failed: 1, cancelled: 1 };
  if (ended[root().dataset.status]) return;

  var live = {};
  Array.prototype.forEach.call(root().querySelectorAll(".pane"), function (el) {
    if (el.dataset.status === "pending" || el.dataset.status === "running") live[el.dataset.slot] = {};
  });
  // One clock for the run, from when it was created (the server's count at page load).
  var began = performance.now() - (parseFloat(root().dataset.elapsedMs) || 0);
  var elapsed = document.getElementById("elapsed");
  function tick() { elapsed.textContent = "· " + ((performance.now() - began) / 1000).toFixed(1) + " s elapsed"; }
  tick();
  var ticker = setInterval(tick, 200);
  Object.keys(live).forEach(function (slot) { cell(slot, "total").textContent = "streaming…"; });

  var source = new EventSource(root().dataset.events);
  source.addEventListener("delta", function (e) {
    var d = JSON.parse(e.data);
    if (!d.text) return;
    var state = live[d.slot] || (live[d.slot] = {});
    if (state.done) return;
    texts[d.slot] = (texts[d.slot] || "") + d.text;
    cell(d.slot, "tokens").textContent = "≈" + Math.round(texts[d.slot].length / 4) + " so far";
    render(d.slot, true);
    if (!state.first && pane(d.slot).querySelector(".bot-msg").textContent.trim()) {
      state.first = true;
      showTtft(d.slot);
    }
  });
  // TTFT is measured where the request is made, and kept: the page shows that figure (once
  // the worker has it), never an estimate of its own, and nothing before the first text.
  function showTtft(slot) {
    var state = live[slot], ttft = cell(slot, "ttft");
    if (!state.first || state.done) return;
    ttft.textContent = state.ttft === undefined ? "arrived" : ms(state.ttft);
    ttft.title = state.ttft === undefined ? "The measured time to first token shows when it is kept." : "";
  }
  source.addEventListener("first", function (e) {
    var d = JSON.parse(e.data);
    (live[d.slot] || (live[d.slot] = {})).ttft = d.ttft_ms;
    showTtft(d.slot);
  });
  source.addEventListener("answer", function (e) {
    var a = JSON.parse(e.data);
    (live[a.slot] || (live[a.slot] = {})).done = true;
    answer(a);
  });
  source.addEventListener("run", function (e) {
    source.close();
    clearInterval(ticker);
    var d = JSON.parse(e.data);
    document.getElementById("run-status").textContent = d.status.charAt(0).toUpperCase() + d.status.slice(1);
    swap();
  });

  // Cancel without leaving the page: what has arrived stays, marked cancelled, and the saved
  // answers (with that text) and the run follow through the events.
  var form = document.getElementById("cancel-form");
  if (form) form.addEventListener("submit", function (e) {
    e.preventDefault();
    var button = form.querySelector("button");
    button.disabled = true;
    fetch(form.action, {
      method: "POST", credentials: "same-origin", body: new FormData(form),
      headers: { "Accept": "application/json", "X-CSRFToken": form.elements.csrfmiddlewaretoken.value },
    })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (d) {
        if (!d.cancelled) return;
        document.getElementById("run-status").textContent = "Cancelled";
        Object.keys(live).forEach(function (slot) {
          if (live[slot].done) return;
          var state = pane(slot).querySelector(".state");
          state.dataset.cancelled = "1";
          state.textContent = "cancelled: the text that arrived is kept";
          pane(slot).dataset.status = "cancelled";
          cell(slot, "total").textContent = "cancelled";
        });
      })
      .catch(function () { button.disabled = false; });
  });
})();
