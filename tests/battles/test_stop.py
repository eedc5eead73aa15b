"""Stop: the rater ends a battle mid-stream; both generations are cancelled where they run (the
Celery worker, or this process), the battle is void (recorded, never counted), and a new one can
start on the same socket."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from arena.catalog.models import ModelEntry
from arena.records.models import Answer, Battle
from tests.helpers import RECEIVE_TIMEOUT, frames_until, make_model, start_battle, wait_until

pytestmark = pytest.mark.usefixtures("generation")


def _stalling_pair() -> None:
    # One model that never sends a token, one that is still writing: neither ends by itself
    # before the turn's deadline.
    make_model("Stuck Heron", "stuck-heron", misbehaviour="stall")
    make_model("Slow Heron", "slow-heron", tokens_per_s=4, answer_tokens=400)


def _answers(battle_id: str) -> list[Answer]:
    return list(Answer.objects.filter(turn__battle_id=battle_id))


async def test_stop_cancels_both_generations_and_voids_the_battle(ws_connect, alice, db):
    await database_sync_to_async(_stalling_pair)()
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "Tell me a long story."})
    (battle,) = await frames_until(comm, "battle")
    await database_sync_to_async(wait_until)(  # both under way, so both must be cancelled
        lambda: {a.status for a in _answers(battle["battle"])} == {Answer.Status.RUNNING}
    )
    await comm.send_json_to({"action": "stop", "battle": battle["battle"]})
    frames = await frames_until(comm, "stopped")
    assert frames[-1] == {"type": "stopped", "battle": battle["battle"]}

    row = await database_sync_to_async(Battle.objects.get)(pk=battle["battle"])
    assert (row.status, row.void_reason) == (Battle.Status.VOID, "stopped by the rater")
    # Cancelled where they ran, not left to reach their deadline: "stopped", not "timeout".
    await database_sync_to_async(wait_until)(
        lambda: all(a.is_terminal for a in _answers(battle["battle"]))
    )
    answers = await database_sync_to_async(_answers)(battle["battle"])
    assert {a.error_kind for a in answers} == {"stopped"}
    assert {a.status for a in answers} <= {Answer.Status.ERROR, Answer.Status.PARTIAL}

    # Nothing more of it is shown, and a new battle starts on the same socket.
    await database_sync_to_async(make_model)("Quick Tern", "quick-tern")
    await database_sync_to_async(make_model)("Quick Gull", "quick-gull")
    await database_sync_to_async(
        ModelEntry.objects.filter(model_id__in=["stuck-heron", "slow-heron"]).update
    )(active=False)
    frames = await start_battle(comm, "Something short, please.")
    assert frames[-1]["type"] == "turn_complete"
    assert {f.get("battle", frames[0]["battle"]) for f in frames} == {frames[0]["battle"]}
    await comm.disconnect()


async def test_a_voted_battle_cannot_be_stopped(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    battle = frames[0]["battle"]
    await comm.send_json_to({"action": "vote", "battle": battle, "choice": "tie"})
    await frames_until(comm, "revealed")
    await comm.send_json_to({"action": "stop", "battle": battle})
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "already_voted"
    row = await database_sync_to_async(Battle.objects.get)(pk=battle)
    assert row.status == Battle.Status.VOTED
    await comm.disconnect()


async def test_another_raters_battle_cannot_be_stopped(ws_connect, alice, bob, db):
    await database_sync_to_async(_stalling_pair)()
    mine = await ws_connect(alice)
    await mine.connect()
    await mine.send_json_to({"action": "start", "prompt": "A long story, please."})
    (battle,) = await frames_until(mine, "battle")
    theirs = await ws_connect(bob)
    await theirs.connect()
    await theirs.send_json_to({"action": "stop", "battle": battle["battle"]})
    frame = await theirs.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "not_your_battle"
    row = await database_sync_to_async(Battle.objects.get)(pk=battle["battle"])
    assert row.status == Battle.Status.GENERATING
    await mine.send_json_to({"action": "stop", "battle": battle["battle"]})
    await frames_until(mine, "stopped")
    await mine.disconnect()
    await theirs.disconnect()
