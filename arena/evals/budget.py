"""An evaluation run's limits, kept for the whole run wherever its pieces run: a unit of work
(one answer, one verdict) holds its worst case in the database before it starts (an
``EvalHold`` row), and gives it back when it ends, as what it spent is recorded.

The rule:

* A cost budget: a unit starts only while what the run has spent (its answers' and verdicts'
  rows) plus the worst case of every unit in flight (the run's live holds, whatever piece,
  pool queue or process holds them) is under the budget; when it is not, the unit waits for
  those in flight to end, and the run stops when nothing is in flight. Takes are decided one
  at a time under the run's row lock (SELECT ... FOR UPDATE; on SQLite, the one process's
  lock), and a unit's hold goes in the same transaction that records its spend, so a take
  never counts a unit twice or not at all. So only the last unit started can carry the run
  past its budget, by at most its own worst case: a run never spends more than its budget
  plus ONE unit's worst case, however many queues and workers it runs on.
* A unit's worst case, at the model's price today (the dearer of its normal and long-context
  rates): an answer reads its prompt, counted as one token a byte (no tokenizer makes more),
  and writes its ``max_tokens`` (the run's, else the model's limit, which is then sent); a
  verdict makes up to ``ATTEMPTS`` judge calls, each reading the judge's instructions, the
  prompt and both answers (a token a byte) and replying up to the strategy's longest reply
  (a token a character). A model with no price, or example pricing, costs nothing here, as it
  does in the run's totals.
* A judge-call limit: a verdict may make as many calls as remain, less those held by the
  verdicts in flight, at most ``ATTEMPTS``; one that reaches its share with no reply it can
  read stops there. So the run makes exactly as many judge calls as its limit allows (when it
  has that much to judge).
* A worker killed mid-unit: a hold is leased for ``EVALS_STALE_S`` and renewed by its piece's
  heartbeat (``works.piece_beat``); one its worker stopped renewing no longer counts once its
  lease ends (the next take deletes it), so it never blocks the run for good. What such a
  unit spent before it died was never recorded, here as in the run's totals.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_CEILING, Decimal

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.compare.spend import request_params, token_limit
from arena.evals.models import EvalAnswer, EvalHold, EvalRun, EvalVerdict
from arena.judges import pairwise
from arena.judges.calls import ATTEMPTS, Call
from arena.judges.registry import strategy_for
from arena.judges.rules import mask

ZERO = Decimal("0")
TEMPLATE_TOKENS = 64  # a chat template's own tokens around the messages, at most
HELD_PLACES = Decimal("1e-8")  # EvalHold.cost's places; a worst case is rounded up to them
POLL_S = 0.25  # a waiting unit looks again this often for room freed by other pieces
_LOCAL = threading.Lock()  # SQLite only: see _run_locked


def spent(*, run_id: int) -> tuple[Decimal, int]:
    """What the run's answers and judge calls have cost so far, and the judge calls made."""
    answers = EvalAnswer.objects.filter(prompt__run_id=run_id).aggregate(c=Sum("cost"))["c"]
    verdicts = EvalVerdict.objects.filter(prompt__run_id=run_id).aggregate(
        c=Sum("cost"), n=Sum("attempts")
    )
    return (answers or ZERO) + (verdicts["c"] or ZERO), verdicts["n"] or 0


def rates_of(models: list[ModelEntry]) -> dict[int, tuple[Decimal, Decimal]]:
    """Each model's (input, output) price per token today, the dearer of its tiers; zero for a
    mock, example pricing or no price."""
    out: dict[int, tuple[Decimal, Decimal]] = {}
    for model in models:
        price = None
        if not costs.is_example_pricing(model=model):
            price = costs.price_on(model=model, on=timezone.localdate())
        if price is None:
            out[model.pk] = (ZERO, ZERO)
            continue
        per_in = max(price.input_per_million, price.long_context_input_per_million or ZERO)
        per_out = max(price.output_per_million, price.long_context_output_per_million or ZERO)
        out[model.pk] = (per_in / costs.MILLION, per_out / costs.MILLION)
    return out


def params_of(models: list[ModelEntry], params: dict) -> dict[int, dict]:
    """What the run sends each model: with no max_tokens set, a model that costs money is
    asked for at most its limit (``compare.spend.request_params``), the figure its worst case
    counts."""
    return {model.pk: request_params(model, params) for model in models}


def _read(*texts: str) -> int:
    return sum(len(t.encode()) for t in texts) + TEMPLATE_TOKENS


def answer_worst(
    rate: tuple[Decimal, Decimal], model: ModelEntry, prompt: str, params: dict
) -> Decimal:
    """An answer's worst case (see the module's rule)."""
    written = params.get("max_tokens") or token_limit(model)
    return rate[0] * _read(prompt) + rate[1] * int(written)


def verdict_worst_call(
    rate: tuple[Decimal, Decimal], prompt: str, texts: tuple[str, str], terms: tuple[str, ...]
) -> Decimal:
    """One pairwise judge call's worst case (see the module's rule), on the masked text the
    judge reads."""
    strategy = strategy_for("pairwise")
    first, second = (mask(t, terms) for t in texts)
    text = pairwise.pair_prompt(prompt=mask(prompt, terms), first=first, second=second)
    reply = strategy.reply_max_chars or settings.ARENA["ANSWER_MAX_CHARS"]
    return rate[0] * _read(strategy.system, text) + rate[1] * reply


@dataclass(frozen=True)
class Take:
    """What a take decided: a hold (its id, and the judge calls it allows: 1 for an answer),
    or none: to wait (``stop`` empty: units in flight hold what may be freed), or ``stop``
    ("cost" or "calls": nothing in flight can free it). With what the run had spent then."""

    hold_id: int = 0
    allowed: int = 0
    stop: str = ""
    cost: Decimal = ZERO
    calls: int = 0


