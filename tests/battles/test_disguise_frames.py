"""A real battle whose model names its maker in disguise: the frames the rater's socket gets
never show the name, the rater is told a name was hidden, and the vote carries a leak flag."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from arena.records.models import Vote
from tests.helpers import (
    RECEIVE_TIMEOUT,
    assert_no_identity,
    flag_reasons,
    frames_until,
    make_model,
    pane_text,
    start_battle,
)

pytestmark = pytest.mark.usefixtures("generation")

# What the sly model says first; the mock streams it one character a chunk (so each name
# arrives in pieces, and the held tail has to wait for the rest), then its ordinary answer.
DISGUISES = {
    "glued suffix": ("ClaudeAI", "Anthropic"),
    "spelt out": ("C l a u d e", "A-n-t-h-r-o-p-i-c"),
    "cyrillic": ("Сlaude", "ОpenAI"),  # Cyrillic С and О
    "zero-width": ("Cl\u200baude", "Goo\u200dgle"),
    "fullwidth plural": ("ＧＰＴs", "ＯｐｅｎＡＩ"),
    "dotted and greek": ("G.e.m.i.n.i", "Μeta"),  # Greek Μ
    "underscored": ("M_i_s_t_r_a_l", "L l a m a"),
    "markup and right-to-left": ("Cl**au**de", "\u202e" + "Anthropic"[::-1] + "\u202c"),
}


@pytest.mark.parametrize("how", DISGUISES)
async def test_a_disguised_name_never_reaches_the_rater_and_the_vote_is_flagged(
    ws_connect, alice, db, how
):
    name, maker = DISGUISES[how]
    honest = await database_sync_to_async(make_model)("Honest", "honest-1")
    sly = await database_sync_to_async(make_model)(
        "Sly", "sly-1", prefix=f"I am {name}, trained by {maker}. ", misbehaviour="prefix_by_char"
    )
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "Tell me a fact.")
    assert frames[-1]["type"] == "turn_complete"

    shown = {side: pane_text(frames, side) for side in "ab"}
    sly_side = "a" if shown["a"].startswith("I am") else "b"
    assert (
        shown[sly_side]
        .replace("\u202c", "")
        .startswith("I am [model name], trained by [model name]. ")
    )
    everything = json.dumps(frames, ensure_ascii=False)
    for secret in (name, maker):
        assert secret not in everything
    assert_no_identity(everything, [honest, sly])
    assert [f["code"] for f in frames if f["type"] == "notice"] == ["identity_leak"]

    await comm.send_json_to({"action": "vote", "choice": sly_side})
    assert (await frames_until(comm, "revealed", "error"))[-1]["type"] == "revealed"
    vote = await database_sync_to_async(Vote.objects.get)(battle_id=frames[0]["battle"])
    assert "identity_leak" in await database_sync_to_async(flag_reasons)(vote)
    await comm.disconnect()


async def test_an_indirect_identity_question_is_flagged_before_generation(
    ws_connect, alice, two_models
):
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "Tell me the company that trained you.")
    assert [f["code"] for f in frames if f["type"] == "notice"][:1] == ["identity_question"]
    await comm.send_json_to({"action": "vote", "choice": "a"})
    assert (await comm.receive_json_from(timeout=RECEIVE_TIMEOUT))["type"] == "revealed"
    vote = await database_sync_to_async(Vote.objects.get)(battle_id=frames[0]["battle"])
    assert "identity_question" in await database_sync_to_async(flag_reasons)(vote)
    await comm.disconnect()
