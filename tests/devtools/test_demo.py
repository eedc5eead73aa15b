"""The demo's operators group: the four named permissions running the arena takes."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from accounts.models import User
from arena.devtools.demo import ADMIN_EMAIL, OPERATORS_GROUP, demo_seed
from tests.helpers import make_user

NAMED = {"arena.use_compare", "arena.run_evals", "arena.view_calibration", "arena.view_pools"}


def test_the_demo_makes_an_operators_group_that_opens_what_the_staff_flag_does_not(db, monkeypatch):
    monkeypatch.setattr("arena.devtools.demo.SIMULATED_VOTES", 100)  # the votes are not tested
    demo_seed()
    demo_seed()  # idempotent: one group, the same permissions
    group = Group.objects.get(name=OPERATORS_GROUP)
    held = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
    assert held == NAMED
    assert group.user_set.filter(email=ADMIN_EMAIL).exists()
    assert User.objects.get(email=ADMIN_EMAIL).get_all_permissions() >= NAMED

    # A staff member who is no superuser: the staff flag alone opens none of it, the group all.
    operator = make_user("operator@example.com", is_staff=True)
    client = Client()
    client.force_login(operator)
    pages = [reverse("calibration"), reverse("admin:arena_modelentry_pools"),
             reverse("admin:arena_evalrun_add")]  # fmt: skip
    assert [client.get(page).status_code for page in pages] == [403, 403, 403]
    operator.groups.add(group)
    assert [client.get(page).status_code for page in pages] == [200, 200, 200]
    assert User.objects.get(pk=operator.pk).has_perm("arena.use_compare")
