"""An evaluation run's limits, kept while it runs: a unit of work (one answer, one verdict)
holds its worst case before it starts, and gives back what it did not spend when it ends.

The rule:

* A cost budget: a unit starts only while what the run has spent plus the worst case of every
  unit in flight is under the budget; when it is not, the unit waits for those in flight to
  end, and the run stops when nothing is in flight. So only the last unit started can carry
  the run past its budget, by at most its own worst case: a run never spends more than its
  budget plus one unit's worst case (per pool queue, where a run's models are served on
  several: each queue's piece holds its own units).
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
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.compare.spend import request_params, token_limit
from arena.judges import pairwise
from arena.judges.calls import ATTEMPTS, Call
from arena.judges.registry import strategy_for
from arena.judges.rules import mask

ZERO = Decimal("0")
TEMPLATE_TOKENS = 64  # a chat template's own tokens around the messages, at most


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


class Budget:
    """One piece's view of its run's limits: spent (its own and, as refreshed, the other
    pieces'), and held by the units in flight."""

    def __init__(self, *, cost_limit: Decimal | None, calls_limit: int | None) -> None:
        self.cost_limit, self.calls_limit = cost_limit, calls_limit
        self.cost, self.calls = ZERO, 0
        self.held_cost, self.held_calls = ZERO, 0
        self.stop = ""  # "cost" or "calls" once a unit could not start
        self._changed = asyncio.Condition()

    def seen(self, *, cost: Decimal, calls: int) -> None:
        """What the whole run has spent, as read now."""
        self.cost, self.calls = max(self.cost, cost), max(self.calls, calls)

    def _blocked(self, judge: bool) -> str:
        if self.cost_limit is not None and self.cost + self.held_cost >= self.cost_limit:
            return "cost"
        if judge and self.calls_limit is not None:
            if self.calls + self.held_calls >= self.calls_limit:
                return "calls"
        return ""

    async def take(self, *, worst_each: Decimal, judge: bool) -> int:
        """Wait until a unit may start; the calls it may make (1 for an answer), or 0 when the
        run has reached a limit (``stop`` says which)."""
        async with self._changed:
            while not self.stop:
                why = self._blocked(judge)
                if not why:
                    break
                if self.held_cost or self.held_calls:
                    await self._changed.wait()  # those in flight may leave room
                    continue
                self.stop = why
                self._changed.notify_all()
            if self.stop:
                return 0
            allowed = 1
            if judge:
                allowed = ATTEMPTS
                if self.calls_limit is not None:
                    allowed = min(ATTEMPTS, self.calls_limit - self.calls - self.held_calls)
                self.held_calls += allowed
            self.held_cost += worst_each * allowed
            return allowed

    async def give_back(
        self, *, allowed: int, worst_each: Decimal, judge: bool, cost: Decimal, calls: int
    ) -> None:
        """A unit ended: what it held is free again, what it spent is spent."""
        async with self._changed:
            self.held_cost -= worst_each * allowed
            self.held_calls -= allowed if judge else 0
            self.cost += cost
            self.calls += calls
            self._changed.notify_all()


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
