"""The exports' schema: a schema_version, times in whole ms, costs as plain decimals (never
0E-8), the run's totals, and in the CSV a column per criterion score."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest

from arena.catalog.models import ModelEntry
from arena.compare import exports
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.compare.totals import Total

RUBRIC = [
    {"name": "correctness", "weight": "0.6", "low": "wrong", "high": "right"},
    {"name": "clarity", "weight": "0.4", "low": "muddled", "high": "clear"},
]


@pytest.fixture
def saved(db, staff) -> CompareRun:
    models = [
        ModelEntry.objects.create(public_name=name, model_id=name.lower(), backend="openai")
        for name in ("Alpha", "Beta", "Gamma")
    ]
    run = CompareRun.objects.create(
        user=staff, prompt="Why?", seed=1, deadline_s=60, judge=models[2], rubric=RUBRIC,
        status=CompareRun.Status.DONE, verdict={"overall": {"A": 0.75}, "winner": "A"},
    )  # fmt: skip
    common = {"run": run, "status": "ok", "text": "An answer.", "ttft_ms": 302.4635520000629,
              "total_ms": 1999.5, "input_tokens": 10, "output_tokens": 20}  # fmt: skip
    CompareAnswer.objects.create(
        slot=0, label="A", model=models[0], cost=Decimal("0"), cost_status="known",
        finish_reason="stop", judged={"correctness": {"score": 4, "reason": "ok"},
                                      "clarity": {"score": 5, "reason": "clear"}}, **common,
    )  # fmt: skip
    CompareAnswer.objects.create(
        slot=1, label="B", model=models[1], cost=None, cost_status="unknown",
        finish_reason="length", not_judged="not judged: the answer failed", **common,
    )  # fmt: skip
    JudgeCall.objects.create(
        run=run, purpose="correctness", order=["A"], request="r", reply="{}",
        input_tokens=100, output_tokens=7, cost=Decimal("0.00012000"), cost_status="estimated",
        tokens_estimated=True,
    )  # fmt: skip
    return run


def test_json_carries_the_schema_whole_ms_plain_costs_and_totals(saved):
    data = json.loads(exports.as_json(saved))
    assert data["schema_version"] == exports.SCHEMA_VERSION == 2
    a, b = data["answers"]
    assert (a["ttft_ms"], a["total_ms"]) == (302, 2000)
    assert a["cost"] == "0" and b["cost"] is None
    assert (a["truncated"], b["truncated"]) == (False, True)
    assert data["judge_calls"][0]["cost"] == "0.00012"
    assert data["judge_calls"][0]["input_tokens"] == 100
    totals = data["totals"]
    assert totals["answers"] == {
        "cost": "0", "cost_status": "unknown",
        "counts": {"known": 1, "estimated": 0, "unknown": 1, "example": 0},
    }  # fmt: skip
    assert totals["judge"]["cost"] == "0.00012" and totals["judge"]["cost_status"] == "estimated"
    assert (totals["judge"]["calls"], totals["judge"]["input_tokens"]) == (1, 100)
    assert totals["judge"]["tokens_estimated"] is True
    assert totals["run"]["cost"] == "0.00012" and totals["run"]["cost_status"] == "unknown"


def test_csv_has_a_column_per_criterion_and_no_exponents(saved):
    text = exports.as_csv(saved)
    assert "E-" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[:4] == ["slot", "label", "model", "status"]
    assert [(r["score_correctness"], r["score_clarity"]) for r in rows] == [("4", "5"), ("", "")]
    assert {r["schema_version"] for r in rows} == {"2"}
    assert (rows[0]["ttft_ms"], rows[0]["cost"], rows[1]["truncated"]) == ("302", "0", "True")


def test_markdown_prints_whole_ms_and_the_totals(saved):
    text = exports.as_markdown(saved)
    assert "Schema version 2" in text and "| 302 | 2000 |" in text
    assert "302.46" not in text and "E-" not in text
    assert "length (truncated)" in text
    assert "**Total cost:** $0.00012 (unknown: 1 known, 1 estimated, 1 unknown)" in text
    assert "judge $0.00012 (estimated: 1 estimated), 1 call; 100 in / 7 out tokens (est.)" in text


def test_totals_count_every_part_by_its_status():
    total = Total.of([(Decimal("1.5"), "known"), (Decimal("0"), "example"), (None, "")])
    assert (total.amount, total.status) == (Decimal("1.5"), "unknown")
    assert total.counts == {"known": 1, "estimated": 0, "unknown": 1, "example": 1}
    only_mock = Total.of([(Decimal("0"), "example")])
    assert only_mock.status == "example" and Total.of([]).status == ""
    both = Total.of([(Decimal("1"), "known")]) + Total.of([(Decimal("2"), "estimated")])
    assert (both.amount, both.status) == (Decimal("3"), "estimated")
