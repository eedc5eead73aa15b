"""A real browser: a four-model compare run read as a comparison (side by side at 1280 px, one
per row at 390 px, the summary table, the judge's winner and reasons at each answer, TTFT never
before the first text), then a run cancelled mid-stream that keeps the text that arrived."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from arena.catalog.models import ModelEntry
from arena.compare.models import CompareRun
from tests.helpers import make_judge, make_model, make_two_models, make_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

# Records, from the first paint on, any moment a TTFT cell shows a figure while its pane has
# no text yet: the page must never show one before the first text arrives.
TTFT_WATCH = """
window.__early = [];
document.addEventListener("DOMContentLoaded", function () {
  var table = document.getElementById("summary");
  if (!table) return;
  new MutationObserver(function () {
    table.querySelectorAll("tbody tr").forEach(function (row) {
      var ttft = row.querySelector(".ttft").textContent.trim();
      var text = document.getElementById("slot-" + row.dataset.slot).querySelector(".bot-msg");
      if (ttft !== "–" && !text.textContent.trim()) window.__early.push(row.dataset.slot);
    });
  }).observe(table, { subtree: true, childList: true, characterData: true });
});
"""


def boxes(page):
    return [page.locator(".compare-panes .pane").nth(i).bounding_box() for i in range(4)]


def start_run(page, server: str, models) -> None:
    page.goto(server + "/compare/")
    page.fill("#prompt", "Explain the CAP theorem in three sentences.")
    for model in models:
        page.check(f"input[name=models][value='{model.pk}']")
    page.select_option("#judge", label="Mock Judge")
    page.click("#run")
    page.wait_for_selector("#compare-run")


def test_a_four_model_run_reads_as_a_comparison_and_cancel_keeps_the_text(
    asgi_server, browser_page
):
    zq, ol = make_two_models(tokens_per_s=40)
    steady = make_model("Steady Otter", "so-1", vendor="Otters", tokens_per_s=40)
    late = make_model("Late Finch", "lf-1", vendor="Finches", ttft_ms=1500, tokens_per_s=40)
    models = (zq, ol, steady, late)
    make_judge()
    lead = make_user("lead@example.com", is_staff=True)
    lead.user_permissions.add(Permission.objects.get(codename="use_compare"))
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.add_init_script(TTFT_WATCH)
    sign_in(page, asgi_server, "lead@example.com")
    start_run(page, asgi_server, models)
    page.wait_for_selector("#compare-run[data-status=done]", timeout=60_000)
    assert page.evaluate("window.__early") == []
    run = CompareRun.objects.get()
    # Side by side: four panes of one width in one row, each below the summary table.
    first = boxes(page)
    assert len({round(b["y"]) for b in first}) == 1 and len({round(b["width"]) for b in first}) == 1
    assert first[0]["x"] < first[1]["x"] < first[2]["x"] < first[3]["x"]
    rows = page.locator("#summary tbody tr")
    assert rows.count() == 4
    for i in range(4):
        assert rows.nth(i).locator(".ttft").inner_text().endswith(" ms")
        assert "/ 1" in rows.nth(i).locator(".score").inner_text()
        assert rows.nth(i).locator(".rank").inner_text() in {"1", "2", "3", "4"}
    # The judge's winner is marked on its row and its pane, and each pane has its reasons.
    winner = run.answers.get(label=run.verdict["winner"])
    assert page.locator("#summary tr.winner").get_attribute("data-slot") == str(winner.slot)
    assert page.locator(".pane.winner").get_attribute("id") == f"slot-{winner.slot}"
    for i in range(4):
        reasons = page.locator(f"#slot-{i} .criteria .reason").all_inner_texts()
        assert len(reasons) == 4 and all(r.strip() for r in reasons)
    assert page.locator("#verdict details:not([open])").count() == 1  # the raw log, collapsed
    # On a phone: one pane per row, each as wide as the others.
    page.set_viewport_size({"width": 390, "height": 844})
    narrow = boxes(page)
    assert len({round(b["x"]) for b in narrow}) == 1
    assert narrow[0]["y"] < narrow[1]["y"] < narrow[2]["y"] < narrow[3]["y"]
    page.set_viewport_size({"width": 1280, "height": 900})

    # Cancel mid-stream: the panes keep what arrived, marked cancelled, with no reload.
    ModelEntry.objects.filter(pk__in=[m.pk for m in models]).update(
        backend_settings={"ttft_ms": 0, "tokens_per_s": 4, "answer_tokens": 400}
    )
    start_run(page, asgi_server, models)
    # Locator waits, not a polled script: the page's CSP allows no eval.
    for i in range(len(models)):
        expect(page.locator(".pane .bot-msg").nth(i)).to_have_text(re.compile(r"\S"))
    page.click("#cancel")
    page.wait_for_selector("#compare-run[data-status=cancelled]", timeout=30_000)
    for i in range(4):
        pane = page.locator(f"#slot-{i}")
        assert pane.locator(".bot-msg").inner_text().strip(), i
        assert "partial text kept" in pane.locator(".error").inner_text()
    assert CompareRun.objects.get(pk=page.url.rstrip("/").rsplit("/", 1)[1]).status == "cancelled"
