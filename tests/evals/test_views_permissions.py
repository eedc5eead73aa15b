"""The calibration report takes the named permission arena.view_calibration, not the staff flag."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from tests.helpers import make_user


def signed_in(email: str, *permissions: str, staff: bool = True) -> Client:
    user = make_user(email, is_staff=staff)
    for name in permissions:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("page", ["calibration", "calibration-json"])
def test_staff_without_the_calibration_permission_get_403_and_no_report(db, page):
    # Every other permission of the arena but this one: none of them opens the report.
    others = ("arena.use_compare", "arena.run_evals", "arena.view_pools", "arena.view_evalrun")
    response = signed_in("staff@example.com", *others).get(reverse(page))
    assert response.status_code == 403
    if page == "calibration-json":  # scripts get a JSON refusal, never HTML
        assert response.json()["error"] == "forbidden"
    body = response.content.decode()
    assert "Judge calibration" not in body and "judges" not in body and "schema" not in body


def test_staff_with_the_calibration_permission_see_the_report(db):
    client = signed_in("calibrator@example.com", "arena.view_calibration")
    page = client.get(reverse("calibration"))
    assert page.status_code == 200 and "Judge calibration" in page.content.decode()
    data = client.get(reverse("calibration-json")).json()
    assert data["schema"] == "arena.calibration/1" and data["judges"] == []


def test_the_calibration_link_is_shown_only_to_staff_who_may_open_it(db):
    link = f'href="{reverse("calibration")}"'
    without = signed_in("staff@example.com").get(reverse("leaderboard")).content.decode()
    assert link not in without and 'href="/admin/"' in without
    holder = signed_in("calibrator@example.com", "arena.view_calibration")
    assert link in holder.get(reverse("leaderboard")).content.decode()
