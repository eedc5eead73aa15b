"""A run's pieces as leases, and its budgets: a task delivered twice or taken over never makes
anything twice, a piece that keeps failing fails the run, and no budget is passed."""

from __future__ import annotations

import asyncio
import datetime as dt
from datetime import timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from arena.catalog.models import ModelEntry, ModelPrice
from arena.core.errors import ServiceError
from arena.devtools.mock_server import MockServer
from arena.evals import running, services, works
from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict, EvalWork

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one
PROMPTS = [(f"Question {i}: why is the sea salty?", "science") for i in range(6)]


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def model_on(server, name: str, **mock) -> ModelEntry:
    model_id = name.lower().replace(" ", "-")
    server.models[model_id] = {"answer_tokens": 20, **mock}
    return ModelEntry.objects.create(
        public_name=name, vendor=f"{model_id}-vendor", model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE, backend_settings={"base_url": server.url},
        supported_params=["temperature"], active=not mock.get("judge"),
    )  # fmt: skip


def make_run(server, staff, *, judge_mock: dict | None = None, **run) -> EvalRun:
    models = [model_on(server, "Alpha"), model_on(server, "Beta")]
    base = model_on(server, "Base")
    judge = model_on(server, "Judge", judge=True, **(judge_mock or {}))
    return services.eval_create(
        user=staff, name="salt", prompts=PROMPTS, model_ids=[m.pk for m in models],
        baseline_id=base.pk, judge_id=judge.pk, **run,
    )  # fmt: skip


async def test_a_piece_delivered_twice_runs_once(server, staff):
    run = await database_sync_to_async(make_run)(server, staff)
    for model in server.models.values():
        model["ttft_ms"] = 30
    first = asyncio.ensure_future(running.eval_execute(run.pk))
    while not await database_sync_to_async(EvalAnswer.objects.exists)():
        await asyncio.sleep(0.01)
    again = await running.eval_execute(run.pk)  # another worker got the same task
    assert again.status == "running" and not first.done()
    assert (await first).status == "done"
    assert server.requests == 6 * 3 + 6 * 2 * 2  # every answer and verdict asked for once
    assert await database_sync_to_async(EvalAnswer.objects.count)() == 6 * 3


async def test_a_piece_taken_over_by_another_worker_stops(server, staff):
    run = await database_sync_to_async(make_run)(server, staff)
    for model in server.models.values():
        model["ttft_ms"] = 1500  # longer than a heartbeat
    first = asyncio.ensure_future(running.eval_execute(run.pk))
    while not await database_sync_to_async(EvalWork.objects.exists)():
        await asyncio.sleep(0.01)
    # What a second worker does when the first looked dead: it takes the lease.
    await database_sync_to_async(EvalWork.objects.update)(owner="someone-else")
    stopped = await asyncio.wait_for(first, timeout=10)
    assert stopped.status == "running"  # left to the one that holds it now
    assert await database_sync_to_async(EvalVerdict.objects.count)() == 0


def test_a_piece_whose_worker_keeps_stopping_fails_the_run(transactional_db, staff):
    from tests.helpers import make_judge, make_model

    a, base, judge = (
        make_model("A", "a-1", vendor="a"),
        make_model("B", "b-1", vendor="b"),
        (make_judge()),
    )
    run = services.eval_create(
        user=staff, name="x", prompts=PROMPTS[:1], model_ids=[a.pk], baseline_id=base.pk,
        judge_id=judge.pk,
    )  # fmt: skip
    long_ago = timezone.now() - timedelta(minutes=10)
    for take in range(1, works.MAX_TAKES + 1):
        assert works.piece_take(run_id=run.pk, queue="q", token=f"worker-{take}") is not None
        EvalWork.objects.filter(run=run).update(heartbeat_at=long_ago)  # and it died
    assert works.piece_take(run_id=run.pk, queue="q", token="one-more") is None
    run.refresh_from_db()
    assert run.status == "failed" and "stopped 3 times" in run.note


