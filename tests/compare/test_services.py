"""Compare runs through the real HTTP path: the mock OpenAI-compatible server streams every
contestant and judges them, through the same adapter and pool code as battles."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from arena.catalog.models import ModelEntry, ModelPrice
from arena.compare import exports, judging, services
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.core.errors import ServiceError
from arena.devtools.mock_server import MockServer

pytestmark = pytest.mark.usefixtures("transactional_db")
PROMPT = "Explain the CAP theorem in three sentences."


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def http_model(server, name: str, model_id: str, *, vendor: str = "", params=None, **mock):
    server.models[model_id] = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 30, **mock}
    return ModelEntry.objects.create(
        public_name=name,
        vendor=vendor,
        organisation=f"{name} Org",
        model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": server.url, "timeout_s": mock.pop("timeout_s", 10)},
        supported_params=["temperature", "top_p", "max_tokens"] if params is None else params,
    )


def judge_model(server, **mock) -> ModelEntry:
    return http_model(server, "Fair Judge", "judge-1", vendor="judgevendor", judge=True, **mock)


async def run(staff, models, judge=None, **kwargs) -> CompareRun:
    created = await database_sync_to_async(services.compare_start)(
        user=staff,
        prompt=PROMPT,
        model_ids=[m.pk for m in models],
        judge_id=judge.pk if judge else None,
        **kwargs,
    )
    return await services.compare_execute(created.pk)


def answers_of(done: CompareRun) -> dict[str, CompareAnswer]:
    return {a.model.public_name: a for a in done.answers.select_related("model")}


async def test_a_parameter_a_model_does_not_support_is_refused_naming_both(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Able", "able-1"), await make(server, "Bare", "bare-1", params=[])]
    with pytest.raises(ServiceError) as err:
        await run(staff, models, params={"top_p": 0.9})
    assert err.value.message == (
        "Bare does not support 'top_p'. Clear it for all models, or remove the model."
    )
    with pytest.raises(ServiceError, match="Pick 2 to 8"):
        await run(staff, models[:1])


async def test_every_model_streams_at_once_and_the_judge_sees_no_name(server, staff):
    make = database_sync_to_async(http_model)
    # A first token slow enough that streams taken in turn could never overlap.
    models = [await make(server, f"Model {n}", f"m-{n}", ttft_ms=400) for n in "PQRS"]
    models.append(await make(server, "Zephyr Quill", "zq-1", prefix="I am Zephyr Quill. "))
    judge = await database_sync_to_async(judge_model)(server)
    done = await run(staff, models, judge=judge, seed=11)
    assert server.max_in_flight >= 5  # all five contestants at once
    answers = await database_sync_to_async(answers_of)(done)
    assert {a.status for a in answers.values()} == {"ok"}
    assert all(a.ttft_ms is not None and a.total_ms >= a.ttft_ms for a in answers.values())
    calls = await database_sync_to_async(lambda: list(JudgeCall.objects.filter(run=done)))()
    assert {c.purpose for c in calls} >= {"correctness", "completeness", "clarity", "safety"}
    assert all("Zephyr" not in c.request and "[MODEL]" in c.request for c in calls)
    assert len({tuple(c.order) for c in calls}) > 1  # a fresh order in each call
    assert set(done.verdict["overall"]) == {a.label for a in answers.values()}
    again = await run(staff, models, seed=11)
    assert {a.model_id: a.label for a in answers.values()} == {
        a.model_id: a.label for a in (await database_sync_to_async(answers_of)(again)).values()
    }


async def test_a_failing_model_keeps_its_partial_text_and_is_not_judged(server, staff):
    make = database_sync_to_async(http_model)
    good = await make(server, "Good", "good-1")
    bad = await make(server, "Breaks", "bad-1", misbehaviour="error_midstream", answer_tokens=40)
    slow = await make(server, "Stalls", "stall-1", misbehaviour="stall", timeout_s=1)
    judge = await database_sync_to_async(judge_model)(server)
    done = await run(staff, [good, bad, slow], judge=judge)
    answers = await database_sync_to_async(answers_of)(done)
    assert answers["Good"].status == "ok" and answers["Good"].not_judged == ""
    assert answers["Breaks"].status == "partial" and answers["Breaks"].text
    assert answers["Breaks"].not_judged == judging.PARTIAL_NOTE
    assert (answers["Stalls"].status, answers["Stalls"].error_kind) == ("error", "timeout")
    assert answers["Stalls"].not_judged == judging.FAILED_NOTE


async def test_the_judge_retries_bad_json_and_leaves_out_what_never_parses(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Able", "able-1"), await make(server, "Bold", "bold-1")]
    once = await database_sync_to_async(judge_model)(server, misbehaviour="judge_bad_json_once")
    done = await run(staff, models, judge=once)
    calls = await database_sync_to_async(lambda: list(done.judge_calls.all()))()
    tries = [(c.purpose, c.attempt, bool(c.problem)) for c in calls if c.purpose == "clarity"]
    assert tries == [("clarity", 1, True), ("clarity", 2, False)]
    assert done.verdict["missing"] == []
    server.models["judge-1"]["misbehaviour"] = "judge_bad_json_always"
    done = await run(staff, models, judge=once)
    assert done.verdict["missing"] == ["correctness", "completeness", "clarity", "safety"]
    assert done.verdict["overall"] == {} and done.verdict["winner"] == ""
    calls = await database_sync_to_async(lambda: list(done.judge_calls.all()))()
    assert len(calls) == 4 * 3  # each criterion: the call and two retries


async def test_a_judge_that_rejects_temperature_is_asked_without_it(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Able", "able-1"), await make(server, "Bold", "bold-1")]
    picky = await database_sync_to_async(judge_model)(
        server, misbehaviour="judge_rejects_temperature"
    )
    done = await run(staff, models, judge=picky)
    assert done.verdict["temperature_dropped"] is True
    assert done.verdict["missing"] == []
    calls = await database_sync_to_async(lambda: list(done.judge_calls.all()))()
    assert {c.temperature_sent for c in calls} == {False}


async def test_a_judge_that_refuses_every_request_is_recorded_as_it_was_asked(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Able", "able-1"), await make(server, "Bold", "bold-1")]
    refusing = await MockServer(fail_with=400).start()
    try:
        picky = await database_sync_to_async(judge_model)(refusing)
        done = await run(staff, models, judge=picky)
    finally:
        await refusing.stop()
    calls = await database_sync_to_async(lambda: list(done.judge_calls.order_by("pk")))()
    # Asked once more without temperature, in vain: that call says so, and later calls carry
    # temperature again (it was not the cause).
    assert calls and calls[0].temperature_sent is False
    assert all(c.temperature_sent for c in calls[1:])
    assert done.verdict["temperature_dropped"] is False


async def test_the_judge_does_not_score_its_own_family(server, staff):
    make = database_sync_to_async(http_model)
    kin = await make(server, "Kin", "kin-1", vendor="judgevendor")
    other = await make(server, "Other", "other-1", vendor="elsewhere")
    router = await make(server, "Routed", "judgevendor/routed-1")
    judge = await database_sync_to_async(judge_model)(server)
    done = await run(staff, [kin, other, router], judge=judge)
    answers = await database_sync_to_async(answers_of)(done)
    assert answers["Kin"].not_judged == judging.FAMILY_NOTE
    assert answers["Other"].not_judged == ""
    assert answers["Routed"].not_judged == judging.FAMILY_NOTE  # by its OpenRouter-style id


async def test_identical_answers_go_head_to_head_and_a_judge_that_disagrees_with_itself_ties(
    server, staff
):
    make = database_sync_to_async(http_model)
    # The same model through two routes: the same answer. The mock judge's scores hash the
    # label too; for this id and PROMPT the two land within the margin (0.4875 and 0.4625).
    twins = [await make(server, "Route One", "twin-2"), await make(server, "Route Two", "twin-2")]
    biased = await database_sync_to_async(judge_model)(server, misbehaviour="judge_prefers_first")
    done = await run(staff, twins, judge=biased)
    first, second = done.verdict["head_to_head"]
    assert first != second and done.verdict["winner"] == "tie"
    server.models["judge-1"]["misbehaviour"] = ""  # a fair judge: identical answers, a tie
    done = await run(staff, twins, judge=biased)
    assert done.verdict["head_to_head"] == ["tie", "tie"] and done.verdict["winner"] == "tie"


async def test_costs_say_known_estimated_unknown_or_example_and_never_invent_a_bill(server, staff):
    make = database_sync_to_async(http_model)
    priced = await make(server, "Priced", "priced-1")
    no_usage = await make(server, "Quiet", "quiet-1", misbehaviour="no_usage")
    unpriced = await make(server, "Unpriced", "unpriced-1")
    for model in (priced, no_usage):
        await database_sync_to_async(ModelPrice.objects.create)(
            model=model,
            input_per_million=Decimal("1.00"),
            output_per_million=Decimal("2.00"),
            effective_from=date(2020, 1, 1),
            source_note="test",
        )
    mock = await database_sync_to_async(ModelEntry.objects.create)(
        public_name="Mocky", model_id="mocky-1", backend="mock", supported_params=[]
    )
    done = await run(staff, [priced, no_usage, unpriced, mock])
    answers = await database_sync_to_async(answers_of)(done)
    assert answers["Priced"].cost_status == "known" and answers["Priced"].cost > 0
    assert answers["Quiet"].cost_status == "estimated" and answers["Quiet"].tokens_estimated
    assert (answers["Unpriced"].cost, answers["Unpriced"].cost_status) == (None, "unknown")
    assert (answers["Mocky"].cost, answers["Mocky"].cost_status) == (0, "example")
    markdown = await database_sync_to_async(exports.as_markdown)(done)
    assert "example pricing (mock)" in markdown and "| Priced |" in markdown
    csv_text = await database_sync_to_async(exports.as_csv)(done)
    assert csv_text.splitlines()[0].startswith('"slot","label","model","status"')
    assert len(csv_text.strip().splitlines()) == 5


async def test_a_cancelled_run_stops_every_stream_and_keeps_what_came(server, staff):
    make = database_sync_to_async(http_model)
    models = [
        await make(server, "Stuck One", "stuck-1", misbehaviour="stall"),
        await make(server, "Stuck Two", "stuck-2", misbehaviour="stall"),
    ]
    created = await database_sync_to_async(services.compare_start)(
        user=staff, prompt=PROMPT, model_ids=[m.pk for m in models]
    )
    running = asyncio.ensure_future(services.compare_execute(created.pk))
    while server.in_flight < 2:  # both streams open
        await asyncio.sleep(0.01)
    assert await database_sync_to_async(services.compare_cancel)(run_id=created.pk, user=staff)
    done = await running
    assert done.status == "cancelled"
    answers = await database_sync_to_async(answers_of)(done)
    assert {(a.status, a.error_kind) for a in answers.values()} == {("error", "cancelled")}


async def test_a_run_past_its_deadline_ends_each_model_then_and_a_dead_run_is_failed(
    server, staff, settings
):
    settings.COMPARE = {**settings.COMPARE, "RUN_DEADLINE_S": 1.0}
    make = database_sync_to_async(http_model)
    patient = await make(server, "Patient", "patient-1", misbehaviour="stall", timeout_s=30)
    cut = await make(server, "Cut", "cut-1", misbehaviour="missing_terminal", answer_tokens=40)
    done = await run(staff, [patient, cut])
    answers = await database_sync_to_async(answers_of)(done)
    assert (answers["Patient"].status, answers["Patient"].error_kind) == ("error", "timeout")
    assert answers["Cut"].status == "partial"  # no terminal event: never complete
    # A run whose worker died: still "running" long after its deadline.
    stale = await database_sync_to_async(services.compare_start)(
        user=staff, prompt=PROMPT, model_ids=[patient.pk, cut.pk]
    )
    await database_sync_to_async(
        lambda: CompareRun.objects.filter(pk=stale.pk).update(
            status="running", created_at=timezone.now() - timedelta(minutes=30)
        )
    )()
    assert await database_sync_to_async(services.compare_runs_fail_stale)() == 1
    failed = await database_sync_to_async(CompareRun.objects.get)(pk=stale.pk)
    assert failed.status == "failed" and failed.error


async def test_a_judge_with_structured_output_is_sent_the_replys_schema(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Able", "able-1"), await make(server, "Bold", "bold-1")]
    strict = await database_sync_to_async(judge_model)(server)
    settings = {**strict.backend_settings, "structured_output": True}
    await database_sync_to_async(ModelEntry.objects.filter(pk=strict.pk).update)(
        backend_settings=settings
    )
    strict.backend_settings = settings
    done = await run(staff, models, judge=strict)
    calls = await database_sync_to_async(lambda: list(done.judge_calls.all()))()
    assert calls and all(c.schema_sent for c in calls)
    assert done.verdict["missing"] == []


async def test_slots_of_two_pools_run_as_two_tasks_and_the_last_to_end_judges_once(server, staff):
    make = database_sync_to_async(http_model)
    models = [await make(server, "Pool A", "pa-1"), await make(server, "Pool B", "pb-1")]
    judge = await database_sync_to_async(judge_model)(server)
    created = await database_sync_to_async(services.compare_start)(
        user=staff, prompt=PROMPT, model_ids=[m.pk for m in models], judge_id=judge.pk
    )
    first = await services.compare_execute(created.pk, [0])  # one pool's worker
    assert first.status == "running" and first.verdict == {}
    done = await services.compare_execute(created.pk, [1])  # the other's, last to end
    assert done.status == "done" and done.verdict["overall"]
    calls = await database_sync_to_async(done.judge_calls.count)()
    again = await services.compare_execute(created.pk, [0, 1])  # a task delivered twice
    assert again.status == "done"
    assert await database_sync_to_async(done.judge_calls.count)() == calls
    assert server.requests == 2 + calls  # each contestant streamed once
