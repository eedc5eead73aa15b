"""The admin's evaluation runs: starting or changing one takes arena.run_evals, not the staff
flag nor the model's generic permissions."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from arena.battles.prompts import prompt_create
from arena.evals import services
from arena.evals.models import EvalRun
from tests.helpers import make_judge, make_model, make_two_models, make_user


def signed_in(email: str, *codenames: str) -> Client:
    user = make_user(email, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="arena", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def form(db) -> dict:
    """A run the add form would accept: two contestants, a baseline, a judge, curated prompts."""
    quill, lantern = make_two_models()
    otter = make_model("Steady Otter", "so-1", vendor="Otters")
    judge = make_judge()
    for i in range(2):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")
    return {"name": "primes", "category": "math", "contestants": [quill.pk, lantern.pk],
            "baseline": otter.pk, "judge": judge.pk, "budget": "1.00"}  # fmt: skip


def private_run(form: dict) -> EvalRun:
    owner = make_user("owner@example.com", is_staff=True, is_superuser=True)
    return services.eval_create(
        user=owner, name="private run", prompts=[("Is 3 prime?", "math")],
        model_ids=form["contestants"], baseline_id=form["baseline"], judge_id=form["judge"],
    )  # fmt: skip


@pytest.mark.parametrize(
    "codenames",
    [(), ("add_evalrun", "change_evalrun", "view_evalrun"), ("view_calibration", "view_pools")],
    ids=["no permissions", "the model's generic ones", "the other named ones"],
)
def test_staff_without_run_evals_cannot_start_a_run(form, codenames):
    client = signed_in("staff@example.com", *codenames)
    add = reverse("admin:arena_evalrun_add")
    assert client.get(add).status_code == 403
    assert client.post(add, form).status_code == 403
    assert not EvalRun.objects.exists()


def test_staff_who_may_only_view_runs_cannot_publish_one(form):
    run = private_run(form)
    client = signed_in("viewer@example.com", "view_evalrun", "change_evalrun")
    change = reverse("admin:arena_evalrun_change", args=[run.pk])
    assert "private run" in client.get(change).content.decode()  # read only
    assert client.post(change, {"public": "on"}).status_code == 403
    run.refresh_from_db()
    assert run.public is False


def test_staff_with_run_evals_start_and_publish_runs(form, django_capture_on_commit_callbacks):
    client = signed_in("operator@example.com", "run_evals")
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(reverse("admin:arena_evalrun_add"), form)
    assert response.status_code == 302
    run = EvalRun.objects.get()
    assert run.name == "primes" and run.prompts.count() == 2
    assert len(queued) == 1  # its pieces are sent once the run is committed
    change = reverse("admin:arena_evalrun_change", args=[run.pk])
    assert client.post(change, {"public": "on"}).status_code == 302
    run.refresh_from_db()
    assert run.public is True


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            lambda form: {"contestants": [*form["contestants"], form["baseline"]]},
            "The baseline is compared with; not a contestant.",
        ),
        (lambda form: {"budget": "-1"}, "A budget is a number of USD from 0 to"),
    ],
    ids=["the baseline as a contestant", "a budget below zero"],
)
def test_the_add_form_shows_why_the_run_cannot_be_made_and_makes_nothing(form, change, refusal):
    client = signed_in("operator@example.com", "run_evals")
    response = client.post(reverse("admin:arena_evalrun_add"), {**form, **change(form)})
    assert response.status_code == 200
    assert refusal in response.content.decode()
    assert not EvalRun.objects.exists()