async def judge_calls_made() -> int:
    return await database_sync_to_async(
        lambda: sum(EvalVerdict.objects.values_list("attempts", flat=True))
    )()


@pytest.mark.parametrize(("limit", "judge_mock"), [(10, {"misbehaviour": "judge_bad_json_always"}),
                                                   (5, {})])  # fmt: skip
async def test_the_judge_call_limit_makes_exactly_that_many_calls(server, staff, limit, judge_mock):
    """24 verdicts to make; a judge whose replies cannot be read retries (3 calls a verdict),
    and the last verdict is allowed only the calls that remain."""
    run = await database_sync_to_async(make_run)(
        server, staff, judge_mock=judge_mock, max_judge_calls=limit
    )
    done = await running.eval_execute(run.pk)
    assert await judge_calls_made() == limit
    assert done.status == "budget" and done.note == (
        f"Stopped at its budget: {limit} judge calls of {limit}."
    )


def priced() -> None:
    for model in ModelEntry.objects.all():
        ModelPrice.objects.create(
            model=model, input_per_million=Decimal("5"), output_per_million=Decimal("15"),
            effective_from=dt.date(2020, 1, 1), source_note="test",
        )  # fmt: skip


async def test_a_cost_budget_counts_answers_and_the_judge_and_stops_the_run(server, staff):
    run = await database_sync_to_async(make_run)(server, staff, budget=Decimal("0.0001"))
    await database_sync_to_async(priced)()
    done = await running.eval_execute(run.pk)
    spent, _ = await database_sync_to_async(running.spent)(run_id=run.pk)
    assert done.status == "budget" and "spent of $0.0001" in done.note
    assert spent >= Decimal("0.0001")
    assert await database_sync_to_async(EvalAnswer.objects.count)() < 6 * 3


async def test_a_cost_budget_is_passed_by_one_unit_at_most_however_many_run_at_once(server, staff):
    """16 units may run at once; each holds its worst case before it starts, so only the
    last one started can carry the run past its budget."""
    run = await database_sync_to_async(make_run)(server, staff, budget=Decimal("0.001"))
    await database_sync_to_async(priced)()
    for model in server.models.values():
        model["ttft_ms"] = 20  # long enough for all 16 to be in flight at once
    done = await running.eval_execute(run.pk)
    spent, _ = await database_sync_to_async(running.spent)(run_id=run.pk)
    costs = await database_sync_to_async(
        lambda: [
            *EvalAnswer.objects.values_list("cost", flat=True),
            *EvalVerdict.objects.values_list("cost", flat=True),
        ]
    )()
    assert done.status == "budget"
    assert spent - max(c or 0 for c in costs) < Decimal("0.001")


def test_runs_that_cannot_be_run_are_refused_with_the_reason(transactional_db, staff):
    from tests.helpers import make_judge, make_model

    a, base, judge = (
        make_model("A", "a-1", vendor="a"),
        make_model("B", "b-1", vendor="b"),
        (make_judge()),
    )
    sibling = make_model("Judge's cousin", "mock-judge-2", vendor="mock-judge")
    run = {"user": staff, "name": "x", "prompts": PROMPTS, "baseline_id": base.pk,
           "judge_id": judge.pk}  # fmt: skip
    for bad, why in (
        ({"model_ids": [a.pk], "budget": Decimal("-1")}, "A budget is a number of USD"),
        ({"model_ids": [a.pk], "budget": Decimal("NaN")}, "A budget is a number of USD"),
        ({"model_ids": [a.pk], "budget": Decimal("1e20")}, "A budget is a number of USD"),
        ({"model_ids": [a.pk], "max_judge_calls": 0}, "1 or more"),
        ({"model_ids": [sibling.pk]}, "of the judge's own family"),
    ):
        with pytest.raises(ServiceError, match=why):
            services.eval_create(**run, **bad)
    assert not EvalRun.objects.exists()
