"""The evaluation pages: the admin form that starts a run, the public judge tab (published runs
only, labelled as a judge's opinion), and the staff calibration page and JSON."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from arena.battles.prompts import prompt_create
from arena.battles.simulation import votes_simulate
from arena.evals import running, selectors, services
from arena.evals.models import EvalPrompt, EvalRun
from ranking.services import leaderboard_recompute
from tests.helpers import make_judge, make_model, make_two_models, wait_until

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one


@pytest.fixture
def models(transactional_db) -> dict[str, int]:
    quill, lantern = make_two_models()
    otter = make_model("Steady Otter", "so-1", vendor="Otters")
    judge = make_judge()
    for i in range(4):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")
    return {"quill": quill.pk, "lantern": lantern.pk, "otter": otter.pk, "judge": judge.pk}


def finished_run(staff, models, *, public: bool) -> EvalRun:
    run = services.eval_create(
        user=staff, name=f"primes {'public' if public else 'private'}",
        prompts=[(p.text, p.category) for p in services.prompts_select(category="math")],
        model_ids=[models["quill"], models["lantern"]], baseline_id=models["otter"],
        judge_id=models["judge"], public=public, seed=1,
    )  # fmt: skip
    return async_to_sync(running.eval_execute)(run.pk)


def test_an_admin_starts_a_run_from_the_form_and_it_runs(
    admin_client, models, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:arena_evalrun_add"), {
            "name": "primes", "category": "math", "contestants": [models["quill"],
            models["lantern"]], "baseline": models["otter"], "judge": models["judge"],
            "params_json": '{"temperature": 0.2}', "budget": "1.50", "seed": "5",
        })  # fmt: skip
    assert response.status_code == 302
    run = EvalRun.objects.get()
    assert (run.params, run.seed, str(run.budget)) == ({"temperature": 0.2}, 5, "1.5000")
    assert run.prompts.count() == 4 and set(run.contestants.values_list("pk", flat=True)) == {
        models["quill"], models["lantern"]}  # fmt: skip
    wait_until(lambda: EvalRun.objects.get().status == "done", limit_s=60)
    page = admin_client.get(reverse("admin:arena_evalrun_change", args=[run.pk])).content.decode()
    assert "answers 12/12" in page and "verdicts 16/16" in page and "<progress" in page


def test_the_admin_form_says_what_is_wrong_and_makes_nothing(admin_client, models):
    url = reverse("admin:arena_evalrun_add")
    base = {"name": "bad", "contestants": [models["quill"]], "judge": models["judge"]}
    page = admin_client.post(url, {**base, "baseline": models["quill"], "category": "math"})
    assert "The baseline is compared with; not a contestant." in page.content.decode()
    bad = SimpleUploadedFile("p.jsonl", b'{"text": "fine"}\nnot json\n{"category": "x"}\n')
    page = admin_client.post(url, {**base, "baseline": models["otter"], "prompts_file": bad})
    text = page.content.decode()
    assert "line 2: not valid JSON" in text and "line 3: &#x27;text&#x27; is missing" in text
    page = admin_client.post(url, {**base, "baseline": models["otter"], "category": "none"})
    assert "No prompts match" in page.content.decode()
    assert not EvalRun.objects.exists() and not EvalPrompt.objects.exists()


def test_progress_says_how_long_is_left_at_the_pace_so_far(staff, models):
    run = services.eval_create(
        user=staff, name="primes", prompts=[("Is 7 prime?", "math")] * 10,
        model_ids=[models["quill"]], baseline_id=models["otter"], judge_id=models["judge"],
    )  # fmt: skip
    assert selectors.progress(run_id=run.pk).time_left_s is None  # no pace yet
    async_to_sync(running.eval_execute)(run.pk)
    done = selectors.progress(run_id=run.pk)
    assert (done.answers_done, done.verdicts_done, done.time_left_s, done.share) == (
        20, 20, None, 1
    )  # fmt: skip
    assert done.line().endswith("  finished") and "left" not in done.line()
    # Half done in 60 s: about 60 s left.
    EvalRun.objects.filter(pk=run.pk).update(status="running")
    run.prompts.filter(index__gte=5).delete()
    EvalPrompt.objects.bulk_create(EvalPrompt(run=run, index=10 + i, text="x") for i in range(5))
    now = timezone.now()
    EvalRun.objects.filter(pk=run.pk).update(started_at=now - timedelta(seconds=60))
    half = selectors.progress(run_id=run.pk, now=now)
    assert half.share == 0.5 and round(half.time_left_s) == 60
    assert "about 1 min 0 s left" in half.line()


def test_the_judge_tab_shows_published_runs_labelled_and_never_unpublished_ones(
    client, staff, models
):
    finished_run(staff, models, public=True)
    finished_run(staff, models, public=False)
    page = client.get(reverse("leaderboard-judge")).content.decode()
    assert "primes public" in page and "primes private" not in page
    assert "An LLM judge's opinion, not human votes." in page and "Mock figures." in page
    assert "Agreement with human votes: not measured yet" in page
    data = client.get(reverse("leaderboard-judge-json")).json()
    assert data["source"] == "llm_judge" and [r["name"] for r in data["runs"]] == ["primes public"]
    human = client.get(reverse("leaderboard")).content.decode()
    assert reverse("leaderboard-judge") in human and "primes public" not in human


def test_calibration_is_for_staff_and_shows_agreement_beside_the_judge_board(
    client, admin_client, staff, models
):
    assert client.get(reverse("calibration")).status_code == 302  # to the sign-in page
    signed_out = client.get(reverse("calibration-json"))  # JSON for scripts, never a page
    assert signed_out.status_code == 401 and signed_out.json()["error"] == "sign_in"
    votes_simulate(n=60, strengths={"Zephyr Quill": 1.0, "Orchid Lantern": -0.5,
                                    "Steady Otter": 0.0})  # fmt: skip
    leaderboard_recompute(include_simulated=True, min_votes=10)
    call_command("calibrate", "--judge", "Mock Judge", "--include-simulated", "--limit", "60")
    finished_run(staff, models, public=True)
    data = admin_client.get(reverse("calibration-json")).json()
    assert data["schema"] == "arena.calibration/1"
    (judge,) = data["judges"]
    assert judge["judge"] == "Mock Judge" and judge["simulated_battles"] == 60
    assert judge["overall"]["battles"] == 60 and judge["overall"]["agreement"]["n"] > 0
    (run,) = judge["runs"]
    assert run["models"] == ["Orchid Lantern", "Steady Otter", "Zephyr Quill"]
    assert run["spearman"] is not None and 0 <= run["separability"] <= 1
    page = admin_client.get(reverse("calibration")).content.decode()
    assert "Mock Judge" in page and "Mock figures." in page and "Position bias" in page
    tab = client.get(reverse("leaderboard-judge")).content.decode()
    assert "Agreement with human votes: <strong>" in tab and "Spearman" in tab
