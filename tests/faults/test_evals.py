"""An evaluation run whose worker is killed mid-run finishes on another, nothing made twice."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from arena.battles.prompts import prompt_create
from arena.catalog.models import ModelEntry
from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict
from tests.helpers import ROOT, make_judge, make_model

pytestmark = pytest.mark.faults
PROMPTS = 8


def wait_for(check, what: str, limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_an_evaluation_run_killed_mid_run_carries_on_elsewhere_and_makes_nothing_twice(
    stack, staff
):
    for name, strength in (("Strong", 1.5), ("Middling", 0.5), ("Weak", -1.0), ("Base", 0.0)):
        make_model(name, name.lower(), vendor=name, ttft_ms=150, prefix=f"⟦q={strength}⟧ ")
    make_judge()
    for i in range(PROMPTS):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")
    queued = subprocess.run(
        [sys.executable, "manage.py", "autoeval", "--prompts", "all", "--models", "Strong",
         "Middling", "Weak", "--baseline", "Base", "--judge", "Mock Judge", "--background"],
        env=stack.env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "queued" in queued.stdout
    run = EvalRun.objects.get()
    wait_for(lambda: EvalAnswer.objects.exclude(status="running").count() >= 8, "no answers")
    stack.workers[0].kill()  # mid-run: some answers made, some half made
    made = set(EvalAnswer.objects.exclude(status="running").values_list("pk", flat=True))
    stack.start_worker()  # as a supervisor would; the sweep hands the run to it
    wait_for(lambda: EvalRun.objects.get(pk=run.pk).status == "done", "the run never finished")
    answers = set(EvalAnswer.objects.values_list("pk", flat=True))
    assert made <= answers and len(answers) == PROMPTS * 4  # the finished ones kept, none twice
    assert EvalVerdict.objects.filter(done=True).count() == PROMPTS * 3 * 2


def test_a_pools_models_are_answered_by_that_pools_workers_only(stack, staff):
    for name, strength in (("Strong", 1.5), ("Weak", -1.0), ("Base", 0.0)):
        make_model(name, name.lower(), vendor=name, prefix=f"⟦q={strength}⟧ ")
    ModelEntry.objects.filter(public_name="Strong").update(
        backend_settings={"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20, "queue": "gpu-a"}
    )
    make_judge()
    for i in range(PROMPTS):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")
    subprocess.run(
        [sys.executable, "manage.py", "autoeval", "--prompts", "all", "--models", "Strong",
         "Weak", "--baseline", "Base", "--judge", "Mock Judge", "--background"],
        env=stack.env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    run = EvalRun.objects.get()
    strong = EvalAnswer.objects.filter(model__public_name="Strong")
    others = EvalAnswer.objects.exclude(model__public_name="Strong").exclude(status="running")
    wait_for(lambda: others.count() == PROMPTS * 2, "the default queue's answers")
    # No worker serves the pool's queue yet: its model's answers wait for one, as its
    # battles would, and the run with them.
    assert not strong.exists() and EvalRun.objects.get(pk=run.pk).status == "running"
    stack.start_worker(queues="gpu-a")
    wait_for(lambda: EvalRun.objects.get(pk=run.pk).status == "done", "the run never finished")
    assert strong.filter(status="ok").count() == PROMPTS
    assert EvalVerdict.objects.filter(done=True).count() == PROMPTS * 2 * 2
