"""Evaluation runs and calibration with images: every model, the baseline and the judge are
sent them (``autoeval --image``), and a judge that cannot see never judges an image battle."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.battles.prompts import prompt_create
from arena.catalog.models import ModelEntry
from arena.evals import battle_judging
from arena.evals.models import BattleVerdict, EvalAnswer, EvalRun, EvalVerdict
from tests.helpers import make_model
from tests.images.pictures import picture
from tests.votes import logged_vote

IMAGE = [{"sha256": "cd" * 32, "type": "image/png", "size": 99}]


def judge(*, reads: bool) -> ModelEntry:
    return ModelEntry.objects.create(
        public_name="Mock Judge", vendor="mock-judge", model_id="mock-judge-1", backend="mock",
        backend_settings={"judge": True, "ttft_ms": 0, "tokens_per_s": 0, "vision": reads},
        takes_images=reads, active=False,
    )  # fmt: skip


@pytest.fixture
def seeing(transactional_db, staff):
    for name, vendor in (("Eye One", "v1"), ("Eye Two", "v2"), ("Eye Base", "v3")):
        make_model(
            name, name.lower().replace(" ", "-"), vendor=vendor, vision=True, takes_images=True
        )
    for i in range(2):
        prompt_create(text=f"What is drawn in picture {i}?", category="vision-test")


def autoeval(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command(
        "autoeval", "--prompts", "category=vision-test", "--models", "Eye One", "Eye Two",
        "--baseline", "Eye Base", "--judge", "Mock Judge", *args, stdout=out, stderr=err,
    )  # fmt: skip
    return out.getvalue()


def test_an_evaluation_run_sends_its_image_to_every_answer_and_verdict(seeing, tmp_path):
    judge(reads=True)
    png = tmp_path / "figure.png"
    png.write_bytes(picture("PNG"))

    autoeval("--image", str(png), "--seed", "1")

    run = EvalRun.objects.get()
    sha = run.images[0]["sha256"]
    answers = EvalAnswer.objects.filter(prompt__run=run)
    assert answers.count() == 6 and all(sha[:8] in a.text for a in answers)
    assert run.status == "done"
    verdicts = EvalVerdict.objects.filter(prompt__run=run)
    assert verdicts.count() == 8 and all(v.done and v.level for v in verdicts)


def test_a_run_with_images_refuses_a_judge_that_does_not_read_them(seeing, tmp_path):
    judge(reads=False)
    png = tmp_path / "figure.png"
    png.write_bytes(picture("PNG"))
    with pytest.raises(CommandError, match="The judge Mock Judge does not read images"):
        autoeval("--image", str(png))
    assert not EvalRun.objects.exists()


def test_calibration_leaves_image_battles_to_a_judge_that_can_see_them(transactional_db, alice):
    models = (make_model("Eye One", "eye-1"), make_model("Eye Two", "eye-2"))
    seen = logged_vote(alice, models, ["What is in the picture?"], images=IMAGE)
    read = logged_vote(alice, models, ["Name a prime."])
    blind = judge(reads=False)

    claimed = battle_judging.verdicts_claim(judge=blind, limit=10)

    judged = set(BattleVerdict.objects.filter(pk__in=claimed).values_list("vote_id", flat=True))
    assert judged == {read.pk} and seen.pk not in judged
