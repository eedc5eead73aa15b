"""Who may use compare mode, who may judge, and the form's references checked: the earlier
run a form was filled from, and ids typed in. Reads only: ``services`` and the views refuse
with them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db.models import Q, QuerySet

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.compare.models import CompareRun
from arena.core.errors import ServiceError

# Ids are PostgreSQL bigints: a larger number typed into the form is no id, not a crash.
ID_MAX = 2**63 - 1
FORBIDDEN = "Compare mode needs the use_compare permission: ask an administrator."
# One message for an earlier run that is not there and one that is someone else's, so run ids
# cannot be probed through the form.
UNKNOWN_PREVIOUS = (
    "The earlier run this form was filled from is not one of your runs, so it was left out; "
    "everything else is as you typed it. Run again to start afresh."
)


def compare_allowed(*, user: User) -> bool:
    """Compare mode spends money, so it takes the arena.use_compare permission, never the staff
    flag alone: with COMPARE["ACCESS"] = "staff" (the default) staff accounts given it, with
    "team" any account given it. Superusers hold every permission."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    if not user.has_perm("arena.use_compare"):
        return False
    return settings.COMPARE["ACCESS"] == "team" or user.is_staff


def sees_every_run(*, user: User) -> bool:
    """Whether the user may read other users' runs (their pages and exports): by permission,
    as the admin's audit pages are, never by the staff flag. Superusers hold every permission."""
    return user.is_active and user.has_perm("arena.view_comparerun")


def judges_allowed() -> QuerySet[ModelEntry]:
    """Who may judge: an active model, or one named as a judge in settings (COMPARE_JUDGE_MODEL,
    COMPARE_JUDGES), which is usually kept out of battles. Any other inactive model (retired,
    its keys gone) is refused."""
    named = [settings.COMPARE["JUDGE_MODEL"], *settings.COMPARE["JUDGES"]]
    return ModelEntry.objects.filter(Q(active=True) | Q(public_name__in=[n for n in named if n]))


def is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= ID_MAX


def previous_own(*, previous_id: object, user: User) -> uuid.UUID | None:
    """The earlier run a form was filled from: only one of the user's own."""
    if previous_id is None or previous_id == "":
        return None
    try:
        pk = uuid.UUID(str(previous_id))
    except ValueError:
        raise ServiceError("unknown_previous", UNKNOWN_PREVIOUS) from None
    if not CompareRun.objects.filter(pk=pk, user=user).exists():
        raise ServiceError("unknown_previous", UNKNOWN_PREVIOUS)
    return pk
