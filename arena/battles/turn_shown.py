"""A turn shown to its end: the vote clock starts, and the battle may be voted on. It runs for
every battle, so its statements are built once per process (arena.core.statements)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import Exists, Subquery
from django.db.models.sql import UpdateQuery
from django.utils import timezone

from arena.core.statements import statement
from arena.records.models import Answer, Battle, Turn


@transaction.atomic
def turn_shown(*, turn_id: int, at: datetime | None = None) -> None:
    """Both answers of the turn have been fully shown: the vote clock starts now (the first
    time only). Two statements, each built once per process (they run for every battle): the
    turn's time (its row locked while another showing of it waits), the battle made ready where
    it may be."""
    shown = statement("turn_shown", _turn_shown_query, {"turn_id": (-1, -2), "at": _AT_MARKS})
    ready = statement("turn_ready", _turn_ready_query, {"turn_id": (-1, -2)})
    at = Turn._meta.get_field("shown_at").get_db_prep_save(at or timezone.now(), connection)
    with connection.cursor() as cursor:
        cursor.execute(shown.sql, shown.bind(turn_id=turn_id, at=at))
        cursor.execute(ready.sql, ready.bind(turn_id=turn_id))


_AT_MARKS = (datetime(2001, 1, 1, tzinfo=UTC), datetime(2002, 2, 2, tzinfo=UTC))


def _turn_shown_query(*, turn_id: int, at: datetime) -> UpdateQuery:
    query = Turn.objects.filter(pk=turn_id, shown_at__isnull=True).query.chain(UpdateQuery)
    query.add_update_values({"shown_at": at})
    return query


def _turn_ready_query(*, turn_id: int) -> UpdateQuery:
    # Waiting: its answers had all finished before anyone watched them to the end (a tab
    # reloaded, a resume); watched now, it may be voted on once every answer is complete.
    unfinished = Answer.objects.filter(turn_id=turn_id).exclude(status=Answer.Status.OK)
    battle = Battle.objects.filter(
        pk=Subquery(Turn.objects.filter(pk=turn_id).values("battle_id")),
        status__in=Battle.UNWATCHED,
    ).exclude(Exists(unfinished))
    query = battle.query.chain(UpdateQuery)
    query.add_update_values({"status": Battle.Status.READY})
    return query
