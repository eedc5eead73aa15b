"""An answer cut at the length limit is stored as truncated and judged as it stands (said in
the verdict's scope line), or left out when COMPARE_JUDGE_TRUNCATED is false; the judge's
calls keep their tokens and cost, and the run's totals add the answers and the judge."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async

from arena.catalog.models import ModelEntry, ModelPrice
from arena.compare import judging, services
from arena.compare.models import CompareAnswer, CompareRun
from arena.compare.totals import run_totals
from arena.devtools.mock_server import MockServer

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def priced(server, name: str, model_id: str, **mock) -> ModelEntry:
    server.models[model_id] = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20, **mock}
    model = ModelEntry.objects.create(
        public_name=name, vendor=f"{model_id}-vendor", model_id=model_id,
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": server.url, "timeout_s": 10}, supported_params=[],
    )  # fmt: skip
    ModelPrice.objects.create(
        model=model, input_per_million=Decimal("1"), output_per_million=Decimal("3"),
        effective_from=date(2020, 1, 1), source_url="https://vendor.example/pricing",
    )  # fmt: skip
    return model


async def judged_run(server, staff) -> tuple[CompareRun, dict[str, CompareAnswer]]:
    make = database_sync_to_async(priced)
    full = await make(server, "Whole Answer", "whole-1")
    cut = await make(server, "Cut Answer", "cut-1", misbehaviour="incomplete")
    judge = await make(server, "Fair Judge", "judge-1", judge=True)
    created = await database_sync_to_async(services.compare_start)(
        user=staff, prompt="Explain CAP.", model_ids=[full.pk, cut.pk], judge_id=judge.pk
    )
    done = await services.compare_execute(created.pk)
    answers = await database_sync_to_async(
        lambda: {a.model.public_name: a for a in done.answers.select_related("model")}
    )()
    return done, answers


async def test_a_cut_answer_is_marked_and_judged_and_the_judge_is_counted(server, staff):
    done, answers = await judged_run(server, staff)
    cut, whole = answers["Cut Answer"], answers["Whole Answer"]
    assert (cut.status, cut.finish_reason, cut.truncated) == ("ok", "length", True)
    assert not whole.truncated
    assert set(done.verdict["overall"]) == {cut.label, whole.label}  # both judged
    assert done.verdict["truncated"] == [cut.label]
    assert f"{cut.label} truncated at the length limit" in done.verdict["scope"]
    assert done.verdict["scope"].startswith("Judged 2 of 2 answers")

    totals = await database_sync_to_async(run_totals)(run=done)
    calls = await database_sync_to_async(lambda: list(done.judge_calls.all()))()
    assert calls and all(c.cost_status == "known" and c.cost > 0 for c in calls)
    assert all(c.input_tokens and c.output_tokens for c in calls)
    assert totals.judge.amount == sum(c.cost for c in calls)
    assert totals.judge_calls == len(calls)
    assert totals.judge_input_tokens == sum(c.input_tokens for c in calls)
    assert totals.answers.amount == cut.cost + whole.cost
    assert totals.run.amount == totals.answers.amount + totals.judge.amount
    assert totals.run.status == "known" and totals.run.counts["known"] == 2 + len(calls)


async def test_an_operator_may_leave_cut_answers_unjudged(server, staff, settings):
    settings.COMPARE = {**settings.COMPARE, "JUDGE_TRUNCATED": False}
    done, answers = await judged_run(server, staff)
    cut = answers["Cut Answer"]
    assert cut.not_judged == judging.TRUNCATED_NOTE and cut.judged == {}
    assert cut.label not in done.verdict["overall"]
    assert done.verdict["scope"].startswith("Judged 1 of 2 answers")
    scope = done.verdict["scope"]
    assert f"not judged: {cut.label} (the answer stopped at the length limit" in scope
