"""A run's limits are the whole run's, however many pieces (pool queues, processes) it runs in:
each unit's worst case is held in the database before it starts (``arena.evals.budget``), so
two pieces together pass a cost budget by one unit at most and make exactly the judge calls
allowed; a hold whose worker was killed stops counting once its lease ends."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from arena.catalog.models import ModelEntry, ModelPrice
from arena.devtools.mock_server import MockServer
from arena.evals import budget, running, services, works
from arena.evals.models import EvalAnswer, EvalHold, EvalRun, EvalVerdict, EvalWork
from tests.helpers import RECEIVE_TIMEOUT, ROOT, make_judge, make_model, subprocess_env

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one
PROMPTS = [(f"Question {i}: why is the sky blue?", "science") for i in range(6)]
POOL = "pool-budget"  # a pool queue of its own for one contestant


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def model_on(server, name: str, *, queue: str = "", **mock) -> ModelEntry:
    model_id = name.lower().replace(" ", "-")
    server.models[model_id] = {"answer_tokens": 20, **mock}
    backend_settings = {"base_url": server.url, **({"queue": queue} if queue else {})}
    return ModelEntry.objects.create(
        public_name=name, vendor=f"{model_id}-vendor", model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE, backend_settings=backend_settings,
        supported_params=["temperature", "max_tokens"], active=not mock.get("judge"),
    )  # fmt: skip


def two_queue_run(
    server, staff, *, judge_mock: dict | None = None, prompts=PROMPTS, **run
) -> EvalRun:
    """Alpha answers on POOL, the rest on the default queue with the judge; both pieces open,
    as ``eval_enqueue`` leaves them."""
    models = [model_on(server, "Alpha", queue=POOL), model_on(server, "Beta")]
    base = model_on(server, "Base")
    judge = model_on(server, "Judge", judge=True, **(judge_mock or {}))
    made = services.eval_create(
        user=staff, name="sky", prompts=prompts, model_ids=[m.pk for m in models],
        baseline_id=base.pk, judge_id=judge.pk, **run,
    )  # fmt: skip
    assert works.pieces_open(run=made) == sorted([POOL, settings.GENERATION_QUEUE])
    return made


def priced(*names: str) -> None:
    for model in ModelEntry.objects.filter(public_name__in=names):
        ModelPrice.objects.create(
            model=model, input_per_million=Decimal("5"), output_per_million=Decimal("15"),
            effective_from=dt.date(2020, 1, 1), source_note="test",
        )  # fmt: skip


async def both_pieces(run_id: int) -> EvalRun:
    """The judge's piece here and the pool's piece at the same time on a thread and database
    connection of its own, as a worker process of that pool would run it."""
    pool = asyncio.to_thread(async_to_sync(running.eval_execute), run_id, queue=POOL)
    main = running.eval_execute(run_id, queue=settings.GENERATION_QUEUE)
    done = await asyncio.wait_for(asyncio.gather(main, pool), timeout=RECEIVE_TIMEOUT)
    return done[0]


async def test_two_pieces_on_two_queues_pass_the_budget_by_one_units_worst_case_at_most(
    server, staff
):
    """Several answers fit in the budget at once in each piece: without one reservation for
    the run, each piece would spend up to the budget by itself."""
    run = await database_sync_to_async(two_queue_run)(
        server, staff, budget=Decimal("0.005"), params={"max_tokens": 30}
    )
    await database_sync_to_async(priced)("Alpha", "Beta", "Base", "Judge")
    for model in server.models.values():
        model["ttft_ms"] = 20  # long enough for the pieces' units to be in flight together
    done = await both_pieces(run.pk)
    spent, _ = await database_sync_to_async(running.spent)(run_id=run.pk)
    costs = await database_sync_to_async(
        lambda: [
            *EvalAnswer.objects.values_list("cost", flat=True),
            *EvalVerdict.objects.values_list("cost", flat=True),
        ]
    )()
    assert done.status == "budget" and "spent of $0.0050" in done.note
    made_by_pool = EvalAnswer.objects.filter(model__public_name="Alpha").exclude(status="running")
    assert await database_sync_to_async(made_by_pool.exists)()  # both pieces spent
    # The bound, budget plus one unit's worst case, as its sharper form: every unit but the
    # last started was held at its worst case, which its cost cannot pass.
    assert spent - max(c or 0 for c in costs) < run.budget
    assert not await database_sync_to_async(EvalHold.objects.exists)()  # every hold given back


@pytest.mark.parametrize(("limit", "judge_mock"), [(10, {"misbehaviour": "judge_bad_json_always"}),
                                                   (5, {})])  # fmt: skip
async def test_the_judge_call_limit_makes_exactly_that_many_calls_across_two_pieces(
    server, staff, limit, judge_mock
):
    run = await database_sync_to_async(two_queue_run)(
        server, staff, judge_mock=judge_mock, max_judge_calls=limit
    )
    done = await both_pieces(run.pk)
    calls = await database_sync_to_async(
        lambda: sum(EvalVerdict.objects.values_list("attempts", flat=True))
    )()
    assert calls == limit
    assert done.status == "budget" and done.note == (
        f"Stopped at its budget: {limit} judge calls of {limit}."
    )
    answers = await database_sync_to_async(EvalAnswer.objects.filter(status="ok").count)()
    assert answers == len(PROMPTS) * 3  # answers cost no judge calls: all made


# A worker that takes a hold for a unit, renews it as a unit's heartbeat does, and is killed.
HOLDER = """
import sys, time
from decimal import Decimal
import django
django.setup()
from arena.evals import budget
run_id, worst, lease = int(sys.argv[1]), Decimal(sys.argv[2]), float(sys.argv[3])
took = budget.hold_take(run_id=run_id, owner="killed", queue="pool-gone", worst_each=worst,
                        judge=False, lease_s=lease)
