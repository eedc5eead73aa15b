"""The sweep as deployed: Celery beat sends it every few seconds to a real worker. Battles that
nobody watched to the end leave "generating" for good: a finished one waits for its rater and
can be shown again, one whose streams are gone is abandoned, and one still unfinished long past
its deadline is ended."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.battles.services import battle_start
from arena.battles.sweep import NOBODY_WATCHED
from arena.devtools.processes import CeleryProcess
from arena.generation.streams import answer_streams, stream_key
from arena.records.models import Answer, Battle, Turn
from tests.helpers import (
    ROOT,
    frames_until,
    make_user,
    subprocess_env,
    wait_for_answers,
    wait_until,
)

pytestmark = pytest.mark.skipif(
    settings.GENERATION_MODE != "celery", reason="beat runs the sweep only with Celery"
)


@pytest.fixture
def beat(generation) -> Iterator[CeleryProcess]:
    proc = CeleryProcess(
        "beat", ROOT / "var" / f"test-beat-{uuid.uuid4().hex[:8]}.log", env=subprocess_env()
    )
    proc.start()
    yield proc
    proc.stop()
    proc.log_path.unlink(missing_ok=True)


def unwatched(email: str) -> Battle:
    """A battle whose socket closed as it started: its answers finish with nobody watching."""
    battle = battle_start(rater=make_user(email), text=f"What is a monad, {email}?")
    wait_for_answers(battle.pk)
    return Battle.objects.select_related("rater").get(pk=battle.pk)


def long_ago(battle: Battle, *, status: str = Battle.Status.GENERATING) -> None:
    """Its turn began an hour ago, and it is still generating (as a crash or an older release
    left it)."""
    Battle.objects.filter(pk=battle.pk).update(status=status)
    Turn.objects.filter(battle=battle).update(created_at=timezone.now() - timedelta(hours=1))


def streams_gone(battle: Battle) -> None:
    """Expired, as Redis drops them once their hour is up (or loses them in a restart)."""
    answers = Answer.objects.filter(turn__battle=battle).values_list("pk", flat=True)
    answer_streams().expire([stream_key(battle_id=battle.pk, answer_id=pk) for pk in answers], 0)


def status_of(battle: Battle) -> tuple[str, str]:
    return tuple(Battle.objects.filter(pk=battle.pk).values_list("status", "void_reason").get())


def scene() -> dict[str, Battle]:
    resumable, gone, expiring, stuck = (
        unwatched(f"{name}@example.com") for name in ("ria", "gus", "ivy", "oto")
    )
    assert status_of(expiring)[0] == Battle.Status.WAITING  # its last answer's finish did that
    long_ago(resumable)
    long_ago(gone)
    streams_gone(gone)
    streams_gone(expiring)
    with transaction.atomic():
        # Both answers lost with their tasks, already sent again once: only the deadline ends
        # it.
        Answer.objects.filter(turn__battle=stuck).update(status=Answer.Status.PENDING, requeues=1)
        long_ago(stuck)
    return {"resumable": resumable, "gone": gone, "expiring": expiring, "stuck": stuck}


def swept(battles: dict[str, Battle]) -> bool:
    return (
        status_of(battles["resumable"])[0] == Battle.Status.WAITING
        and status_of(battles["stuck"])[0] == Battle.Status.VOID
        and status_of(battles["gone"])[0] == Battle.Status.VOID
        and status_of(battles["expiring"])[0] == Battle.Status.VOID
    )


async def test_beat_ends_every_battle_nobody_watched_to_the_end(beat, ws_connect, two_models):
    battles = await database_sync_to_async(scene)()
    await database_sync_to_async(wait_until)(lambda: swept(battles), limit_s=60)
    for name in ("gone", "expiring"):
        assert await database_sync_to_async(status_of)(battles[name]) == (
            Battle.Status.VOID,
            NOBODY_WATCHED,
        )
    assert await database_sync_to_async(status_of)(battles["stuck"]) == (
        Battle.Status.VOID,
        "stuck past the deadline",
    )

    # The one still readable is shown again to its rater, who may then vote on it.
    resumable = battles["resumable"]
    comm = await ws_connect(resumable.rater)
    await comm.connect()
    await comm.send_json_to({"action": "resume", "battle": str(resumable.pk)})
    frames = await frames_until(comm, "turn_complete", "void", "error")
    assert frames[-1]["type"] == "turn_complete"
    assert (await database_sync_to_async(status_of)(resumable))[0] == Battle.Status.READY
    await comm.send_json_to({"action": "vote", "choice": "a"})
    assert (await frames_until(comm, "revealed", "error"))[-1]["type"] == "revealed"
    await comm.disconnect()
