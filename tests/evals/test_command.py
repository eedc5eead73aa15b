"""``manage.py autoeval``: progress, then the judge leaderboard; --json for tools."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.battles.prompts import prompt_create
from arena.evals.models import EvalRun
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
    assert "answers 12/12" in err and "verdicts 16/16 (0 missing)" in err and " left" in err
    lines = out.splitlines()
    assert lines[0] == "LLM judge Mock Judge vs baseline Steady Otter"
    assert {line.split(":")[0] for line in lines[1:4]} == {
        "Zephyr Quill",
        "Orchid Lantern",
        "Steady Otter",
    }
    assert lines[-2].startswith("position bias ") and "over 8 pairs" in lines[-2]
    run = EvalRun.objects.get()
    assert err.startswith(f"evaluation run {run.pk}\n") and err.rstrip().endswith("finished")
    assert lines[-1] == (
        f"evaluation run {run.pk}; export it: python manage.py export_eval {run.pk} "
        "--format json|csv|arena"
    )


def test_json_and_the_budget(setup):
    data = json.loads(autoeval("--json", "--max-judge-calls", "3")[0])
    assert data["export"] == f"python manage.py export_eval {data['run']} --format json|csv|arena"
    assert data["status"] == "budget" and "judge calls of 3" in data["note"]
    assert data["baseline"] == "Steady Otter"
    with pytest.raises(CommandError, match="No model named 'Nobody'"):
        call_command("autoeval", "--prompts", "all", "--models", "Nobody", "--baseline",
                     "Steady Otter", "--judge", "Mock Judge")  # fmt: skip


def test_exports_give_raw_style_and_category_boards_and_arena_battles_marked_as_a_judges(setup):
    from arena.evals.models import EvalRun, EvalVerdict
    from arena.records.models import Vote

    autoeval("--seed", "4")
    run = EvalRun.objects.get()

    def export(fmt: str) -> str:
        out = StringIO()
        call_command("export_eval", str(run.pk), "--format", fmt, stdout=out)
        return out.getvalue()

    data = json.loads(export("json"))
    assert data["source"] == "llm_judge" and data["baseline"] == "Steady Otter"
    views = {(row["view"], row["breakdown"]) for row in data["rows"]}
    assert views == {("raw", "all"), ("style", "all"), ("raw", "category:math")}
    assert export("csv").splitlines()[0].startswith('"view","breakdown","model","score"')
    battles = json.loads(export("arena"))
    assert len(battles) == EvalVerdict.objects.exclude(level="").count() == 16
    assert {b["source"] for b in battles} == {"llm_judge"}
    assert {b["winner"] for b in battles} <= {"model_a", "model_b", "tie"}
    assert all(b["judge"] == "llm_judge:Mock Judge" for b in battles)
    assert not Vote.objects.exists()  # nothing of the judge's is ever a human vote
    with pytest.raises(CommandError, match="No evaluation run 999"):
        call_command("export_eval", "999")


def test_bad_arguments_get_a_clear_error_and_make_nothing(setup):
    from arena.evals.models import EvalRun

    for args, why in (
        (("--prompts", "category=math,limit=abc"), "limit must be a whole number"),
        (("--prompts", "category=math,limit=-1"), "limit must be a whole number"),
        (("--prompts", "category=math", "--budget", "nan"), "A budget is a number of USD"),
        (("--prompts", "category=math", "--budget", "1e20"), "A budget is a number of USD"),
        (("--prompts", "category=math", "--max-judge-calls", "-1"), "1 or more"),
    ):
        with pytest.raises(CommandError, match=why):
            call_command("autoeval", *args, "--models", "Zephyr Quill", "--baseline",
                         "Steady Otter", "--judge", "Mock Judge")  # fmt: skip
    assert not EvalRun.objects.exists()
