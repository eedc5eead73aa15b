"""``manage.py compare``: one line per model, then the judge's; --json prints the saved run."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.catalog.models import ModelEntry
from arena.compare.models import CompareRun
from tests.helpers import make_judge, make_two_models


@pytest.fixture
def judged(transactional_db, staff):
    make_two_models()
    make_judge()


def compare(*args: str) -> str:
    out = StringIO()
    call_command("compare", "Explain CAP theorem in 3 sentences", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_a_line_per_model_then_the_judges(judged):
    out = compare("--models", "Zephyr Quill", "Orchid Lantern", "--seed", "3")
    lines = out.splitlines()
    assert lines[0].startswith("mock models:")
    models = [line for line in lines if "ttft_ms=" in line]
    assert len(models) == 2
    for line in models:
        for field in ("total_ms=", "tokens=", "cost=example pricing (mock)", "finish=stop"):
            assert field in line
    assert any(line.startswith("judge Mock Judge: winner ") for line in lines)
    assert "judge: mock scores (deterministic, not a real judge)" in lines
    assert CompareRun.objects.get().seed == 3


def test_json_prints_the_saved_run(judged):
    data = json.loads(compare("--models", "Zephyr Quill", "Orchid Lantern", "--json"))
    assert [a["model"] for a in data["answers"]] == ["Zephyr Quill", "Orchid Lantern"]
    assert data["judge"] == "Mock Judge" and data["verdict"]["winner_model"]
    assert len(data["judge_calls"]) >= 4


def test_unknown_models_and_bad_rubrics_are_command_errors(judged, tmp_path):
    with pytest.raises(CommandError, match="No model named 'Nobody'"):
        compare("--models", "Zephyr Quill", "Nobody")
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps([{"name": "depth", "weight": 0.5, "low": "x", "high": "y"}]))
    with pytest.raises(CommandError, match="sum to 1"):
        compare("--models", "Zephyr Quill", "Orchid Lantern", "--rubric", str(rubric))
    with pytest.raises(CommandError, match="does not support 'top_p'"):
        ModelEntry.objects.filter(public_name="Orchid Lantern").update(supported_params=[])
        compare("--models", "Zephyr Quill", "Orchid Lantern", "--top-p", "0.5")
