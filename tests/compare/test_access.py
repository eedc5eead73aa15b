"""Who may use compare mode and whose runs they see (permissions, never the staff flag), and the
form's answers to bad input: a clear message, what was typed kept, never a 500."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.compare.access import UNKNOWN_PREVIOUS
from arena.compare.models import CompareAnswer, CompareRun
from tests.helpers import make_judge, make_two_models, make_user

pytestmark = pytest.mark.django_db


def grant(user: User, *codenames: str) -> User:
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # a fresh row: permissions are cached on the instance


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def saved_run(user: User, models, prompt: str = "Explain CAP.") -> CompareRun:
    run = CompareRun.objects.create(
        user=user, prompt=prompt, seed=1, deadline_s=120, status=CompareRun.Status.DONE
    )
    for slot, (model, label) in enumerate(zip(models, "AB", strict=False)):
        CompareAnswer.objects.create(
            run=run, slot=slot, label=label, model=model, status="ok", text="An answer."
        )
    return run


def run_urls(run: CompareRun) -> list[str]:
    return [
        reverse("compare-run", args=[run.pk]),
        reverse("compare-export", args=[run.pk, "json"]),
        reverse("compare-export", args=[run.pk, "csv"]),
        reverse("compare-events", args=[run.pk]),
    ]


@pytest.fixture
def contestants():
    zq, ol = make_two_models()
    return zq, ol, make_judge()


@pytest.fixture
def lead(db) -> User:
    """A staff account given compare mode, and nothing else."""
    return grant(make_user("lead@example.com", is_staff=True), "use_compare")


def test_a_staff_account_without_the_permission_gets_no_compare_mode_and_no_runs(contestants):
    zq, ol, judge = contestants
    owner = make_user("owner@example.com")
    theirs = saved_run(owner, [zq, ol])
    desk = client_for(make_user("desk@example.com", is_staff=True))
    assert desk.get(reverse("compare")).status_code == 403
    posted = desk.post(reverse("compare"), {"prompt": "Hi?", "models": [zq.pk, ol.pk]})
    assert posted.status_code == 403 and not CompareRun.objects.filter(prompt="Hi?").exists()
    assert desk.get(reverse("compare-history")).status_code == 403
    for url in run_urls(theirs):
        assert desk.get(url).status_code == 403, url
    assert "Compare</a>" not in desk.get(reverse("arena")).content.decode()


def test_the_permission_opens_compare_mode_to_staff_or_with_team_access_to_anyone(
    contestants, settings
):
    rater = client_for(grant(make_user("rater@example.com"), "use_compare"))
    assert rater.get(reverse("compare")).status_code == 403  # ACCESS "staff": staff only
    settings.COMPARE = {**settings.COMPARE, "ACCESS": "team"}
    assert rater.get(reverse("compare")).status_code == 200
    # The staff flag alone still opens nothing, whatever the access setting.
    desk = client_for(make_user("desk@example.com", is_staff=True))
    assert desk.get(reverse("compare")).status_code == 403


def test_a_user_sees_only_their_own_runs_unless_given_the_view_permission(lead, staff, contestants):
    zq, ol, judge = contestants
    owner = make_user("owner@example.com")
    theirs, mine = saved_run(owner, [zq, ol], "Their secret prompt"), saved_run(lead, [zq, ol])
    as_lead = client_for(lead)
    for url in run_urls(theirs):
        assert as_lead.get(url).status_code == 404, url
    assert as_lead.get(reverse("compare-run", args=[mine.pk])).status_code == 200
    # Filling the form from someone else's run is no way round it.
    form = as_lead.get(reverse("compare") + f"?from={theirs.pk}").content.decode()
    assert "Their secret prompt" not in form
    # Auditors hold view_comparerun (as the admin's run pages need); superusers hold everything.
    auditor = client_for(grant(lead, "view_comparerun"))
    assert auditor.get(reverse("compare-run", args=[theirs.pk])).status_code == 200
    export = reverse("compare-export", args=[theirs.pk, "md"])
    assert client_for(staff).get(export).status_code == 200
    # Seen, but not theirs: the form is filled from it without linking another's run.
    form = auditor.get(reverse("compare") + f"?from={theirs.pk}").content.decode()
    assert "Their secret prompt" in form and f'value="{theirs.pk}"' not in form


def test_a_previous_run_that_is_garbage_unknown_or_someone_elses_is_refused_alike(
    lead, contestants
):
    zq, ol, judge = contestants
    theirs = saved_run(make_user("owner@example.com"), [zq, ol])
    as_lead = client_for(lead)
    for previous in ["not-a-run", str(uuid.uuid4()), str(theirs.pk)]:
        page = as_lead.post(
            reverse("compare"),
            {"prompt": "Keep me", "models": [zq.pk, ol.pk], "previous": previous, "seed": "7"},
        )
        body = page.content.decode()
        assert page.status_code == 400, previous
        assert UNKNOWN_PREVIOUS.replace("'", "&#x27;") in body
        # Nothing typed is lost, and the bad link is dropped so the next submit goes through.
        assert "Keep me</textarea>" in body and 'value="7"' in body
        assert f'value="{previous}"' not in body
    assert not CompareRun.objects.filter(prompt="Keep me").exists()
    # One's own earlier run is linked.
    mine = saved_run(lead, [zq, ol])
    page = as_lead.post(
        reverse("compare"), {"prompt": "Again", "models": [zq.pk, ol.pk], "previous": str(mine.pk)}
    )
    assert page.status_code == 302
    assert CompareRun.objects.get(prompt="Again").previous_id == mine.pk


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seed", "soon", "The seed must be a whole number"),
        ("seed", "9" * 30, "The seed must be a whole number"),
        ("judge", "the fair one", "The judge is not one of the listed"),
        ("judge", "9" * 30, "may not judge"),
        ("max_tokens", "100000", "max_tokens 100,000 is over Zephyr Quill&#x27;s limit of 8,192"),
    ],
)
def test_unreadable_fields_are_refused_with_a_message_and_the_form_kept(
    lead, contestants, field, value, message
):
    zq, ol, judge = contestants
    data = {"prompt": "Keep me, please", "models": [zq.pk, ol.pk], "system_prompt": "Be brief"}
    data[field] = [zq.pk, value] if field == "models" else value
    page = client_for(lead).post(reverse("compare"), data)
    body = page.content.decode()
    assert page.status_code == 400 and message in body
    assert "Keep me, please</textarea>" in body and "Be brief</textarea>" in body
    assert not CompareRun.objects.exists()
