"""Hostile websocket input, fuzzed (bounded): whatever a socket is sent, each message is answered
with a frame and the socket stays open; never a 1011 or a traceback. Through the real router,
database and generation path."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import RECEIVE_TIMEOUT, session_headers

pytestmark = pytest.mark.usefixtures("generation")

NASTY = st.sampled_from(["\x00", "\ud800", "\udfff", "\u202e", "\ufeff", "𝔘", "'\"<>&", ""])
TEXT = st.lists(st.one_of(NASTY, st.text(max_size=20)), max_size=6).map("".join)
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), TEXT, st.just("tie")
)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
ACTION = st.one_of(
    st.sampled_from(["start", "resume", "follow_up", "vote", "compare", "START"]), JSON
)
FIELDS = st.sampled_from(["prompt", "text", "battle", "choice", "prompt_id", "action"])
MESSAGE = st.one_of(
    st.builds(lambda a, extra: {"action": a, **extra}, ACTION, st.dictionaries(FIELDS, JSON)),
    JSON,
)


def frame_text(message: object) -> str:
    try:
        return json.dumps(message)  # lone surrogates go as \\ud800 escapes, as a browser's would
    except (TypeError, ValueError):
        return str(message)


RAW = st.one_of(
    MESSAGE.map(frame_text),
    st.text(max_size=40),
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 3000).map(lambda n: '{"action":' * n),
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(messages=st.lists(st.one_of(RAW, st.binary(max_size=30)), min_size=1, max_size=12))
def test_any_message_is_answered_and_the_socket_stays_open(alice, two_models, messages):
    async_to_sync(converse)(alice, messages)


async def converse(user, messages: list) -> None:
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator

    from arena.asgi import application

    headers = await database_sync_to_async(session_headers)(user)
    comm = WebsocketCommunicator(application, "/ws/battle/", headers=headers)
    connected, _ = await comm.connect()
    assert connected
    for message in messages:  # as the server receives them, empty ones too
        kind = "bytes" if isinstance(message, bytes) else "text"
        await comm.send_input({"type": "websocket.receive", kind: message})
    # A last message whose answer comes after every earlier one's: the socket took them all.
    await comm.send_json_to({"action": "sentinel"})
    while True:
        out = await comm.receive_output(timeout=RECEIVE_TIMEOUT)
        assert out["type"] == "websocket.send", f"the socket closed: {out}"
        frame = json.loads(out["text"])
        assert isinstance(frame.get("type"), str)
        if frame["type"] == "error":
            assert frame["code"] != "internal" and frame["message"]
            if "sentinel" in frame["message"]:
                break
    await comm.disconnect()
