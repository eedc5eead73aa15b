"""A judge call kept for audit: the row holds the call's fields and its usage's, one for one."""

from __future__ import annotations

from dataclasses import fields
from decimal import Decimal

from arena.catalog.models import ModelEntry
from arena.compare import judging
from arena.compare.models import CompareRun, JudgeCall
from arena.judges.calls import Call, Usage


def test_a_recorded_call_keeps_every_field_and_the_usage_cost(db, staff):
    judge = ModelEntry.objects.create(public_name="Judge", model_id="j", backend="openai")
    run = CompareRun.objects.create(user=staff, prompt="Why?", seed=1, deadline_s=60, judge=judge)
    usage = Usage(
        input_tokens=120, output_tokens=9, tokens_estimated=True, cost=None, cost_status="unknown"
    )
    call = Call(
        purpose="clarity",
        attempt=2,
        order=["B", "A"],
        request="req",
        reply="{}",
        problem="unreadable",
        temperature_sent=False,
        schema_sent=True,
        cost=Decimal("0.5"),
        usage=usage,
    )
    judging._record(run, call)
    row = JudgeCall.objects.get(run=run)
    kept = {"purpose", "attempt", "order", "request", "reply", "problem"}
    kept |= {"temperature_sent", "schema_sent"}
    assert {name: getattr(row, name) for name in kept} == {
        name: getattr(call, name) for name in kept
    }
    # The row's cost is what the call was counted at (its usage), not its list price.
    assert {f.name: getattr(row, f.name) for f in fields(Usage)} == {
        "input_tokens": 120,
        "output_tokens": 9,
        "tokens_estimated": True,
        "cost": None,
        "cost_status": "unknown",
    }


def test_every_column_of_a_judge_call_row_comes_from_the_call():
    # A column added to the row and not to the call (or the other way) would go unfilled.
    columns = {f.name for f in JudgeCall._meta.concrete_fields} - {"id", "run", "created_at"}
    from_call = {f.name for f in fields(Call)} - set(judging._NOT_KEPT)
    assert columns == from_call | {f.name for f in fields(Usage)}
