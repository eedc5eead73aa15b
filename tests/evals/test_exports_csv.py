"""An evaluation run's CSV is data: a model name or category written as a formula comes out
quoted, and scores, negative ones too, stay numbers."""

from __future__ import annotations

import csv
import io

import pytest
from channels.db import database_sync_to_async

from arena.evals import exports, running, services
from tests.helpers import make_model

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one
HYPERLINK = '=HYPERLINK("http://x","click")'


def setup(staff):
    formula = make_model(HYPERLINK, "formula-1", prefix="⟦q=-2⟧ ")
    other = make_model("Plain", "plain-1", prefix="⟦q=1⟧ ")
    base = make_model("Base", "base-1", prefix="⟦q=0⟧ ")
    judge = make_model("Judge", "judge-1", vendor="judgevendor", judge=True, active=False)
    return services.eval_create(
        user=staff, name="formulas", prompts=[(f"Question {i}?", "-cat") for i in range(3)],
        model_ids=[formula.pk, other.pk], baseline_id=base.pk, judge_id=judge.pk,
    )  # fmt: skip


async def test_model_names_and_categories_that_look_like_formulas_come_out_quoted(staff):
    run = await database_sync_to_async(setup)(staff)
    assert (await running.eval_execute(run.pk)).status == "done"
    text = await database_sync_to_async(exports.as_csv)(run)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert "'" + HYPERLINK in {row["model"] for row in rows}
    assert HYPERLINK not in {row["model"] for row in rows}
    assert {row["breakdown"] for row in rows} == {"all", "category:-cat"}
    for row in rows:
        float(row["score"])  # a number, never quoted
    assert any(row["score"].startswith("-") for row in rows)
