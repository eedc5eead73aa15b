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


def rates(*, price: ModelPrice, input_tokens: int) -> tuple[Decimal, Decimal, bool]:
    """(input, output) per million tokens for a request reading ``input_tokens``, and whether
    its long-context tier was crossed (then the tier's prices apply to the whole request)."""
    threshold = price.long_context_threshold
    if (
        threshold is not None
        and input_tokens > threshold
        and price.long_context_input_per_million is not None
        and price.long_context_output_per_million is not None
    ):
        tier = (price.long_context_input_per_million, price.long_context_output_per_million)
        return tier[0], tier[1], True
    return price.input_per_million, price.output_per_million, False


def estimated_because(
    *, price: ModelPrice, input_tokens: int, tokens_estimated: bool, reasoned: bool
) -> list[str]:
    """Why a cost at ``price`` is an estimate rather than known (empty: it is known)."""
    why = []
    if tokens_estimated:
        why.append("token counts estimated (the backend sent no usage)")
    if price.is_from_price:
        why.append('a "from" price')
    if rates(price=price, input_tokens=input_tokens)[2]:
        why.append(f"past the long-context threshold of {price.long_context_threshold:,} tokens")
    if reasoned and not price.reasoning_billing_confirmed:
        why.append("reasoning billing not confirmed")
    return why


def answer_cost(
    *,
    model: ModelEntry,
    on: date,
    input_tokens: int | None,
    output_tokens: int | None,
    tokens_estimated: bool,
    reasoned: bool = False,
) -> tuple[Decimal | None, str]:
    """(cost, CostStatus value) of one answer generated on ``on``.

    The cost is None when it cannot be told: no price for that day, or no token counts at all.
    It is ``estimated`` when the token counts are, when the price is a "from" price, when the
    request crossed the price's long-context threshold (the tier's prices are used), or when
    the answer reasoned (``reasoned``) and the price does not confirm how reasoning is billed.
    """
    if is_example_pricing(model=model):
        return Decimal("0"), CostStatus.EXAMPLE.value
    price = price_on(model=model, on=on)
    if price is None or input_tokens is None or output_tokens is None:
        return None, CostStatus.UNKNOWN.value
    per_in, per_out, _ = rates(price=price, input_tokens=input_tokens)
    cost = (
        Decimal(input_tokens) * per_in / MILLION + Decimal(output_tokens) * per_out / MILLION
    ).quantize(QUANTUM, rounding=ROUND_HALF_UP)
    why = estimated_because(
        price=price, input_tokens=input_tokens, tokens_estimated=tokens_estimated,
        reasoned=reasoned,
    )  # fmt: skip
    status = CostStatus.ESTIMATED if why else CostStatus.KNOWN
    return cost, status.value


def cost_now(*, model: ModelEntry, result) -> tuple[Decimal | None, str]:
    """``answer_cost`` of a stream that ended just now; ``result`` has ``input_tokens``,
    ``output_tokens``, ``tokens_estimated`` and ``reasoning`` (the runner's StreamResult)."""
    return answer_cost(
        model=model,
        on=timezone.localdate(),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        tokens_estimated=result.tokens_estimated,
        reasoned=bool(getattr(result, "reasoning", "")),
    )


def combined_status(statuses: list[str]) -> str:
    """The status of a sum of costs: unknown if any part is (the sum is then a lower bound),
    else estimated if any part is, else known if any part is a real cost, else example; ""
    for nothing."""
    for status in (CostStatus.UNKNOWN, CostStatus.ESTIMATED, CostStatus.KNOWN):
        if status in statuses:
            return status.value
    return CostStatus.EXAMPLE.value if CostStatus.EXAMPLE in statuses else ""


def plain(amount: Decimal | None) -> str | None:
    """A cost as a plain decimal string for exports: never an exponent (``0E-8``), no trailing
    zeros; None stays None."""
    if amount is None:
        return None
    text = f"{amount.normalize():f}"
    return "0" if text in {"-0", "0"} else text


def cost_display(*, model: ModelEntry, cost: Decimal | None, cost_status: str) -> str:
    """How admin shows a cost: mock models say so in words instead of showing a figure."""
    if cost_status == CostStatus.EXAMPLE or model.backend == ModelEntry.Backend.MOCK:
        return f"{EXAMPLE_DISCLOSURE}: not a real cost"
    if not cost_status:
        return "not computed"
    if cost is None:
        return CostStatus(cost_status).label.lower()
    return f"{cost.normalize():f} ({CostStatus(cost_status).label.lower()})"
