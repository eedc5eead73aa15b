"""Evaluation exports share compare's schema rules where they apply: a schema_version, and
costs as plain decimals (never 0E-8)."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from types import SimpleNamespace as NS

from arena.evals import exports


def board(breakdown: str) -> NS:
    row = NS(model="Swift Falcon", score=1012.345, lower=990.0, upper=1030.0, rank_best=1,
             rank_worst=2, votes=40)  # fmt: skip
    return NS(breakdown=breakdown, rows=[row])


RESULT = NS(
    board=board("all"), style_board=board("all"), by_category={}, win_rate={"Swift Falcon": 0.5},
    cost={"Swift Falcon": Decimal("0E-8")}, position_bias=0.1, pairs=20, missing=0,
)  # fmt: skip
RUN = NS(pk=7, name="n", status="running", note="", judge=NS(public_name="Mock Judge"),
         baseline=NS(public_name="Steady Otter"), finished_at=None)  # fmt: skip


def test_eval_exports_carry_the_schema_version_and_plain_costs(monkeypatch):
    monkeypatch.setattr(exports, "judge_board", lambda run_id: RESULT)
    data = json.loads(exports.as_json(RUN))
    assert data["schema_version"] == exports.SCHEMA_VERSION == 2
    assert {row["cost"] for row in data["rows"]} == {"0"}
    rows = list(csv.DictReader(io.StringIO(exports.as_csv(RUN))))
    assert {(row["cost"], row["schema_version"]) for row in rows} == {("0", "2")}
