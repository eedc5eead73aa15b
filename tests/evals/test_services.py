"""Evaluation runs through the real HTTP path: mock contestants of known strength, a mock
judge that prefers stronger answers and (when told) whichever it sees first."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from arena.catalog.models import ModelEntry
from arena.devtools.mock_server import MockServer
from arena.evals import running, selectors, services
from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict, EvalWork

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one
PROMPTS = [(f"Question {i}: how do tides work?", "science") for i in range(30)]


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def contestant(server, name: str, strength: float, *, vendor: str = "") -> ModelEntry:
    model_id = name.lower().replace(" ", "-")
    server.models[model_id] = {"answer_tokens": 20, "prefix": f"⟦q={strength}⟧ "}
    return ModelEntry.objects.create(
        public_name=name,
        vendor=vendor,
        model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": server.url},
        supported_params=["temperature", "top_p", "max_tokens"],
    )


def judge_of(server, **mock) -> ModelEntry:
    server.models["judge-1"] = {"judge": True, **mock}
    return ModelEntry.objects.create(
        public_name="Pair Judge",
        vendor="judgevendor",
        model_id="judge-1",
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": server.url},
        active=False,
    )


def setup(server, staff, *, prompts=PROMPTS, judge=None, **run) -> EvalRun:
    models = [
        contestant(server, "Strong", 2.0),
        contestant(server, "Middling", 0.7),
        contestant(server, "Weak", -1.0),
    ]
    base = contestant(server, "Baseline", 0.0)
    return services.eval_create(
        user=staff,
        name="tides",
        prompts=prompts,
        model_ids=[m.pk for m in models],
        baseline_id=base.pk,
        judge_id=(judge or judge_of(server, judge_position_bias=0.2)).pk,
        **run,
    )


async def test_a_run_recovers_the_true_order_and_measures_the_judges_position_bias(server, staff):
    run = await database_sync_to_async(setup)(server, staff)
    done = await running.eval_execute(run.pk)
    assert done.status == "done"
    result = await database_sync_to_async(selectors.judge_board)(run_id=run.pk)
    ranked = [r.model for r in sorted(result.board.rows, key=lambda r: -r.score)]
    assert ranked == ["Strong", "Middling", "Baseline", "Weak"]
    assert result.win_rate["Strong"] > result.win_rate["Middling"] > result.win_rate["Weak"]
    assert result.pairs == 30 * 3 and 0 < result.position_bias < 1 and result.missing == 0
    assert await database_sync_to_async(EvalAnswer.objects.count)() == 30 * 4
    assert await database_sync_to_async(EvalVerdict.objects.count)() == 30 * 3 * 2


async def test_the_budget_stops_the_run_and_says_so(server, staff):
    run = await database_sync_to_async(setup)(server, staff, max_judge_calls=10)
    done = await running.eval_execute(run.pk)
    assert done.status == "budget" and "judge calls of 10" in done.note
    made = await database_sync_to_async(EvalVerdict.objects.count)()
    assert made < 30 * 3 * 2


async def test_a_run_killed_mid_way_resumes_and_makes_nothing_twice(server, staff):
    run = await database_sync_to_async(setup)(server, staff)
    for model in server.models.values():
        model["ttft_ms"] = 20
    killed = asyncio.ensure_future(running.eval_execute(run.pk))
    while await database_sync_to_async(EvalAnswer.objects.exclude(status="running").count)() < 40:
        await asyncio.sleep(0.01)
    killed.cancel()  # as a worker killed mid-run leaves it: some rows half made
    with pytest.raises(asyncio.CancelledError):
        await killed
    kept = set(
        await database_sync_to_async(
            lambda: list(EvalAnswer.objects.exclude(status="running").values_list("pk", flat=True))
        )()
    )
    done = await running.eval_execute(run.pk)
    assert done.status == "done"
    after = await database_sync_to_async(
        lambda: set(EvalAnswer.objects.values_list("pk", flat=True))
    )()
    assert kept <= after and len(after) == 30 * 4  # what was finished stayed; nothing twice
    assert await database_sync_to_async(EvalVerdict.objects.count)() == 30 * 3 * 2


async def test_verdicts_not_in_the_format_are_retried_then_counted_missing(server, staff):
    judge = await database_sync_to_async(judge_of)(server, misbehaviour="judge_bad_json_always")
    run = await database_sync_to_async(setup)(server, staff, prompts=PROMPTS[:2], judge=judge)
    await running.eval_execute(run.pk)
    verdicts = await database_sync_to_async(lambda: list(EvalVerdict.objects.all()))()
    assert len(verdicts) == 2 * 3 * 2
    assert all(v.level == "" and v.attempts == 3 and v.problem for v in verdicts)
    result = await database_sync_to_async(selectors.judge_board)(run_id=run.pk)
    assert result.missing == 12


async def test_a_run_whose_worker_went_quiet_is_sent_again_and_finishes(server, staff):
    from datetime import timedelta

    from django.utils import timezone

    run = await database_sync_to_async(setup)(server, staff, prompts=PROMPTS[:3])
    # What a killed worker leaves: running, its heartbeat long quiet, nothing made yet.
    long_ago = timezone.now() - timedelta(minutes=5)
    await database_sync_to_async(EvalRun.objects.filter(pk=run.pk).update)(status="running")
    await database_sync_to_async(EvalWork.objects.create)(
        run=run, queue=running.ALL, heartbeat_at=long_ago
    )
    resumed = await database_sync_to_async(services.evals_resume_stale)()
    assert resumed == [run.pk]
    assert await database_sync_to_async(services.evals_resume_stale)() == []  # given time
    await wait_done(run.pk)
    assert await database_sync_to_async(EvalVerdict.objects.count)() == 3 * 3 * 2


async def test_each_pool_queue_makes_its_models_answers_and_the_judges_queue_judges(
    server, staff, settings
):
    run = await database_sync_to_async(setup)(server, staff, prompts=PROMPTS[:4])
    strong = await database_sync_to_async(ModelEntry.objects.get)(public_name="Strong")
    strong.backend_settings = {**strong.backend_settings, "queue": "pool-gpu"}
    await database_sync_to_async(strong.save)()
    for queue in ("pool-gpu", settings.GENERATION_QUEUE):  # as eval_enqueue makes them
        await database_sync_to_async(EvalWork.objects.create)(
            run=run, queue=queue, heartbeat_at=run.created_at
        )
    main = asyncio.ensure_future(running.eval_execute(run.pk, queue=settings.GENERATION_QUEUE))
    others = EvalAnswer.objects.exclude(model=strong).exclude(status="running")
    while await database_sync_to_async(others.count)() < 4 * 3:
        await asyncio.sleep(0.02)
    # Its own models' answers made, the judge's piece waits for the pool's.
    assert not await database_sync_to_async(EvalAnswer.objects.filter(model=strong).exists)()
    assert not main.done()
    pool = await running.eval_execute(run.pk, queue="pool-gpu")
    assert pool.status == "running"  # a pool's piece does not end the run
    done = await main
    assert done.status == "done"
    assert await database_sync_to_async(EvalAnswer.objects.count)() == 4 * 4
    assert await database_sync_to_async(EvalVerdict.objects.filter(done=True).count)() == 4 * 3 * 2


async def wait_done(run_id: int) -> None:
    """The run may go to a Celery worker (CI) or have run already (in process)."""
    for _ in range(1200):
        status = await database_sync_to_async(
            lambda: EvalRun.objects.values_list("status", flat=True).get(pk=run_id)
        )()
        if status == "done":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} still {status}")


async def test_the_admin_shows_progress_and_the_judge_leaderboard(server, staff, admin_client):
    run = await database_sync_to_async(setup)(server, staff, prompts=PROMPTS[:3])
    await running.eval_execute(run.pk)
    page = await database_sync_to_async(admin_client.get)(f"/admin/arena/evalrun/{run.pk}/change/")
    text = page.content.decode()
    assert page.status_code == 200 and "answers 12/12" in text
    assert "opinion, not human votes" in text
    assert "<td>Strong</td>" in text
