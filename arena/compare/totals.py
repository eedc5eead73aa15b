"""A compare run's totals: what its answers cost, what its judge cost (and the judge's tokens),
and the two together, each with the status seed 000 gives a sum of costs (catalog.costs):
unknown if any part cannot be told (the amount is then what is known, a lower bound),
estimated if any part is, known if every part is, example when only mock prices are in it.
Money is Decimal; the page and every export read these figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from arena.catalog.costs import combined_status, plain
from arena.catalog.models import CostStatus
from arena.compare.models import CompareRun

STATUSES = [s.value for s in CostStatus]


@dataclass(frozen=True)
class Total:
    amount: Decimal  # the parts whose cost is told (known, estimated; example counts 0)
    status: str  # a CostStatus value, "" when there are no parts
    counts: dict[str, int]  # parts by status

    @classmethod
    def of(cls, parts: Iterable[tuple[Decimal | None, str]]) -> Total:
        amount, counts = Decimal("0"), Counter()
        for cost, status in parts:
            status = status or CostStatus.UNKNOWN.value  # never priced: cannot be told
            counts[status] += 1
            if cost is not None and status != CostStatus.UNKNOWN:
                amount += cost
        return cls(amount, combined_status(list(counts)), {s: counts[s] for s in STATUSES})

    def __add__(self, other: Total) -> Total:
        counts = {s: self.counts[s] + other.counts[s] for s in STATUSES}
        statuses = [s for s, n in counts.items() if n]
        return Total(self.amount + other.amount, combined_status(statuses), counts)

    def as_data(self) -> dict:
        """In plain JSON types: the amount as a plain decimal string."""
        return {"cost": plain(self.amount), "cost_status": self.status, "counts": self.counts}


@dataclass(frozen=True)
class RunTotals:
    answers: Total
    judge: Total
    judge_calls: int
    judge_input_tokens: int | None  # None: some call's count is missing
    judge_output_tokens: int | None
    judge_tokens_estimated: bool

    @property
    def run(self) -> Total:
        return self.answers + self.judge

    def as_data(self) -> dict:
        return {
            "answers": self.answers.as_data(),
            "judge": {
                **self.judge.as_data(),
                "calls": self.judge_calls,
                "input_tokens": self.judge_input_tokens,
                "output_tokens": self.judge_output_tokens,
                "tokens_estimated": self.judge_tokens_estimated,
            },
            "run": self.run.as_data(),
        }


def _tokens(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def run_totals(*, run: CompareRun) -> RunTotals:
    """The run's totals (reads ``run.answers`` and ``run.judge_calls``: prefetch them for a
    list)."""
    answers = list(run.answers.all())
    calls = list(run.judge_calls.all())
    return RunTotals(
        answers=Total.of((a.cost, a.cost_status) for a in answers),
        judge=Total.of((c.cost, c.cost_status) for c in calls),
        judge_calls=len(calls),
        judge_input_tokens=_tokens([c.input_tokens for c in calls]),
        judge_output_tokens=_tokens([c.output_tokens for c in calls]),
        judge_tokens_estimated=any(c.tokens_estimated for c in calls),
    )
