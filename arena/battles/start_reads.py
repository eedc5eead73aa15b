"""What a start reads before it writes, each in one statement built once per process
(arena.core.statements): the rater's row, locked, and the state the start is drawn under."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet

from accounts.models import User
from accounts.selectors import email_verified_exists
from arena.battles.draw_cache import Stamps
from arena.core.statements import statement
from arena.records.models import Battle, GoldItem


def _rater_query(*, pk: int, lock: bool) -> QuerySet[User]:
    qs = User.objects.select_for_update() if lock else User.objects
    return qs.annotate(email_verified=email_verified_exists()).filter(pk=pk)


def rater_read(*, rater: User, lock: bool = False) -> User:
    """The rater's row from the database (a websocket holds the user it connected with, maybe
    from before a ban or their accepting the terms), with whether they have a verified email
    address, in one statement, built once per process; locked with ``lock``."""
    built = statement(
        f"rater_read:{lock}", lambda pk: _rater_query(pk=pk, lock=lock), {"pk": (-1, -2)}
    )
    for row in User.objects.raw(built.sql, built.bind(pk=rater.pk)):
        row.email_verified = bool(row.email_verified)  # SQLite's 0 or 1
        return row
    raise User.DoesNotExist("User matching query does not exist.")


@dataclass(frozen=True)
class StartState:
    stamps: Stamps
    unwatched: bool  # the rater has a battle to abandon
    gold_live: bool  # some gold item is served


def _state_query(*, pk: int) -> QuerySet[User]:
    return (
        User.objects.filter(pk=pk)
        .annotate(
            unwatched=Exists(
                Battle.objects.filter(rater=OuterRef("pk"), status__in=Battle.UNWATCHED)
            ),
            gold_live=Exists(GoldItem.objects.filter(active=True)),
            **Stamps.annotations(),
        )
        .values("unwatched", "gold_live", *Stamps.FIELDS)
    )


def start_state(*, rater: User) -> StartState:
    """In one statement, built once per process, once the rater's lock is held: the stamps
    this process's draw_cache is read under, whether the rater has a battle to abandon, and
    whether any gold item is served. Not in the locking statement: one that waited for the
    lock would still read as of before the wait, and miss the battle that the start it waited
    for made, or a retirement committed meanwhile."""
    built = statement("start_state", lambda pk: _state_query(pk=pk), {"pk": (-1, -2)})
    with connection.cursor() as cursor:
        cursor.execute(built.sql, built.bind(pk=rater.pk))
        row = dict(zip((c[0] for c in cursor.description), cursor.fetchone(), strict=True))
    return StartState(
        stamps=Stamps.of(row), unwatched=bool(row["unwatched"]), gold_live=bool(row["gold_live"])
    )
