"""Prices as seed 000 keeps them: a source URL and retrieval date, and what makes a cost
estimated rather than known: a "from" price, a long-context tier crossed (its prices then
apply to the whole request), reasoning whose billing the price does not confirm."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from arena.catalog import costs
from arena.catalog.models import ModelEntry, ModelPrice

JUNE = date(2025, 6, 15)


@pytest.fixture
def model(db) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name="Granite Finch", model_id="gf-1",
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": "http://vllm.invalid/v1"},
    )  # fmt: skip


def price(model: ModelEntry, **fields) -> ModelPrice:
    return ModelPrice.objects.create(
        model=model, input_per_million=Decimal("2"), output_per_million=Decimal("10"),
        effective_from=date(2025, 1, 1), source_url="https://vendor.example/pricing",
        retrieved_on=date(2025, 1, 2), **fields,
    )  # fmt: skip


def cost(model: ModelEntry, i: int = 1000, o: int = 100, *, reasoned: bool = False):
    return costs.answer_cost(
        model=model, on=JUNE, input_tokens=i, output_tokens=o, tokens_estimated=False,
        reasoned=reasoned,
    )  # fmt: skip


def test_a_price_keeps_where_and_when_it_was_read(model):
    row = price(model)
    row.refresh_from_db()
    assert row.source_url == "https://vendor.example/pricing"
    assert row.retrieved_on == date(2025, 1, 2) and row.source_note == ""
    assert cost(model) == (Decimal("0.003"), "known")


def test_a_from_price_gives_an_estimate(model):
    price(model, is_from_price=True)
    assert cost(model) == (Decimal("0.003"), "estimated")


def test_past_the_long_context_threshold_the_tier_prices_the_whole_request(model):
    row = price(
        model, long_context_threshold=2000,
        long_context_input_per_million=Decimal("4"), long_context_output_per_million=Decimal("20"),
    )  # fmt: skip
    assert cost(model, i=2000) == (Decimal("0.005"), "known")  # at the threshold: not crossed
    assert cost(model, i=3000) == (Decimal("0.014"), "estimated")  # 3000*4 + 100*20
    why = costs.estimated_because(price=row, input_tokens=3000, tokens_estimated=False,
                                  reasoned=False)  # fmt: skip
    assert why == ["past the long-context threshold of 2,000 tokens"]


def test_reasoning_is_estimated_until_its_billing_is_confirmed(model):
    row = price(model)
    assert cost(model) == (Decimal("0.003"), "known")  # no reasoning: nothing to confirm
    assert cost(model, reasoned=True)[1] == "estimated"
    row.reasoning_billing_confirmed = True
    row.save()
    assert cost(model, reasoned=True)[1] == "known"


def test_the_stream_result_says_whether_the_model_reasoned(model):
    price(model)

    class Result:
        input_tokens, output_tokens, tokens_estimated, reasoning = 1000, 100, False, "hmm"

    assert costs.cost_now(model=model, result=Result())[1] == "estimated"


def test_a_tier_needs_its_threshold_and_both_prices(model):
    row = ModelPrice(
        model=model, input_per_million=Decimal("1"), output_per_million=Decimal("1"),
        effective_from=JUNE, long_context_threshold=1000,
    )  # fmt: skip
    with pytest.raises(ValidationError, match="threshold and both of its prices"):
        row.full_clean()


def test_a_sum_of_costs_takes_the_weakest_status_and_prints_plainly():
    assert costs.combined_status(["known", "estimated", "example"]) == "estimated"
    assert costs.combined_status(["known", "unknown"]) == "unknown"
    assert costs.combined_status(["example", "known"]) == "known"
    assert costs.combined_status(["example"]) == "example" and costs.combined_status([]) == ""
    assert costs.plain(Decimal("0E-8")) == "0" and costs.plain(None) is None
    assert costs.plain(Decimal("0.01230000")) == "0.0123"
    assert costs.plain(Decimal("1.5E+3")) == "1500"


def test_the_admin_takes_a_source_and_refuses_half_a_tier(admin_client, model):
    url = reverse("admin:arena_modelentry_change", args=[model.pk])
    form = {
        "public_name": model.public_name, "model_id": model.model_id, "backend": model.backend,
        "backend_settings": '{"base_url": "http://vllm.invalid/v1"}', "supported_params": "[]",
        "active": "on", "prices-TOTAL_FORMS": "1", "prices-INITIAL_FORMS": "0",
        "prices-0-effective_from": "2025-01-01", "prices-0-input_per_million": "3",
        "prices-0-output_per_million": "15", "prices-0-long_context_threshold": "200000",
        "prices-0-source_url": "https://vendor.example/pricing",
        "prices-0-retrieved_on": "2025-01-02",
    }  # fmt: skip
    refused = admin_client.post(url, form)
    assert refused.status_code == 200 and b"threshold and both of its prices" in refused.content
    form["prices-0-long_context_input_per_million"] = "6"
    form["prices-0-long_context_output_per_million"] = "22.5"
    assert admin_client.post(url, form).status_code == 302
    row = model.prices.get()
    assert row.source_url == "https://vendor.example/pricing"
    assert row.retrieved_on == date(2025, 1, 2)
    assert row.long_context_output_per_million == Decimal("22.5")
