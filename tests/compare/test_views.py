"""Compare mode's pages: who may use them, the form's refusals, a run from the form to its
page, its live events, exports and the history."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.compare.models import CompareAnswer, CompareRun
from tests.helpers import make_judge, make_two_models

pytestmark = pytest.mark.usefixtures("generation")


@pytest.fixture
def contestants():
    zq, ol = make_two_models()
    judge = make_judge()
    return zq, ol, judge


def saved_run(zq, ol, **run_fields) -> CompareRun:
    """A judged run of two answers, as the worker and the judge leave one: B won."""
    from tests.helpers import make_user

    owner = User.objects.filter(is_superuser=True).first() or make_user("own@example.com")
    rubric = [
        {"name": "correctness", "weight": 0.6, "low": "wrong", "high": "right"},
        {"name": "clarity", "weight": 0.4, "low": "muddled", "high": "clear"},
    ]
    fields = {
        "status": CompareRun.Status.DONE,
        "judge": ModelEntry.objects.get(public_name="Mock Judge"),
        "rubric": rubric,
        "verdict": {"overall": {"A": 0.25, "B": 0.9}, "winner": "B", "missing": []},
        **run_fields,
    }
    run = CompareRun.objects.create(
        user=owner, prompt="Explain CAP.", seed=1, deadline_s=60, **fields
    )
    CompareAnswer.objects.create(
        run=run, slot=0, label="A", model=zq, status="ok", text="Zephyr's answer.",
        ttft_ms=302.46, total_ms=1200.4, output_tokens=40, finish_reason="stop",
        judged={"correctness": {"score": 2, "reason": "<script>alert(1)</script> wrong"},
                "clarity": {"score": 2, "reason": "muddled"}},
    )  # fmt: skip
    CompareAnswer.objects.create(
        run=run, slot=1, label="B", model=ol, status="ok", text="Orchid's answer.",
        judged={"correctness": {"score": 5, "reason": "all right"},
                "clarity": {"score": 4, "reason": "clear enough"}},
    )  # fmt: skip
    return run


def test_the_run_page_compares_side_by_side_with_the_judges_reasons_at_each_answer(
    admin_client, contestants
):
    zq, ol, judge = contestants
    run = saved_run(zq, ol)
    page = admin_client.get(reverse("compare-run", args=[run.pk])).content.decode()
    assert 'class="compare-panes" style="--cols: 2"' in page
    # The summary: one row per model, the score with its scale, the rank; the winner marked.
    row = page.split('id="row-1"')[1].split("</tr>")[0]
    assert "★ judge's pick" in row and "0.90 <small>/ 1</small>" in row
    assert '<td class="rank" data-label="Rank">1</td>' in row
    assert '<td class="ttft" data-label="TTFT">302 ms</td>' in page.split('id="row-0"')[1]
    assert "(0–1, weighted)" in page and "0 (all 1s) to 1 (all 5s)" in page
    # Each pane: its scores 1-5 and the judge's reason for each, escaped.
    pane = page.split('id="slot-0"')[1].split("</article>")[0]
    assert "correctness <small>60%</small>" in pane and "2/5" in pane
    assert "&lt;script&gt;alert(1)&lt;/script&gt; wrong" in pane and "<script>alert" not in page
    assert 'class="pane winner"' in page.split('id="slot-1"')[0].rsplit("<article", 1)[1]
    assert "Every judge request and reply (for audit)" in page


def test_an_answer_not_judged_says_why_and_a_cancelled_one_keeps_what_arrived(
    admin_client, contestants
):
    from asgiref.sync import async_to_sync

    from arena.compare.services import stream_key
    from arena.generation.streams import answer_streams

    zq, ol, judge = contestants
    run = saved_run(zq, ol, verdict={})
    CompareAnswer.objects.filter(run=run, slot=0).update(
        judged={}, not_judged="not judged: same family as judge"
    )
    page = admin_client.get(reverse("compare-run", args=[run.pk])).content.decode()
    assert '<p class="not-judged">not judged: same family as judge</p>' in page
    # Cancelled before the worker saved the answer: the text that arrived is on the page.
    CompareRun.objects.filter(pk=run.pk).update(status=CompareRun.Status.CANCELLED)
    CompareAnswer.objects.filter(run=run, slot=1).update(status="running", text="")
    async_to_sync(answer_streams().append)(stream_key(run_id=run.pk, slot=1), "Words that came")
    page = admin_client.get(reverse("compare-run", args=[run.pk])).content.decode()
    assert 'data-text="Words that came"' in page
    assert "cancelled: the text that arrived is kept" in page


def test_ranks_follow_the_score_with_the_judges_winner_first():
    from arena.compare.selectors import _ranks

    assert _ranks({"A": 0.5, "B": 0.9, "C": 0.5}, "B", []) == {"B": 1, "A": 2, "C": 2}
    # A close call the head-to-head gave to the lower score; a head-to-head tie shares rank 1.
    assert _ranks({"A": 0.8, "B": 0.7, "C": 0.1}, "B", ["B", "B"]) == {"B": 1, "A": 2, "C": 3}
    assert _ranks({"A": 0.8, "B": 0.7, "C": 0.1}, "tie", ["A", "B"]) == {"A": 1, "B": 1, "C": 3}


def wait_ended(run_id) -> CompareRun:
    deadline = time.monotonic() + 30
    while (run := CompareRun.objects.get(pk=run_id)).status not in ("done", "failed"):
        assert time.monotonic() < deadline, f"run still {run.status}"
        time.sleep(0.05)
    return run


def test_a_rater_is_told_what_compare_mode_is_and_who_may_use_it(alice, contestants):
    client = Client()
    client.force_login(alice)
    page = client.get(reverse("compare"))
    body = page.content.decode()
    assert page.status_code == 403 and "sends one prompt to two to eight" in body
    assert "staff accounts an administrator has given the “Can run compare mode”" in body


def test_compares_json_and_events_answer_json_errors_never_a_page(client, alice, contestants):
    zq, ol, judge = contestants
    run = saved_run(zq, ol)
    urls = [
        reverse("compare-events", args=[run.pk]),
        reverse("compare-export", args=[run.pk, "json"]),
    ]
    for url in urls:
        signed_out = client.get(url)
        assert signed_out.status_code == 401 and signed_out.json()["error"] == "sign_in", url
    client.force_login(alice)
    for url in urls:
        refused = client.get(url)
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden", url


def test_the_form_refuses_a_parameter_a_model_does_not_support(admin_client, contestants):
    zq, ol, judge = contestants
    ModelEntry.objects.filter(pk=ol.pk).update(supported_params=["temperature"])
    page = admin_client.post(
        reverse("compare"),
        {"prompt": "Hi?", "models": [zq.pk, ol.pk], "top_p": "0.5", "judge": judge.pk},
    )
    assert page.status_code == 400
    assert "Orchid Lantern does not support &#x27;top_p&#x27;." in page.content.decode()
    assert not CompareRun.objects.exists()


def test_a_run_from_the_form_to_its_page_exports_and_history(admin_client, contestants):
    zq, ol, judge = contestants
    assert "Zephyr Quill" in admin_client.get(reverse("compare")).content.decode()
    posted = admin_client.post(
        reverse("compare"),
        {"prompt": "Explain CAP.", "models": [zq.pk, ol.pk], "judge": judge.pk, "seed": "5"},
    )
    assert posted.status_code == 302
    run = wait_ended(CompareRun.objects.get().pk)
    assert run.status == "done" and run.verdict["winner"]
    page = admin_client.get(reverse("compare-run", args=[run.pk])).content.decode()
    assert "Zephyr Quill" in page and "mock scores (deterministic, not a real judge)" in page
    exported = admin_client.get(reverse("compare-export", args=[run.pk, "json"]))
    assert json.loads(exported.content)["answers"][0]["model"] == "Zephyr Quill"
    assert admin_client.get(reverse("compare-export", args=[run.pk, "csv"])).status_code == 200
    assert (
        "# Compare run"
        in admin_client.get(reverse("compare-export", args=[run.pk, "md"])).content.decode()
    )
    history = admin_client.get(reverse("compare-history")).content.decode()
    assert "Explain CAP." in history
    again = admin_client.get(reverse("compare") + f"?from={run.pk}").content.decode()
    assert "Explain CAP." in again and f'value="{run.pk}"' in again


async def test_the_live_events_end_with_every_answer_and_the_run(async_client, staff, contestants):
    from asgiref.sync import sync_to_async
    from channels.db import database_sync_to_async
    from django.db import connections

    from arena.compare import services

    zq, ol, judge = contestants
    created = await database_sync_to_async(services.compare_start)(
        user=staff, prompt="Explain CAP.", model_ids=[zq.pk, ol.pk], judge_id=judge.pk
    )
    await services.compare_execute(created.pk)
    await async_client.aforce_login(staff)
    response = await async_client.get(reverse("compare-events", args=[created.pk]))
    assert response["Content-Type"] == "text/event-stream"
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    events = [block.split("\n")[0] for block in body.strip().split("\n\n")]
    assert events.count("event: answer") == 2 and events[-1] == "event: run"
    # The stream's database work ran in asgiref's thread: its connection closes there.
    await sync_to_async(connections.close_all)()


async def test_the_events_give_a_kept_time_to_first_token_before_the_answer_ends(
    async_client, staff, contestants, monkeypatch
):
    from asgiref.sync import sync_to_async
    from channels.db import database_sync_to_async
    from django.db import connections

    from arena.compare import views

    monkeypatch.setattr(views, "SAVING_GRACE_S", 0)
    zq, ol, judge = contestants
    run = await database_sync_to_async(saved_run)(zq, ol)
    await database_sync_to_async(CompareAnswer.objects.filter(run=run, slot=1).update)(
        status="running", ttft_ms=415.6
    )
    await async_client.aforce_login(staff)
    response = await async_client.get(reverse("compare-events", args=[run.pk]))
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    events = [block.split("\n") for block in body.strip().split("\n\n")]
    assert [e[0] for e in events] == ["event: answer", "event: first", "event: run"]
    assert json.loads(events[1][1].removeprefix("data: ")) == {"slot": 1, "ttft_ms": 415.6}
    await sync_to_async(connections.close_all)()


def test_a_rubric_edited_in_the_admin_is_checked_and_judges_runs_as_the_default(
    admin_client, staff, contestants
):
    from arena.compare import services
    from arena.compare.models import Rubric

    url = reverse("admin:arena_rubric_add")
    bad = [{"name": "depth", "weight": 0.6, "low": "shallow", "high": "deep"}]
    page = admin_client.post(
        url, {"name": "Depth", "criteria": json.dumps(bad), "is_default": "on"}
    )
    assert page.status_code == 200 and "The weights must sum to 1" in page.content.decode()
    good = [{**bad[0], "weight": 1}]
    page = admin_client.post(
        url, {"name": "Depth", "criteria": json.dumps(good), "is_default": "on"}
    )
    assert page.status_code == 302 and Rubric.objects.get().is_default
    zq, ol, judge = contestants
    run = services.compare_start(user=staff, prompt="Hi?", model_ids=[zq.pk, ol.pk])
    assert [c["name"] for c in run.rubric] == ["depth"]