def _lease(lease_s: float | None) -> timedelta:
    return timedelta(seconds=settings.EVALS_STALE_S if lease_s is None else lease_s)


@contextmanager
def _run_locked(run_id: int):
    """A transaction holding the run's row: the takes and gives back of all its pieces, in
    every process, one at a time (FOR NO KEY UPDATE: rows that only refer to the run, as a
    new hold or prompt does, are not kept waiting). SQLite has no SELECT ... FOR UPDATE
    (Django leaves it out); the embedded default is one process, and this process's lock is
    enough there."""
    local = _LOCAL if not connection.features.has_select_for_update else nullcontext()
    with local, transaction.atomic():
        yield (
            EvalRun.objects.select_for_update(no_key=True)
            .values_list("budget", "max_judge_calls")
            .get(pk=run_id)
        )


def hold_take(
    *,
    run_id: int,
    owner: str,
    queue: str,
    worst_each: Decimal,
    judge: bool,
    lease_s: float | None = None,
) -> Take:
    """Hold a unit's worst case (``worst_each`` a judge call for a verdict) if the run's
    limits leave room, for ``lease_s`` (EVALS_STALE_S) unless renewed (``holds_renew``)."""
    now = timezone.now()
    with _run_locked(run_id) as (cost_limit, calls_limit):
        holds = EvalHold.objects.filter(run_id=run_id)
        holds.filter(held_until__lte=now).delete()  # their workers died: they no longer count
        held = holds.aggregate(cost=Sum("cost"), calls=Sum("calls"))
        held_cost, held_calls = held["cost"] or ZERO, held["calls"] or 0
        cost, calls = spent(run_id=run_id)
        if cost_limit is not None and cost + held_cost >= cost_limit:
            return Take(stop="" if held_cost else "cost", cost=cost, calls=calls)
        if judge and calls_limit is not None and calls + held_calls >= calls_limit:
            return Take(stop="" if held_calls else "calls", cost=cost, calls=calls)
        allowed = 1
        if judge:
            allowed = ATTEMPTS
            if calls_limit is not None:
                allowed = min(ATTEMPTS, calls_limit - calls - held_calls)
        hold = EvalHold.objects.create(
            run_id=run_id, owner=owner, queue=queue,
            cost=(worst_each * allowed).quantize(HELD_PLACES, rounding=ROUND_CEILING),
            calls=allowed if judge else 0, held_until=now + _lease(lease_s),
        )  # fmt: skip
    return Take(hold_id=hold.pk, allowed=allowed, cost=cost, calls=calls)


def hold_give_back(
    *, run_id: int, hold_id: int, record: Callable[[], object] | None = None
) -> None:
    """A unit ended: ``record`` writes what it made and spent, and its hold goes, together,
    so no take ever counts the unit twice or not at all."""
    with _run_locked(run_id):
        if record is not None:
            record()
        EvalHold.objects.filter(pk=hold_id).delete()


def holds_renew(*, run_id: int, owner: str, lease_s: float | None = None) -> None:
    """The units of a live worker keep their holds (its piece's heartbeat calls this)."""
    EvalHold.objects.filter(run_id=run_id, owner=owner).update(
        held_until=timezone.now() + _lease(lease_s)
    )


def held(*, run_id: int) -> tuple[Decimal, int]:
    """What the run's live holds hold: cost, judge calls."""
    live = EvalHold.objects.filter(run_id=run_id, held_until__gt=timezone.now())
    total = live.aggregate(cost=Sum("cost"), calls=Sum("calls"))
    return total["cost"] or ZERO, total["calls"] or 0


class Budget:
    """One piece's door to its run's limits: each unit's take waits while others hold what
    may be freed (woken when a unit of this piece gives back, and every ``POLL_S`` for those
    of other pieces and processes); ``stop`` says which limit ended the piece."""

    def __init__(self, *, run_id: int, owner: str, queue: str) -> None:
        self.run_id, self.owner, self.queue = run_id, owner, queue
        self.cost, self.calls = ZERO, 0  # what the run had spent at the last take
        self.stop = ""  # "cost" or "calls" once a unit could not start
        self._changed = asyncio.Event()

    async def take(self, *, worst_each: Decimal, judge: bool) -> Take | None:
        """Wait until a unit may start: its hold, or None once the run has reached a limit."""
        while not self.stop:
            took = await database_sync_to_async(hold_take)(
                run_id=self.run_id, owner=self.owner, queue=self.queue,
                worst_each=worst_each, judge=judge,
            )  # fmt: skip
            self.cost, self.calls = took.cost, took.calls
            if took.hold_id:
                return took
            if took.stop:
                self.stop = took.stop
                break
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), POLL_S)
        self._wake()  # the others waiting here stop too
        return None

    async def give_back(self, took: Take, record: Callable[[], object] | None) -> None:
        """A unit ended (``record``: what it made, written as its hold goes)."""
        await database_sync_to_async(hold_give_back)(
            run_id=self.run_id, hold_id=took.hold_id, record=record
        )
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


class CallsSpent(Exception):
    """A verdict made every judge call it was allowed with no reply it could read."""

    def __init__(self, calls: list[Call]) -> None:
        super().__init__(f"{len(calls)} judge calls")
        self.calls = calls


def calls_counter(allowed: int):
    """An ``on_call`` for one verdict that stops it once it has made ``allowed`` calls with
    no reply it could read (else ``JudgeCaller.ask`` would ask again); the calls it made are
    on the exception."""
    made: list[Call] = []

    async def on_call(call: Call) -> None:
        made.append(call)
        if call.problem and len(made) >= allowed:
            raise CallsSpent(made)

    return on_call
