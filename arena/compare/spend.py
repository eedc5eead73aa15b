"""What compare mode may spend, per user: each model's output-token limit, what a run is
estimated to cost before it starts, what the user has spent today, and the check that refuses
a run past the daily budget or the runs-at-once cap.

The rule (COMPARE in settings):

* A model's limit is its backend settings' ``max_tokens`` where set, else COMPARE["MAX_TOKENS"].
  A run asking any model for more is refused, naming the model and its limit.
* A run's estimate is, for each model, the prompt and system prompt's estimated tokens at its
  input price plus ``max_tokens`` (or, when empty, the model's limit) at its output price; and
  for the judge, one call per criterion plus the two head-to-head calls, each reading the
  prompt and every answer at full length and replying JUDGE_REPLY_TOKENS. Prices are those in
  force today (``catalog.costs``); a mock or example-priced model costs nothing, and so does a
  model with no price for today (its cost cannot be told: the catalog should price it).
* Spent today is every run the user started since midnight in the site's time zone: a run that
  ended at what it cost (its answers' known and estimated costs, and its judge calls' tokens,
  estimated from their text, at the judge's price); a run still going at its estimate. An
  answer that ended with no cost of its own (cancelled, failed, cut by the sweep) counts at its
  estimate: its model may have been billed for the whole answer, and a cancel must not be a
  way to spend without counting.
* A run is refused when spent today plus its estimate would pass COMPARE["DAILY_BUDGET_USD"],
  or when the user already has COMPARE["MAX_CONCURRENT_RUNS"] runs queued, running or judging.
  The caller holds the user's row lock, so two runs started at once are counted one after the
  other, never both against the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from datetime import time as clock
from decimal import Decimal
from functools import cached_property

from django.conf import settings
from django.db.models import Count, Sum
from django.db.models.functions import Length
from django.utils import timezone

from accounts.models import User
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.core.errors import ServiceError
from arena.core.text import estimate_tokens
from arena.judges import rubric

# What one judge call is assumed to reply: a score and a short reason per answer.
JUDGE_REPLY_TOKENS = 1024
# The calls that are not one per criterion: the head-to-head, both orders.
HEAD_TO_HEAD_CALLS = 2
LIVE = (CompareRun.Status.QUEUED, CompareRun.Status.RUNNING, CompareRun.Status.JUDGING)
ZERO = Decimal(0)


def token_limit(model: ModelEntry) -> int:
    """The most output tokens a run may ask of ``model``."""
    own = (model.backend_settings or {}).get("max_tokens")
    if isinstance(own, int) and not isinstance(own, bool) and own >= 1:
        return own
    return int(settings.COMPARE["MAX_TOKENS"])


class Prices:
    """Each model's prices on one day, read once per model: (input, output) per million
    tokens; zero for a mock, an example price, or no price that day."""

    def __init__(self, on: date) -> None:
        self.on = on
        self._seen: dict[int, tuple[Decimal, Decimal]] = {}

    def cost(self, model: ModelEntry, *, input_tokens: int, output_tokens: int) -> Decimal:
        if model.pk not in self._seen:
            price = None
            if not costs.is_example_pricing(model=model):
                price = costs.price_on(model=model, on=self.on)
            self._seen[model.pk] = (
                (price.input_per_million, price.output_per_million) if price else (ZERO, ZERO)
            )
        per_in, per_out = self._seen[model.pk]
        return (Decimal(input_tokens) * per_in + Decimal(output_tokens) * per_out) / costs.MILLION


def request_params(model: ModelEntry, params: dict) -> dict:
    """What a run sends ``model``: with no max_tokens set, a model that costs money is asked
    for at most its limit, the figure its estimate counted (its own default could be more).
    Free models (mock, example-priced, unpriced) are left to their own length."""
    if params.get("max_tokens") or model.params_unsupported({"max_tokens": 1}):
        return params
    if Prices(timezone.localdate()).cost(model, input_tokens=0, output_tokens=1) <= ZERO:
        return params
    return {**params, "max_tokens": token_limit(model)}


@dataclass(frozen=True)
class RunPlan:
    """What a run asks for, as far as its cost goes: checked before it starts
    (``spend_check``), and counted at its estimate while it runs (``spent_today``)."""

    prompt: str
    system_prompt: str
    max_tokens: int | None
    models: tuple[ModelEntry, ...]
    judge_model: ModelEntry | None
    criteria: int  # the judge's calls, one a criterion (0 without a judge)

    @classmethod
    def of(cls, run: CompareRun, answers: list[CompareAnswer]) -> RunPlan:
        """A saved run's plan; ``answers``: its answers, with their models."""
        return cls(
            prompt=run.prompt,
            system_prompt=run.system_prompt,
            max_tokens=(run.params or {}).get("max_tokens"),
            models=tuple(answer.model for answer in answers),
            judge_model=run.judge,
            criteria=len(run.rubric or []),
        )

    @cached_property
    def asked(self) -> int:
        """The tokens each model is asked to read: the prompt and the system prompt."""
        return estimate_tokens(self.system_prompt) + estimate_tokens(self.prompt)

    def tokens_out(self, model: ModelEntry) -> int:
        """The most output tokens ``model`` may write in this run."""
        limit = token_limit(model)
        return min(self.max_tokens, limit) if self.max_tokens else limit


