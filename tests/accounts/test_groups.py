"""Permission groups: a named set of permissions staff members are given together."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from accounts.groups import group_ensure
from tests.helpers import make_user


def held(group: Group) -> set[str]:
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def test_a_group_holds_exactly_its_permissions_and_its_members_get_them(db):
    alice = make_user("alice@example.com", is_staff=True)
    group = group_ensure(name="Evaluators", permissions=["arena.run_evals", "arena.view_pools"])
    group_ensure(name="Evaluators", permissions=["arena.run_evals"], members=[alice])
    group.refresh_from_db()
    assert held(group) == {"arena.run_evals"}  # the set given last, not a union
    assert Group.objects.filter(name="Evaluators").count() == 1
    assert alice.has_perm("arena.run_evals") and not alice.has_perm("arena.view_pools")


def test_members_already_in_a_group_stay_when_it_is_ensured_again(db):
    alice = make_user("alice@example.com", is_staff=True)
    bob = make_user("bob@example.com", is_staff=True)
    group_ensure(name="Ops", permissions=["arena.view_pools"], members=[alice])
    group = group_ensure(name="Ops", permissions=["arena.view_pools"], members=[bob])
    assert set(group.user_set.values_list("email", flat=True)) == {alice.email, bob.email}


@pytest.mark.parametrize("name", ["arena.no_such_permission", "run_evals", "nope.run_evals"])
def test_an_unknown_permission_is_refused_and_makes_no_group(db, name):
    with pytest.raises(ValueError, match="run_evals|no_such_permission"):
        group_ensure(name="Broken", permissions=["arena.view_pools", name])
    assert not Group.objects.filter(name="Broken").exists()
