"""What an answer cost, from the model's list price on the day it ran. Money is Decimal only.

A mock model's cost is always zero with the status ``example``: its prices, if any, only show
what the page looks like, and must never read as a real bill.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from django.utils import timezone

from arena.catalog.models import CostStatus, ModelEntry, ModelPrice

MILLION = Decimal(1_000_000)
QUANTUM = Decimal("0.00000001")  # Answer.cost keeps 8 decimal places
EXAMPLE_DISCLOSURE = "example pricing (mock)"


def price_on(*, model: ModelEntry, on: date) -> ModelPrice | None:
    """The price in force on ``on``: the latest one that took effect on or before that day."""
    return (
        ModelPrice.objects.filter(model=model, effective_from__lte=on)
        .order_by("-effective_from")
        .first()
    )


def is_example_pricing(*, model: ModelEntry) -> bool:
    # Any example row marks the model as a stand-in, whatever the date: a real-looking number
    # from a later or earlier row would be worse than none.
    return model.backend == ModelEntry.Backend.MOCK or model.prices.filter(is_example=True).exists()


def answer_cost(
    *,
    model: ModelEntry,
    on: date,
    input_tokens: int | None,
    output_tokens: int | None,
    tokens_estimated: bool,
) -> tuple[Decimal | None, str]:
    """(cost, CostStatus value) of one answer generated on ``on``.

    The cost is None when it cannot be told: no price for that day, or no token counts at all.
    """
    if is_example_pricing(model=model):
        return Decimal("0"), CostStatus.EXAMPLE.value
    price = price_on(model=model, on=on)
    if price is None or input_tokens is None or output_tokens is None:
        return None, CostStatus.UNKNOWN.value
    cost = (
        Decimal(input_tokens) * price.input_per_million / MILLION
        + Decimal(output_tokens) * price.output_per_million / MILLION
    ).quantize(QUANTUM, rounding=ROUND_HALF_UP)
    status = CostStatus.ESTIMATED if tokens_estimated else CostStatus.KNOWN
    return cost, status.value


def cost_now(*, model: ModelEntry, result) -> tuple[Decimal | None, str]:
    """``answer_cost`` of a stream that ended just now; ``result`` has ``input_tokens``,
    ``output_tokens`` and ``tokens_estimated`` (the runner's StreamResult)."""
    return answer_cost(
        model=model,
        on=timezone.localdate(),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        tokens_estimated=result.tokens_estimated,
    )


def cost_display(*, model: ModelEntry, cost: Decimal | None, cost_status: str) -> str:
    """How admin shows a cost: mock models say so in words instead of showing a figure."""
    if cost_status == CostStatus.EXAMPLE or model.backend == ModelEntry.Backend.MOCK:
        return f"{EXAMPLE_DISCLOSURE}: not a real cost"
    if not cost_status:
        return "not computed"
    if cost is None:
        return CostStatus(cost_status).label.lower()
    return f"{cost.normalize():f} ({CostStatus(cost_status).label.lower()})"
