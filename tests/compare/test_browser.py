"""A real browser: a four-model compare run with the judge, one model failing mid-stream."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from arena.compare.models import CompareRun
from tests.helpers import make_judge, make_model, make_two_models, make_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]


def test_a_four_model_run_streams_judges_and_shows_the_failing_pane(asgi_server, browser_page):
    zq, ol = make_two_models(tokens_per_s=40)
    steady = make_model("Steady Otter", "so-1", vendor="Otters", tokens_per_s=40)
    broken = make_model(
        "Broken Heron", "bh-1", vendor="Herons", misbehaviour="error_midstream", answer_tokens=60
    )
    make_judge()
    lead = make_user("lead@example.com", is_staff=True)
    lead.user_permissions.add(Permission.objects.get(codename="use_compare"))
    page = browser_page
    sign_in(page, asgi_server, "lead@example.com")
    page.goto(asgi_server + "/compare/")
    page.fill("#prompt", "Explain the CAP theorem in three sentences.")
    for model in (zq, ol, steady, broken):
        page.check(f"input[name=models][value='{model.pk}']")
    page.select_option("#judge", label="Mock Judge")
    page.click("#run")
    page.wait_for_selector("#compare-run")
    page.wait_for_selector("#verdict:not([hidden])", timeout=60_000)
    run = CompareRun.objects.get()
    assert run.status == "done"
    panes = {
        page.inner_text(f"#slot-{a.slot} h2").split(" judged as")[0]: a
        for a in run.answers.select_related("model")
    }
    assert set(panes) == {"Zephyr Quill", "Orchid Lantern", "Steady Otter", "Broken Heron"}
    heron = page.locator(f"#slot-{panes['Broken Heron'].slot}")
    assert "partial text kept" in heron.locator(".error").inner_text()
    assert heron.locator(".bot-msg").inner_text().strip()  # the text that came is shown
    assert "not judged: the answer is partial" in heron.locator(".judged").inner_text()
    for name in ("Zephyr Quill", "Orchid Lantern", "Steady Otter"):
        pane = page.locator(f"#slot-{panes[name].slot}")
        assert pane.locator(".ttft").inner_text().endswith("ms")
        assert "example pricing (mock)" in pane.locator(".cost").inner_text()
        assert "judge's score" in pane.locator(".judged").inner_text()
    assert "mock scores (deterministic, not a real judge)" in page.inner_text("#verdict")
    assert page.inner_text("#winner").strip()
