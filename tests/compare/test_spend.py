"""Compare mode's spend limits, through the service on the real database: each model's
max_tokens limit, the daily budget (known, estimated and in-flight costs, today only), the
runs-at-once cap, and who may judge. Refused runs are never created; nothing here generates."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from arena.catalog.models import ModelEntry, ModelPrice
from arena.compare import services, spend
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.core.errors import ServiceError
from arena.judges import rubric as judge
from tests.helpers import make_judge, make_model, make_two_models

pytestmark = pytest.mark.django_db


def priced(name: str, *, backend: str = "openai_compatible", active: bool = True, **wire):
    """A real-vendor model at $3 in, $15 out per million tokens (never called here)."""
    model = ModelEntry.objects.create(
        public_name=name,
        model_id=name.lower().replace(" ", "-"),
        backend=backend,
        backend_settings={"base_url": "http://127.0.0.1:9", **wire},
        active=active,
    )
    ModelPrice.objects.create(
        model=model,
        input_per_million=Decimal(3),
        output_per_million=Decimal(15),
        effective_from=timezone.localdate() - timedelta(days=30),
        source_note="test list price",
    )
    return model


def start(user, models, **kwargs) -> CompareRun:
    return services.compare_start(
        user=user, prompt="Hi?", model_ids=[m.pk for m in models], **kwargs
    )


def refused(user, models, **kwargs) -> ServiceError:
    before = CompareRun.objects.count()
    with pytest.raises(ServiceError) as caught:
        start(user, models, **kwargs)
    assert CompareRun.objects.count() == before
    return caught.value


def ended_run(user, models, costs, *, judge_model=None, days_ago: int = 0) -> CompareRun:
    run = CompareRun.objects.create(
        user=user, prompt="Earlier", seed=1, deadline_s=120, judge=judge_model,
        status=CompareRun.Status.DONE,
    )  # fmt: skip
    for slot, (model, cost) in enumerate(zip(models, costs, strict=True)):
        CompareAnswer.objects.create(
            run=run, slot=slot, label="AB"[slot], model=model, status="ok",
            cost=Decimal(cost), cost_status="known",
        )  # fmt: skip
    CompareRun.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(days=days_ago)
    )
    return run


def test_max_tokens_over_a_models_own_limit_is_refused_naming_the_model_and_limit(staff):
    capped = priced("Capped Crane", backend="anthropic", max_tokens=4000)
    plain = priced("Plain Pelican")
    error = refused(staff, [plain, capped], params={"max_tokens": 4001})
    assert error.code == "max_tokens_over_limit"
    assert "max_tokens 4,001 is over Capped Crane's limit of 4,000" in error.message
    # Without a limit of its own, a model's is COMPARE["MAX_TOKENS"].
    error = refused(staff, [capped, plain], params={"max_tokens": 100_000})
    assert "over Capped Crane's limit of 4,000" in error.message
    error = refused(staff, [plain, make_model("Mock Moth", "mm-1")], params={"max_tokens": 9000})
    assert "over Plain Pelican's limit of 8,192" in error.message
    assert start(staff, [plain, capped], params={"max_tokens": 4000}).params["max_tokens"] == 4000


def test_a_run_that_would_pass_the_daily_budget_is_refused_counting_all_of_todays_spend(
    staff, settings
):
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("1.00")}
    a, b, judge_model = priced("Alpha Auk"), priced("Beta Bittern"), priced("Judge Jay")
    # Ended today: $0.30 of answers, and judge calls that read 100,000 tokens ($0.30 at $3/M).
    earlier = ended_run(staff, [a, b], ["0.20", "0.10"], judge_model=judge_model)
    JudgeCall.objects.create(run=earlier, purpose="correctness", request="x" * 400_000)
    # Yesterday's $50 is yesterday's.
    ended_run(staff, [a, b], ["25", "25"], days_ago=1)
    # Still going: counted at its estimate, 2 x 8,192 tokens at $15/M = $0.2458.
    going = start(staff, [a, b])
    assert going.status == CompareRun.Status.QUEUED
    # $0.60 + $0.2458 spent; this one's $0.2458 more would pass $1.00. Each part counts:
    # leave out the answers, the judge's calls or the run going, and it would fit.
    error = refused(staff, [a, b], params={"max_tokens": 8192})
    assert error.code == "over_budget"
    assert "daily compare budget of $1.00" in error.message
    assert "could cost up to $0.2458" in error.message
    # Half the tokens fit ($0.12): the estimate is max_tokens at each model's price.
    assert start(staff, [a, b], params={"max_tokens": 4000}).status == CompareRun.Status.QUEUED


def test_a_priced_model_is_asked_for_at_most_the_tokens_its_estimate_counted():
    capped = priced("Capped Crane", backend="anthropic", max_tokens=4000)
    capped.supported_params = ["max_tokens"]
    plain = priced("Plain Pelican")
    plain.supported_params = ["temperature", "max_tokens"]
    free = make_model("Mock Moth", "mm-1")
    # Empty max_tokens: a model that costs money gets its limit, a free one its own length.
    assert spend.request_params(capped, {}) == {"max_tokens": 4000}
    assert spend.request_params(plain, {"temperature": 0.2}) == {
        "temperature": 0.2,
        "max_tokens": 8192,
    }
    assert spend.request_params(free, {}) == {}
    assert spend.request_params(plain, {"max_tokens": 100}) == {"max_tokens": 100}


def test_cancelling_runs_is_no_way_to_spend_past_the_budget(staff, settings):
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("1.00")}
    a, b = priced("Alpha Auk"), priced("Beta Bittern")
    # Each run may cost 2 x 8,192 tokens at $15/M = $0.2458: four fit in $1.00, not five,
    # however many of them were cancelled (their answers end with no cost of their own).
    for _ in range(4):
        run = start(staff, [a, b])
        services.compare_cancel(run_id=run.pk, user=staff)
        run.refresh_from_db()
        assert run.status == CompareRun.Status.CANCELLED
        CompareAnswer.objects.filter(run=run).update(status="partial", cost=None)
    assert refused(staff, [a, b]).code == "over_budget"


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
def test_today_is_the_sites_day_from_its_local_midnight(staff, settings, zone):
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("0.30")}
    a, b = priced("Alpha Auk"), priced("Beta Bittern")
    with timezone.override(zone):  # UTC+14 and UTC-11: neither day is UTC's
        midnight = timezone.make_aware(datetime.combine(timezone.localdate(), time.min))
        for cost, at in (("0.40", midnight - timedelta(minutes=1)), ("0.02", midnight)):
            run = ended_run(staff, [a, b], [cost, "0"])
            CompareRun.objects.filter(pk=run.pk).update(created_at=at)
        # $0.02 today and $0.2458 for this one fit $0.30; last night's $0.40 is not today's.
        first = start(staff, [a, b])
        assert services.compare_cancel(run_id=first.pk, user=staff)  # ended, costing nothing
        # Had last night's run come at midnight, it would be today's.
        CompareRun.objects.filter(prompt="Earlier").update(created_at=midnight)
        assert refused(staff, [a, b]).code == "over_budget"


def test_the_judges_calls_count_in_a_runs_estimate(staff, settings):
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("0.50")}
    a, b, judge_model = priced("Alpha Auk"), priced("Beta Bittern"), priced("Judge Jay")
    # Answers alone: $0.2458. The judge reads both answers once per criterion and twice more
    # head to head: about $0.06 a call, past $0.50 with the default rubric's criteria.
    assert len(judge.DEFAULT_RUBRIC) + 2 >= 5
    error = refused(staff, [a, b], judge_id=judge_model.pk)
    assert error.code == "over_budget"
    assert start(staff, [a, b]).judge_id is None
    # Mock models and the mock judge cost nothing, so they run on a budget of nothing.
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("0")}
    assert refused(staff, [a, b], params={"max_tokens": 1}).code == "over_budget"
    zq, ol = make_two_models()
    assert start(staff, [zq, ol], judge_id=make_judge().pk).status == CompareRun.Status.QUEUED


def test_a_user_may_have_only_so_many_runs_going_at_once(staff, settings):
    zq, ol = make_two_models()
    first, second = start(staff, [zq, ol]), start(staff, [zq, ol])
    error = refused(staff, [zq, ol])
    assert error.code == "too_many_runs" and "at most 2 may run at once" in error.message
    assert services.compare_cancel(run_id=first.pk, user=staff)
    CompareRun.objects.filter(pk=second.pk).update(status=CompareRun.Status.JUDGING)
    third = start(staff, [zq, ol])
    assert refused(staff, [zq, ol]).code == "too_many_runs"  # judging still counts
    settings.COMPARE = {**settings.COMPARE, "MAX_CONCURRENT_RUNS": 3}
    assert start(staff, [zq, ol]).pk not in (first.pk, second.pk, third.pk)


def test_an_inactive_model_may_not_judge_unless_named_a_judge_in_settings(staff, settings):
    zq, ol = make_two_models()
    retired = priced("Retired Rook", active=False)
    error = refused(staff, [zq, ol], judge_id=retired.pk)
    assert error.code == "unknown_judge" and f"Model {retired.pk} may not judge" in error.message
    # The configured judge (COMPARE_JUDGE_MODEL) is kept out of battles, and may judge.
    assert start(staff, [zq, ol], judge_id=make_judge().pk).judge.public_name == "Mock Judge"
    settings.COMPARE = {**settings.COMPARE, "JUDGES": ["Retired Rook"], "MAX_CONCURRENT_RUNS": 9}
    assert start(staff, [zq, ol], judge_id=retired.pk).judge_id == retired.pk
    # The form offers only those who may judge.
    settings.COMPARE = {**settings.COMPARE, "JUDGES": []}
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("compare")).content.decode()
    assert "Mock Judge</option>" in page and "Retired Rook</option>" not in page


def test_the_form_shows_todays_spend_and_a_refusal_keeps_what_was_typed(staff, settings):
    settings.COMPARE = {**settings.COMPARE, "DAILY_BUDGET_USD": Decimal("0.10")}
    a, b = priced("Alpha Auk"), priced("Beta Bittern")
    ended_run(staff, [a, b], ["0.02", "0.01"])
    client = Client()
    client.force_login(staff)
    page = client.post(
        reverse("compare"),
        {"prompt": "Keep me, please", "models": [a.pk, b.pk], "max_tokens": "8000"},
    )
    body = page.content.decode()
    assert page.status_code == 400 and "passes your daily compare budget of $0.10" in body
    assert "Keep me, please</textarea>" in body and 'value="8000"' in body
    assert "spent $0.03 of your daily compare budget of $0.10" in body
