"""Writes of permission groups: a named set of permissions that staff members are given together,
so that what a staff member may do is what the groups say, never the staff flag alone."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

from accounts.models import User


@transaction.atomic
def group_ensure(*, name: str, permissions: Iterable[str], members: Iterable[User] = ()) -> Group:
    """The group ``name`` holding exactly ``permissions`` ("app_label.codename"), with
    ``members`` added to it (members it has already stay). Running it again changes nothing.

    An unknown permission is an error rather than skipped: a group quietly missing the
    permission it was made for would look right and grant nothing."""
    wanted = set(permissions)
    pairs = [p.split(".", 1) for p in wanted]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"Permissions are named 'app_label.codename': {sorted(wanted)}")
    match = Q(pk__in=[])
    for app_label, codename in pairs:
        match |= Q(content_type__app_label=app_label, codename=codename)
    found = list(Permission.objects.filter(match).select_related("content_type"))
    missing = wanted - {f"{p.content_type.app_label}.{p.codename}" for p in found}
    if missing:
        raise ValueError(f"No such permission (are the migrations applied?): {sorted(missing)}")
    group, _ = Group.objects.get_or_create(name=name)
    group.permissions.set(found)
    group.user_set.add(*members)
    return group
