"""A reasoning model's thinking is kept with its answer for admins, and never reaches a rater:
not in any frame, not in the vote's style counts; its time to first thinking token is kept
beside the time to first visible text."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from arena.backends.mock import thinking_words
from arena.core.text import estimate_tokens
from arena.records.models import Answer, Vote
from tests.helpers import frames_until, make_model, start_battle

pytestmark = pytest.mark.usefixtures("generation")


async def test_thinking_is_stored_apart_and_never_sent_to_the_rater(ws_connect, alice, db):
    def models() -> None:
        make_model("Deep Thinker", "dt-1", thinks=30, tokens_per_s=0)
        make_model("Quick Answer", "qa-1", tokens_per_s=0)

    await database_sync_to_async(models)()
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    assert frames[-1]["type"] == "turn_complete"
    await comm.send_json_to({"action": "vote", "choice": "a"})
    frames += await frames_until(comm, "revealed", "error")
    await comm.disconnect()

    thinker = await database_sync_to_async(
        lambda: Answer.objects.get(model__public_name="Deep Thinker")
    )()
    assert thinker.reasoning == "".join(thinking_words(30))
    assert thinker.reasoning_ttft_ms is not None and thinker.ttft_ms is not None
    assert thinker.reasoning_ttft_ms <= thinker.ttft_ms
    seen = json.dumps(frames)
    assert "mull" not in seen  # not one thinking word reached the browser
    vote = await database_sync_to_async(Vote.objects.get)()
    side = vote.side_a if vote.model_a_id == thinker.model_id else vote.side_b
    assert "mull" not in json.dumps(side)
    # The reported count includes the thinking (as servers count it); the log keeps the
    # answer's own, estimated, for the length style feature.
    assert side["output_tokens"] == estimate_tokens(thinker.text) < thinker.output_tokens
    assert side["tokens_estimated"] is True