def run_estimate(*, plan: RunPlan, prices: Prices) -> Decimal:
    """The most a run is expected to cost (see the module's rule)."""
    total, written = ZERO, 0
    for model in plan.models:
        out = plan.tokens_out(model)
        written += out
        total += prices.cost(model, input_tokens=plan.asked, output_tokens=out)
    if plan.judge_model is not None:
        read = estimate_tokens(rubric.SYSTEM) + plan.asked + written
        one = prices.cost(plan.judge_model, input_tokens=read, output_tokens=JUDGE_REPLY_TOKENS)
        total += one * (plan.criteria + HEAD_TO_HEAD_CALLS)
    return total


def _day_start() -> datetime:
    return timezone.make_aware(datetime.combine(timezone.localdate(), clock.min))


def spent_today(*, user: User, prices: Prices) -> Decimal:
    """What the user's runs started today cost, or may still cost (see the module's rule)."""
    runs = list(
        CompareRun.objects.filter(user=user, created_at__gte=_day_start())
        .select_related("judge")
        .prefetch_related("answers__model")
    )
    judged = {
        row["run_id"]: row
        for row in JudgeCall.objects.filter(run__in=[r.pk for r in runs if r.judge_id])
        .values("run_id")
        .annotate(calls=Count("id"), asked=Sum(Length("request")), said=Sum(Length("reply")))
    }
    total = ZERO
    for run in runs:
        answers = list(run.answers.all())
        plan = RunPlan.of(run, answers)
        if run.status in LIVE:
            total += run_estimate(plan=plan, prices=prices)
            continue
        for answer in answers:
            total += (
                answer.cost
                if answer.cost is not None
                else prices.cost(
                    answer.model,
                    input_tokens=plan.asked,
                    output_tokens=plan.tokens_out(answer.model),
                )
            )
        row = judged.get(run.pk)
        if row is not None:
            # Judge calls keep their text, not a bill: about four characters a token.
            read = (row["asked"] or 0) + row["calls"] * len(rubric.SYSTEM)
            said = row["said"] or 0
            total += prices.cost(run.judge, input_tokens=read // 4, output_tokens=said // 4)
    return total


def usd(amount: Decimal) -> str:
    """Dollars to the cent, with up to two more places where a small cost has them:
    $10.00, $0.10, $0.2458, $0.00."""
    cents = amount.quantize(Decimal("0.01"))
    shown = cents if cents == amount else amount.quantize(Decimal("0.0001"))
    return f"${shown:,}"


def spend_check(*, user: User, plan: RunPlan) -> None:
    """Refuse a run over a model's token limit, past the runs-at-once cap, or that would pass
    the daily budget. The caller holds the user's row lock."""
    for model in plan.models:
        limit = token_limit(model)
        if plan.max_tokens is not None and plan.max_tokens > limit:
            raise ServiceError(
                "max_tokens_over_limit",
                f"max_tokens {plan.max_tokens:,} is over {model.public_name}'s limit of "
                f"{limit:,} output tokens: lower it, or remove the model.",
            )
    cap = settings.COMPARE["MAX_CONCURRENT_RUNS"]
    going = CompareRun.objects.filter(user=user, status__in=LIVE).count()
    if going >= cap:
        raise ServiceError(
            "too_many_runs",
            f"You have {going} compare runs going; at most {cap} may run at once. Wait for one "
            "to end, or cancel one, then run again.",
        )
    prices = Prices(timezone.localdate())
    estimate = run_estimate(plan=plan, prices=prices)
    if estimate <= ZERO:
        return  # mock, example-priced or unpriced models only: nothing to count against
    spent = spent_today(user=user, prices=prices)
    budget = settings.COMPARE["DAILY_BUDGET_USD"]
    if spent + estimate > budget:
        judged = ", and the judge's calls" if plan.judge_model is not None else ""
        raise ServiceError(
            "over_budget",
            f"This run could cost up to {usd(estimate)} (max_tokens at each model's price"
            f"{judged}); with {usd(spent)} spent today that passes your daily compare budget "
            f"of {usd(budget)}. Lower max_tokens, pick fewer or cheaper models, or wait until "
            "tomorrow.",
        )


def spend_summary(*, user: User) -> dict:
    """For the form: the budget, what is spent today, and the runs-at-once cap."""
    return {
        "budget": usd(settings.COMPARE["DAILY_BUDGET_USD"]),
        "spent": usd(spent_today(user=user, prices=Prices(timezone.localdate()))),
        "max_runs": settings.COMPARE["MAX_CONCURRENT_RUNS"],
    }