print("held" if took.hold_id else "refused", flush=True)
while True:
    time.sleep(lease / 10)
    budget.holds_renew(run_id=run_id, owner="killed", lease_s=lease)
"""


async def test_a_hold_left_by_a_killed_worker_stops_counting_once_its_lease_ends(server, staff):
    """The killed worker's hold is the whole budget: while it counted, no unit could start."""
    run = await database_sync_to_async(two_queue_run)(
        server, staff, budget=Decimal("1"), params={"max_tokens": 30}, prompts=PROMPTS[:2]
    )
    await database_sync_to_async(priced)("Alpha", "Beta", "Base")  # the judge costs nothing
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run.pk), str(run.budget), "2"],
        env={**subprocess_env(), "DJANGO_SETTINGS_MODULE": "arena.settings"},
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert await asyncio.to_thread(holder.stdout.readline) == "held\n"
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # kill -9: mid-unit, nothing given back
        holder.wait()
        holder.stdout.close()
    done = await both_pieces(run.pk)
    assert done.status == "done"  # the run went on once the dead hold's lease ended
    assert await database_sync_to_async(EvalVerdict.objects.filter(done=True).count)() == 2 * 2 * 2
    assert not await database_sync_to_async(EvalHold.objects.exists)()  # the dead one pruned


def test_holds_of_every_piece_and_process_count_until_given_back_or_expired(
    transactional_db, staff
):
    a, base, judge = (
        make_model("A", "a-1", vendor="a"),
        make_model("B", "b-1", vendor="b"),
        (make_judge()),
    )
    run = services.eval_create(
        user=staff, name="x", prompts=PROMPTS[:1], model_ids=[a.pk], baseline_id=base.pk,
        judge_id=judge.pk, budget=Decimal("1"), max_judge_calls=5,
    )  # fmt: skip
    take = {"run_id": run.pk, "worst_each": Decimal("0.3")}
    first = budget.hold_take(**take, owner="w1", queue="q1", judge=True)
    assert (first.allowed, first.stop) == (3, "")
    second = budget.hold_take(**take, owner="w2", queue="q2", judge=True)
    assert second.allowed == 2  # the calls left, less those the first holds
    blocked = budget.hold_take(**take, owner="w2", queue="q2", judge=False)
    assert (blocked.hold_id, blocked.stop) == (0, "")  # $1.50 held of $1: wait for them
    budget.hold_give_back(run_id=run.pk, hold_id=first.hold_id)  # it spent nothing
    EvalHold.objects.filter(pk=second.hold_id).update(held_until=timezone.now())  # its worker died
    third = budget.hold_take(**take, owner="w3", queue="q1", judge=True)
    assert third.allowed == 3 and list(EvalHold.objects.values_list("pk", flat=True)) == [
        third.hold_id
    ]


def test_a_pieces_heartbeat_renews_its_holds(transactional_db, staff):
    a, base, judge = (
        make_model("A", "a-1", vendor="a"),
        make_model("B", "b-1", vendor="b"),
        (make_judge()),
    )
    run = services.eval_create(
        user=staff, name="x", prompts=PROMPTS[:1], model_ids=[a.pk], baseline_id=base.pk,
        judge_id=judge.pk, budget=Decimal("1"),
    )  # fmt: skip
    assert works.piece_take(run_id=run.pk, queue="q", token="worker") is not None
    hold = {"run_id": run.pk, "worst_each": Decimal("0.1"), "judge": False, "lease_s": 1}
    took = budget.hold_take(**hold, owner="worker", queue="q")
    other = budget.hold_take(**hold, owner="other", queue="q2")
    before = dict(EvalHold.objects.values_list("pk", "held_until"))
    assert works.piece_beat(run_id=run.pk, queue="q", token="worker")
    after = dict(EvalHold.objects.values_list("pk", "held_until"))
    assert after[took.hold_id] - before[took.hold_id] >= timedelta(
        seconds=settings.EVALS_STALE_S - 1
    )  # leased EVALS_STALE_S from the beat
    assert after[other.hold_id] == before[other.hold_id]  # another worker's: not renewed
    assert EvalWork.objects.get(run=run).owner == "worker"
