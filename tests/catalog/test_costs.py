"""Answer costs: the price in force on the day, Decimal arithmetic, and mock models at zero."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from arena.catalog import costs
from arena.catalog.models import CostStatus, ModelEntry, ModelPrice
from arena.records.models import Answer
from tests.helpers import make_model, ready_battle, serving

JUNE = date(2025, 6, 15)


def priced_model(name: str = "Granite Finch", model_id: str = "gf-1", **settings) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name=name,
        model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": "http://vllm.invalid/v1", **settings},
    )


def add_price(
    model: ModelEntry,
    effective_from: date,
    input_per_million: str = "3.0000",
    output_per_million: str = "15.0000",
    *,
    is_example: bool = False,
) -> ModelPrice:
    return ModelPrice.objects.create(
        model=model,
        input_per_million=Decimal(input_per_million),
        output_per_million=Decimal(output_per_million),
        effective_from=effective_from,
        source_note="vendor price page",
        is_example=is_example,
    )


def cost_of(
    model: ModelEntry, on: date = JUNE, i: int | None = 1234, o: int | None = 567, *, est=False
):
    return costs.answer_cost(
        model=model, on=on, input_tokens=i, output_tokens=o, tokens_estimated=est
    )


def test_known_cost_from_the_price_in_force(db):
    model = priced_model()
    add_price(model, date(2025, 1, 1))

    assert cost_of(model) == (Decimal("0.012207"), "known")


def test_estimated_tokens_give_an_estimated_cost(db):
    model = priced_model()
    add_price(model, date(2025, 1, 1))

    assert cost_of(model, est=True) == (Decimal("0.012207"), "estimated")


def test_no_price_yet_on_that_day_is_unknown(db):
    model = priced_model()
    add_price(model, date(2025, 7, 1))

    assert cost_of(model, on=date(2025, 6, 30)) == (None, "unknown")
    assert costs.price_on(model=model, on=date(2025, 6, 30)) is None


def test_a_model_without_prices_is_unknown(db):
    assert cost_of(priced_model()) == (None, "unknown")


def test_missing_token_counts_are_unknown(db):
    model = priced_model()
    add_price(model, date(2025, 1, 1))

    assert cost_of(model, o=None) == (None, "unknown")


def test_a_price_change_applies_from_its_day_and_the_older_price_before_it(db):
    model = priced_model()
    old = add_price(model, date(2025, 1, 1), "3.0000", "15.0000")
    new = add_price(model, date(2025, 3, 1), "1.0000", "5.0000")
    add_price(priced_model("Other Model", "om-1"), date(2025, 2, 1), "99.0000", "99.0000")

    assert costs.price_on(model=model, on=date(2025, 2, 28)) == old
    assert costs.price_on(model=model, on=date(2025, 3, 1)) == new
    assert cost_of(model, on=date(2025, 2, 28), i=1_000_000, o=0) == (Decimal("3"), "known")
    assert cost_of(model, on=date(2025, 3, 1), i=1_000_000, o=0) == (Decimal("1"), "known")
    assert cost_of(model, on=date(2024, 12, 31)) == (None, "unknown")


def test_mock_models_always_cost_zero_as_example_pricing(db):
    bare = make_model("Zephyr Quill", "zq-large-001")
    priced_mock = make_model("Orchid Lantern", "ol-small-002")
    add_price(priced_mock, date(2025, 1, 1))

    assert cost_of(bare) == (Decimal("0"), "example")
    assert cost_of(priced_mock) == (Decimal("0"), "example")
    assert cost_of(priced_mock, on=date(2020, 1, 1), i=None, o=None) == (Decimal("0"), "example")


def test_example_price_rows_mark_an_http_model_as_a_mock(db):
    # E.g. the mock server reached over HTTP: any example row means no real-looking figure.
    model = priced_model()
    add_price(model, date(2025, 1, 1))
    add_price(model, date(2025, 6, 1), is_example=True)

    assert cost_of(model, on=date(2025, 3, 1)) == (Decimal("0"), "example")
    assert cost_of(model, on=date(2025, 7, 1)) == (Decimal("0"), "example")


def test_decimal_arithmetic_is_exact_and_quantized_to_eight_places(db):
    model = priced_model()
    add_price(model, date(2025, 1, 1), "3.0000", "15.0000")
    tiny = priced_model("Tiny", "tiny-1")
    add_price(tiny, date(2025, 1, 1), "0.0050", "0.0001")

    cost, _ = cost_of(model)
    half_up, _ = cost_of(tiny, i=1, o=0)  # 0.000000005: half a unit of the last place
    below, _ = cost_of(tiny, i=0, o=1)  # 0.0000000001

    assert isinstance(cost, Decimal) and cost == Decimal("0.012207")
    assert str(cost) == "0.01220700"
    assert half_up == Decimal("0.00000001")
    assert below == Decimal("0")
    assert cost_of(model, i=10**9, o=10**9)[0] == Decimal("18000")


def test_cost_display_discloses_example_pricing(db):
    mock = make_model("Zephyr Quill", "zq-large-001")
    http = priced_model()

    shown = costs.cost_display(model=mock, cost=Decimal("0"), cost_status="example")
    assert "example pricing (mock)" in shown and "0" not in shown
    assert costs.cost_display(model=http, cost=Decimal("0.01220700"), cost_status="known") == (
        "0.012207 (known)"
    )
    assert "unknown" in costs.cost_display(model=http, cost=None, cost_status="unknown")


# End to end ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("generation")
def test_generated_mock_answers_are_saved_as_example_pricing(alice, two_models, admin_client):
    battle = ready_battle(alice)

    answers = list(Answer.objects.filter(turn__battle=battle))
    assert len(answers) == 2
    assert {a.cost_status for a in answers} == {CostStatus.EXAMPLE}
    assert all(a.cost == 0 for a in answers)
    page = admin_client.get(reverse("admin:arena_battle_change", args=[battle.pk]))
    assert page.content.decode().count("example pricing (mock)") == 2


@pytest.mark.usefixtures("generation")
def test_generated_http_answers_get_their_known_cost(alice, admin_client):
    with serving(models={"gf-1": {}, "hb-2": {}}) as server:
        for name, model_id in (("Granite Finch", "gf-1"), ("Heron Bay", "hb-2")):
            model = priced_model(name, model_id, base_url=server.url)
            add_price(model, date(2020, 1, 1), "3.0000", "15.0000")
        battle = ready_battle(alice)

    answers = list(Answer.objects.filter(turn__battle=battle))
    assert {a.status for a in answers} == {Answer.Status.OK}
    page = admin_client.get(reverse("admin:arena_battle_change", args=[battle.pk])).content
    for answer in answers:
        expected = (
            Decimal(answer.input_tokens) * 3 + Decimal(answer.output_tokens) * 15
        ) / Decimal(1_000_000)
        assert answer.cost_status == CostStatus.KNOWN
        assert answer.cost == expected and answer.cost > 0
        assert f"{answer.cost.normalize():f} (known)" in page.decode()
    assert b"example pricing" not in page


def test_prices_are_edited_inline_on_the_model(admin_client):
    model = priced_model()
    url = reverse("admin:arena_modelentry_change", args=[model.pk])

    response = admin_client.post(
        url,
        {
            "public_name": model.public_name,
            "model_id": model.model_id,
            "backend": model.backend,
            "backend_settings": '{"base_url": "http://vllm.invalid/v1"}',
            "supported_params": "[]",
            "active": "on",
            "prices-TOTAL_FORMS": "1",
            "prices-INITIAL_FORMS": "0",
            "prices-0-effective_from": "2025-01-01",
            "prices-0-input_per_million": "3.0000",
            "prices-0-output_per_million": "15.0000",
            "prices-0-source_note": "vendor price page, 2025-01",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    price = model.prices.get()
    assert price.input_per_million == Decimal("3.0000") and not price.is_example
    assert "prices per million tokens" in admin_client.get(url).content.decode().lower()
