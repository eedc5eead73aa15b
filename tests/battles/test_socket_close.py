"""A socket that closes mid-stream, on a real daphne: the battle only leaves the pacing
schedule, stays as it was, and a reload's "Carry on" shows it again from another socket."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from arena.devtools.processes import DaphneServer
from arena.records.models import Battle
from tests.helpers import (
    answer_texts,
    make_model,
    pane_text,
    real_socket,
    session_headers,
    socket_frames_until,
    subprocess_env,
)

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL, reason="a real web process shares its battles through Redis"
)

CLOSED_MID_FRAME = "socket closed mid-frame"  # what live.py logs, at INFO
RELOADS = 40


@pytest.fixture
def web_process(generation, tmp_path):
    """A daphne of this test's own: its log where no other test writes, at INFO; a frame every
    millisecond while there is text to show; resumes unlimited, as reloads here are many."""
    env = {
        **subprocess_env(),
        "LOG_LEVEL": "INFO",
        "ARENA_PACE_TICK_MS": "1",
        "ARENA_PACE_CHARS": "2",
        "RATELIMIT_FOLLOW_UP_USER": "",
        "RATELIMIT_FOLLOW_UP_NETWORK": "",
    }
    server = DaphneServer(tmp_path / "daphne.log", env=env)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _writing_pair() -> None:
    # Still writing for seconds, so every reload below closes a socket mid-stream.
    make_model("Slow Finch", "slow-finch", tokens_per_s=60, answer_tokens=300)
    make_model("Slow Wren", "slow-wren", tokens_per_s=80, answer_tokens=300)


def logged(server: DaphneServer) -> str:
    with open(server.log.name, errors="replace") as log:
        return log.read()


async def test_a_socket_closed_mid_stream_leaves_the_battle_to_carry_on_with(web_process, alice):
    await database_sync_to_async(_writing_pair)()
    headers = await database_sync_to_async(session_headers)(alice)
    url = web_process.url
    async with real_socket(url, headers) as sock:
        await sock.send(json.dumps({"action": "start", "prompt": "Tell me a long story."}))
        battle_id = (await socket_frames_until(sock, "delta"))[0]["battle"]
    # Reloads: each page carries on with the battle, is shown text, and closes (a close frame,
    # as a browser sends) while the schedule is still sending it frames. Daphne refuses a send
    # between that frame and the connection's end; once one has met it, that is enough.
    reloads = 0
    while reloads < RELOADS:
        reloads += 1
        async with real_socket(url, headers) as sock:
            await sock.send(json.dumps({"action": "resume", "battle": battle_id}))
            frames = await socket_frames_until(sock, "delta", "void", "error", "turn_complete")
        assert frames[-1]["type"] == "delta", frames[-1]
        if CLOSED_MID_FRAME in logged(web_process):
            break

    async with real_socket(url, headers) as sock:
        await sock.send(json.dumps({"action": "resume", "battle": battle_id}))
        frames = await socket_frames_until(sock, "turn_complete", "void", "error")
    assert frames[-1]["type"] == "turn_complete", frames[-1]
    answers = await database_sync_to_async(answer_texts)(battle_id)
    assert (pane_text(frames, "a"), pane_text(frames, "b")) == (answers["a"], answers["b"])
    battle = await database_sync_to_async(Battle.objects.get)(pk=battle_id)
    assert battle.status != Battle.Status.VOID, battle.void_reason
    log = logged(web_process)
    assert "pacing a battle failed" not in log
    print(f"reloads: {reloads}; closed under a frame: {log.count(CLOSED_MID_FRAME)}")
