"""``manage.py autoeval``: progress, then the judge leaderboard; --json for tools."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.battles.prompts import prompt_create
from tests.helpers import make_judge, make_model, make_two_models


@pytest.fixture
def setup(transactional_db, staff):
    make_two_models()
    make_model("Steady Otter", "so-1", vendor="Otters")
    make_judge()
    for i in range(4):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")


def autoeval(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(
        "autoeval", "--prompts", "category=math", "--models", "Zephyr Quill", "Orchid Lantern",
        "--baseline", "Steady Otter", "--judge", "Mock Judge", *args, stdout=out, stderr=err,
    )  # fmt: skip
    return out.getvalue(), err.getvalue()


def test_the_command_shows_progress_then_the_judge_leaderboard(setup):
    out, err = autoeval("--seed", "3")
    assert "answers 12/12" in err and "verdicts 16 (0 missing)" in err
    lines = out.splitlines()
    assert lines[0] == "LLM judge Mock Judge vs baseline Steady Otter"
    assert {line.split(":")[0] for line in lines[1:4]} == {
        "Zephyr Quill",
        "Orchid Lantern",
        "Steady Otter",
    }
    assert lines[-1].startswith("position bias ") and "over 8 pairs" in lines[-1]


def test_json_and_the_budget(setup):
    data = json.loads(autoeval("--json", "--max-judge-calls", "3")[0])
    assert data["status"] == "budget" and "judge calls of 3" in data["note"]
    assert data["baseline"] == "Steady Otter"
    with pytest.raises(CommandError, match="No model named 'Nobody'"):
        call_command("autoeval", "--prompts", "all", "--models", "Nobody", "--baseline",
                     "Steady Otter", "--judge", "Mock Judge")  # fmt: skip
