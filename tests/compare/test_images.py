"""Compare runs with images: every model and the judge must read them, all are sent the same
bytes, from the form and from ``manage.py compare --image``."""

from __future__ import annotations

import io
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from arena.catalog.models import ModelEntry
from arena.compare import services
from arena.compare.models import CompareRun, JudgeCall
from arena.core.errors import ServiceError
from arena.images.models import PromptImage
from arena.images.services import image_store
from tests.helpers import make_model, wait_until
from tests.images.pictures import picture

pytestmark = pytest.mark.usefixtures("transactional_db")


def seeing_judge(*, vision: bool = True) -> ModelEntry:
    """The demo's mock judge, marked as reading images; ``vision``: whether its server does."""
    return ModelEntry.objects.create(
        public_name="Mock Judge",
        vendor="mock-judge",
        model_id="mock-judge-1",
        backend="mock",
        backend_settings={"judge": True, "ttft_ms": 0, "tokens_per_s": 0, "vision": vision},
        takes_images=True,
        active=False,
    )


@pytest.fixture
def eyes():
    return [
        make_model("Eye One", "eye-1", vendor="v1", vision=True, takes_images=True),
        make_model("Eye Two", "eye-2", vendor="v2", vision=True, takes_images=True),
    ]


def test_a_run_with_images_refuses_models_and_a_judge_that_do_not_read_them(staff, eyes):
    sha = image_store(user=staff, data=picture("PNG")).sha256
    blind = make_model("Text Only", "text-3", vendor="v3")
    with pytest.raises(ServiceError) as refused:
        services.compare_start(
            user=staff, prompt="Describe it.", model_ids=[eyes[0].pk, blind.pk], images=[sha]
        )
    assert refused.value.code == "model_no_images" and "Text Only does not" in refused.value.message
    plain_judge = make_model("Plain Judge", "judge-2", vendor="jv", judge=True)
    with pytest.raises(ServiceError) as refused:
        services.compare_start(
            user=staff,
            prompt="Describe it.",
            model_ids=[m.pk for m in eyes],
            judge_id=plain_judge.pk,
            images=[sha],
        )
    assert refused.value.code == "judge_no_images"
    assert not CompareRun.objects.exists()


def test_every_model_and_the_judge_are_sent_the_image(staff, eyes):
    sha = image_store(user=staff, data=picture("PNG")).sha256
    judge = seeing_judge()
    run = services.compare_start(
        user=staff, prompt="Describe it.", model_ids=[m.pk for m in eyes], judge_id=judge.pk,
        images=[sha], seed=2,
    )  # fmt: skip
    done = async_to_sync(services.compare_execute)(run.pk)

    assert [i["sha256"] for i in done.images] == [sha]
    assert all(sha[:8] in a.text for a in done.answers.all())  # each mock says what it saw
    assert done.status == "done" and done.verdict["winner"]


def test_a_judge_whose_server_cannot_see_is_refused_for_the_image_it_was_sent(staff, eyes):
    # Marked as reading images, but its server refuses them: so the image reached the judge.
    sha = image_store(user=staff, data=picture("PNG")).sha256
    judge = seeing_judge(vision=False)
    run = services.compare_start(
        user=staff, prompt="Describe it.", model_ids=[m.pk for m in eyes], judge_id=judge.pk,
        images=[sha],
    )  # fmt: skip
    async_to_sync(services.compare_execute)(run.pk)
    problems = set(JudgeCall.objects.filter(run=run).values_list("problem", flat=True))
    assert problems and all(problems)


def compare(*args: str) -> str:
    out = StringIO()
    call_command("compare", "What is in the picture?", *args, stdout=out)
    return out.getvalue()


def test_the_command_sends_an_image_file_and_refuses_what_is_not_one(staff, eyes, tmp_path):
    seeing_judge()
    png = tmp_path / "chart.png"
    png.write_bytes(picture("PNG"))
    out = compare("--models", "Eye One", "Eye Two", "--image", str(png), "--user", staff.email)
    run = CompareRun.objects.get()
    assert len(run.images) == 1 and "winner" in out
    text = tmp_path / "notes.png"
    text.write_bytes(b"just some text")
    with pytest.raises(CommandError, match="not a PNG, JPEG, WebP or GIF image"):
        compare("--models", "Eye One", "Eye Two", "--image", str(text))
    with pytest.raises(CommandError, match="--image: No such file"):
        compare("--models", "Eye One", "Eye Two", "--image", str(tmp_path / "missing.png"))


@pytest.mark.usefixtures("generation")
def test_the_form_takes_images_and_keeps_them_when_the_run_is_refused(admin_client, eyes):
    sent = io.BytesIO(picture("PNG"))
    sent.name = "chart.png"
    blind = make_model("Text Only", "text-3", vendor="v3")
    refused = admin_client.post(
        reverse("compare"),
        {"prompt": "Describe it.", "models": [eyes[0].pk, blind.pk], "images": [sent]},
    )
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "does not read images" in page and not CompareRun.objects.exists()
    sha = PromptImage.objects.get().sha256
    assert f'name="image_hashes" value="{sha}"' in page  # kept: not lost with the refusal
    posted = admin_client.post(
        reverse("compare"),
        {"prompt": "Describe it.", "models": [m.pk for m in eyes], "image_hashes": [sha]},
    )
    assert posted.status_code == 302
    assert [i["sha256"] for i in CompareRun.objects.get().images] == [sha]
    # The run the form queued ends before the tables are emptied for the next test.
    wait_until(lambda: CompareRun.objects.get().status in ("done", "failed"))
