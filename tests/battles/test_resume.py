"""Resume: a rater's battle shown again on another socket, another tab or after its streams
expired, through the real ASGI router, database and generation path."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from arena.records.models import Answer
from tests.helpers import answer_texts, frames_until, pane_text, start_battle

pytestmark = pytest.mark.usefixtures("generation")


async def socket_started(ws_connect, user):
    """A socket of the user's, a battle started on it; the socket and the "battle" frame."""
    comm = await ws_connect(user)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "Explain recursion briefly."})
    (started,) = await frames_until(comm, "battle")
    return comm, started


async def socket_resumed(ws_connect, user, battle_id: str):
    """Another socket of the user's, asked to show the battle again."""
    comm = await ws_connect(user)
    await comm.connect()
    await comm.send_json_to({"action": "resume", "battle": battle_id})
    return comm


async def test_a_battle_is_shown_again_on_another_socket_and_voted_there(
    ws_connect, alice, two_models
):
    first, started = await socket_started(ws_connect, alice)
    await first.disconnect()  # mid-stream
    second = await socket_resumed(ws_connect, alice, started["battle"])
    frames = await frames_until(second, "turn_complete", "void", "error")
    assert frames[0] == {
        "type": "battle",
        "battle": started["battle"],
        "turn": 0,
        "resumed": True,
        "earlier": [],
        "text": "Explain recursion briefly.",
    }
    texts = await database_sync_to_async(answer_texts)(started["battle"])
    assert (pane_text(frames, "a"), pane_text(frames, "b")) == (texts["a"], texts["b"])
    await second.send_json_to({"action": "vote", "choice": "b"})
    assert (await frames_until(second, "revealed"))[-1]["choice"] == "b"
    await second.send_json_to({"action": "resume", "battle": started["battle"]})
    assert (await frames_until(second, "error"))[-1]["code"] == "already_voted"
    await second.disconnect()


async def test_a_second_tab_on_a_battle_while_it_streams_gets_all_of_it_too(
    ws_connect, alice, two_models
):
    first, started = await socket_started(ws_connect, alice)
    second = await socket_resumed(ws_connect, alice, started["battle"])
    seen = [await frames_until(comm, "turn_complete", "void", "error") for comm in (first, second)]
    texts = await database_sync_to_async(answer_texts)(started["battle"])
    for frames in seen:
        assert frames[-1]["type"] == "turn_complete"
        assert (pane_text(frames, "a"), pane_text(frames, "b")) == (texts["a"], texts["b"])
    await first.disconnect()
    await second.disconnect()


async def test_a_battle_shown_again_after_its_streams_expired_comes_from_the_database(
    ws_connect, alice, two_models
):
    from arena.generation.streams import answer_streams, stream_key

    comm = await ws_connect(alice)
    await comm.connect()
    battle_id = (await start_battle(comm))[0]["battle"]
    answers = await database_sync_to_async(
        lambda: list(Answer.objects.filter(turn__battle_id=battle_id).order_by("side"))
    )()
    answer_streams().expire([stream_key(battle_id=battle_id, answer_id=a.pk) for a in answers], 0)
    await comm.send_json_to({"action": "resume", "battle": battle_id})
    frames = await frames_until(comm, "turn_complete", "void", "error")
    assert (pane_text(frames, "a"), pane_text(frames, "b")) == tuple(a.text for a in answers)
    await comm.send_json_to({"action": "vote", "choice": "tie"})
    assert (await frames_until(comm, "revealed"))[-1]["choice"] == "tie"
    await comm.disconnect()


async def test_another_raters_battle_cannot_be_resumed(ws_connect, alice, bob, two_models):
    mine = await ws_connect(alice)
    await mine.connect()
    battle = (await start_battle(mine))[0]["battle"]
    theirs = await ws_connect(bob)
    await theirs.connect()
    for bad, code in [(battle, "not_your_battle"), ("no-such", "unknown_battle"), (7, "no_battle")]:
        await theirs.send_json_to({"action": "resume", "battle": bad})
        assert (await frames_until(theirs, "error"))[-1]["code"] == code
    await mine.disconnect()
    await theirs.disconnect()


async def test_a_page_that_lost_its_panes_gets_the_earlier_turns_back_redacted(ws_connect, alice):
    from tests.helpers import make_two_models

    # Answers that name their maker, which the panes showed hidden.
    await database_sync_to_async(make_two_models)(prefix="Made by Nimbus Research. ")
    comm = await ws_connect(alice)
    await comm.connect()
    battle_id = (await start_battle(comm))[0]["battle"]
    await comm.send_json_to({"action": "follow_up", "text": "And in one line?"})
    await frames_until(comm, "turn_complete", "void", "error")
    await comm.disconnect()
    page = await socket_resumed(ws_connect, alice, battle_id)  # a reloaded tab
    frames = await frames_until(page, "turn_complete", "void", "error")
    (earlier,) = frames[0]["earlier"]
    assert earlier["text"] == "Explain recursion briefly."
    assert frames[0]["text"] == "And in one line?"
    for side in "ab":
        assert earlier[side].startswith("Made by [") and "Nimbus" not in earlier[side]
    await page.disconnect()


async def test_resuming_a_battle_whose_worker_died_mid_answer_says_so_at_once(
    ws_connect, alice, two_models
):
    from datetime import timedelta

    from asgiref.sync import sync_to_async
    from django.utils import timezone

    from arena.generation.streams import answer_streams, stream_key
    from arena.records.models import Battle, Turn

    comm = await ws_connect(alice)
    await comm.connect()
    battle_id = (await start_battle(comm))[0]["battle"]

    def worker_died_mid_follow_up() -> str:
        """What a worker killed mid-answer leaves: a running answer, some text, no heartbeat."""
        battle = Battle.objects.get(pk=battle_id)
        Battle.objects.filter(pk=battle_id).update(status=Battle.Status.GENERATING)
        turn = Turn.objects.create(battle=battle, index=1, text="And then?")
        for side in "ab":
            Answer.objects.create(
                turn=turn,
                side=side,
                model=battle.model_for(side),
                status=Answer.Status.RUNNING,
                started_at=timezone.now() - timedelta(seconds=3),
            )
        return stream_key(battle_id=battle_id, answer_id=turn.answers.get(side="a").pk)

    key = await sync_to_async(worker_died_mid_follow_up)()
    await answer_streams().append(key, "Half of it")
    await comm.send_json_to({"action": "resume", "battle": battle_id})
    frames = await frames_until(comm, "void", "turn_complete", "error")
    assert frames[-1]["type"] == "void"
    battle = await database_sync_to_async(Battle.objects.get)(pk=battle_id)
    assert battle.void_reason == "a model server stopped"
    await comm.disconnect()
    # The other side wrote nothing: it was handed to a worker again, which finishes it.
