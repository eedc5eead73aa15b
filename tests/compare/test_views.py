"""Compare mode's pages: who may use them, the form's refusals, a run from the form to its
page, its live events, exports and the history."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from arena.catalog.models import ModelEntry
from arena.compare.models import CompareRun
from tests.helpers import make_judge, make_two_models

pytestmark = pytest.mark.usefixtures("generation")


@pytest.fixture
def contestants():
    zq, ol = make_two_models()
    judge = make_judge()
    return zq, ol, judge


def wait_ended(run_id) -> CompareRun:
    deadline = time.monotonic() + 30
    while (run := CompareRun.objects.get(pk=run_id)).status not in ("done", "failed"):
        assert time.monotonic() < deadline, f"run still {run.status}"
        time.sleep(0.05)
    return run


def test_compare_mode_is_for_staff_only_by_default(alice, contestants):
    client = Client()
    client.force_login(alice)
    assert client.get(reverse("compare")).status_code == 403


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
