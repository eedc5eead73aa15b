"""The websocket edge, driven through the real ASGI router, database and generation path."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from arena.records.models import Answer, Battle, Vote
from tests.helpers import (
    RECEIVE_TIMEOUT,
    assert_no_identity,
    frames_until,
    make_model,
    pane_text,
    session_headers,
    start_battle,
)

pytestmark = pytest.mark.usefixtures("generation")


async def test_battle_streams_both_sides_then_vote_reveals_names(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    connected, _ = await comm.connect()
    assert connected

    frames = await start_battle(comm)
    assert frames[0]["type"] == "battle"
    assert frames[-1]["type"] == "turn_complete"
    battle = await database_sync_to_async(Battle.objects.select_related("model_a", "model_b").get)(
        pk=frames[0]["battle"]
    )
    answers = await database_sync_to_async(
        lambda: {a.side: a for a in Answer.objects.filter(turn__battle=battle)}
    )()
    # The browser saw exactly what each model produced, on the right side.
    assert pane_text(frames, "a") == answers["a"].text
    assert pane_text(frames, "b") == answers["b"].text
    assert answers["a"].text and answers["b"].text
    assert {answers["a"].status, answers["b"].status} == {"ok"}
    assert answers["a"].ttft_ms is not None and answers["a"].total_ms is not None

    await comm.send_json_to({"action": "vote", "choice": "b"})
    revealed = (await frames_until(comm, "revealed", "error"))[-1]
    assert revealed["type"] == "revealed"
    assert revealed["a"]["name"] == battle.model_a.public_name
    assert revealed["b"]["name"] == battle.model_b.public_name
    vote = await database_sync_to_async(Vote.objects.get)(battle=battle)
    assert vote.choice == "b" and vote.rater_id == alice.pk
    await comm.disconnect()


async def test_nothing_before_the_vote_names_a_model(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    await comm.connect()
    raw: list[str] = []
    for message in (
        {"action": "start", "prompt": "Who are you and who made you?"},
        {"action": "follow_up", "text": "Tell me more."},
    ):
        await comm.send_json_to(message)
        while True:
            raw.append(await comm.receive_from(timeout=RECEIVE_TIMEOUT))
            if json.loads(raw[-1])["type"] in {"turn_complete", "void", "error"}:
                break
    assert_no_identity(raw, two_models)
    # Frames carry sides and text only: no timing, ids or backend detail per side.
    for frame in map(json.loads, raw):
        assert set(frame) <= {"type", "battle", "turn", "a", "b", "message", "code"}
    await comm.send_json_to({"action": "vote", "choice": "tie"})
    after = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert after["type"] == "revealed"
    await comm.disconnect()


async def test_follow_up_sends_each_model_its_own_conversation(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    await comm.connect()
    first = await start_battle(comm, "Name a colour.")
    await comm.send_json_to({"action": "follow_up", "text": "Why that one?"})
    second = await frames_until(comm, "turn_complete", "void", "error")
    assert second[0] == {"type": "turn", "turn": 1}
    assert second[-1]["type"] == "turn_complete"

    from arena.battles.answers import answer_conversation

    battle_id = first[0]["battle"]

    def conversations():
        out = {}
        for answer in Answer.objects.filter(turn__battle_id=battle_id, turn__index=1):
            out[answer.side] = answer_conversation(answer)
        first_answers = dict(
            Answer.objects.filter(turn__battle_id=battle_id, turn__index=0).values_list(
                "side", "text"
            )
        )
        return out, first_answers

    convs, first_answers = await database_sync_to_async(conversations)()
    for side in ("a", "b"):
        roles = [(m.role, m.content) for m in convs[side].messages]
        assert roles == [
            ("user", "Name a colour."),
            ("assistant", first_answers[side]),
            ("user", "Why that one?"),
        ]
    assert convs["a"].params == convs["b"].params
    await comm.send_json_to({"action": "vote", "choice": "a"})
    assert (await comm.receive_json_from(timeout=RECEIVE_TIMEOUT))["type"] == "revealed"
    # Locked after the vote: no more turns.
    await comm.send_json_to({"action": "follow_up", "text": "And now?"})
    error = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert error["type"] == "error" and error["code"] == "already_voted"
    await comm.disconnect()


async def test_failing_model_voids_the_battle_with_a_blind_message(ws_connect, alice, db):
    await database_sync_to_async(make_model)("Good Model", "good-1")
    broken = await database_sync_to_async(make_model)(
        "Broken Model", "broken-1", misbehaviour="error_midstream"
    )
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    void = frames[-1]
    assert void["type"] == "void"
    assert "void" in void["message"] and "Broken" not in void["message"]
    battle = await database_sync_to_async(Battle.objects.get)(pk=frames[0]["battle"])
    assert battle.status == Battle.Status.VOID
    answer = await database_sync_to_async(Answer.objects.get)(turn__battle=battle, model=broken)
    assert answer.status == Answer.Status.PARTIAL and answer.text  # kept for the record
    await comm.send_json_to({"action": "vote", "choice": "a"})
    error = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert error["code"] == "battle_void"
    assert not await database_sync_to_async(Vote.objects.exists)()
    await comm.disconnect()


async def test_signed_out_websocket_is_refused(ws_connect, db):
    comm = await ws_connect(None)
    connected, code = await comm.connect()
    assert not connected


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ("not json at all", "malformed"),
        ('["start"]', "malformed"),
        ('{"action": "dance"}', "unknown_action"),
        ('{"action": "start", "prompt": "   "}', "empty_prompt"),
        ('{"action": "start"}', "empty_prompt"),
        ('{"action": "vote", "choice": "a"}', "no_battle"),
        ('{"action": "follow_up", "text": "hi"}', "no_battle"),
        ("[" * 5000 + "]" * 5000, "malformed"),  # nested too deep to parse
        ('{"action": "start", "prompt": ' + "[" * 3000 + "]" * 3000 + "}", "malformed"),
        ('{"action": "\\u0000\\ud800"}', "unknown_action"),
        ('{"action": "start", "prompt": "\\u0000\\u0000"}', "empty_prompt"),
        ('{"action": "vote", "choice": {"a": 1}, "battle": [1]}', "unknown_choice"),
        ('{"action": "resume", "battle": {"x": 1}}', "no_battle"),
    ],
)
async def test_bad_messages_get_a_clear_error_and_change_nothing(
    ws_connect, alice, two_models, payload, code
):
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_to(text_data=payload)
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["type"] == "error" and frame["code"] == code and frame["message"]
    assert not await database_sync_to_async(Battle.objects.exists)()
    await comm.disconnect()


async def test_a_binary_frame_gets_a_clear_error(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_to(bytes_data=b'{"action": "start", "prompt": "hi"}')
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "binary_frame"
    await comm.send_json_to({"action": "vote", "choice": "a"})  # the socket is still open
    assert (await comm.receive_json_from(timeout=RECEIVE_TIMEOUT))["code"] == "no_battle"
    await comm.disconnect()


async def test_nul_bytes_and_lone_surrogates_are_cleaned_out_of_a_prompt(
    ws_connect, alice, two_models
):
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_to(text_data='{"action": "start", "prompt": "Why\\u0000 is \\ud800 sky?"}')
    frames = await frames_until(comm, "turn_complete", "void", "error")
    assert frames[-1]["type"] == "turn_complete"
    text = await database_sync_to_async(lambda: Battle.objects.get().prompt.text)()
    assert text == "Why is \ufffd sky?"
    await comm.disconnect()


async def test_oversized_message_and_prompt_are_rejected(ws_connect, alice, two_models, settings):
    settings.ARENA = {**settings.ARENA, "PROMPT_MAX_CHARS": 50, "WS_MESSAGE_MAX_BYTES": 400}
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "x" * 51})
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "prompt_too_long" and "50" in frame["message"]
    await comm.send_json_to({"action": "start", "prompt": "y" * 1000})
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "message_too_large"
    assert not await database_sync_to_async(Battle.objects.exists)()
    await comm.disconnect()


async def test_vote_before_answers_complete_is_refused(ws_connect, alice, db):
    await database_sync_to_async(make_model)("Slow One", "slow-1", misbehaviour="stall")
    await database_sync_to_async(make_model)("Slow Two", "slow-2", misbehaviour="stall")
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "Take your time."})
    started = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert started["type"] == "battle"
    await comm.send_json_to({"action": "vote", "choice": "a"})
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["type"] == "error" and frame["code"] == "answers_incomplete"
    assert not await database_sync_to_async(Vote.objects.exists)()
    await comm.disconnect()


async def test_vote_on_another_raters_battle_is_refused(ws_connect, alice, bob, two_models):
    mine = await ws_connect(alice)
    await mine.connect()
    frames = await start_battle(mine)
    theirs = await ws_connect(bob)
    await theirs.connect()
    await theirs.send_json_to({"action": "vote", "choice": "a", "battle": frames[0]["battle"]})
    frame = await theirs.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "not_your_battle"
    assert not await database_sync_to_async(Vote.objects.exists)()
    await mine.disconnect()
    await theirs.disconnect()


async def test_both_sides_generate_at_the_same_time(ws_connect, alice, db):
    # Each model takes a while before its first token; run one after the other, the two
    # generation windows could not overlap.
    for name in ("Patient One", "Patient Two"):
        await database_sync_to_async(make_model)(name, name.lower().replace(" ", "-"), ttft_ms=300)
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    assert frames[-1]["type"] == "turn_complete"
    a, b = await database_sync_to_async(
        lambda: list(Answer.objects.filter(turn__battle_id=frames[0]["battle"]).order_by("side"))
    )()
    assert a.started_at < b.finished_at and b.started_at < a.finished_at
    await comm.disconnect()


async def test_starting_again_while_a_battle_streams_abandons_it(ws_connect, alice, db):
    for name in ("Slow One", "Slow Two"):  # slow enough that the first is still streaming
        await database_sync_to_async(make_model)(name, name.lower().replace(" ", "-"), ttft_ms=400)
    comm = await ws_connect(alice)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "First question?"})
    (first,) = await frames_until(comm, "battle")
    frames = await start_battle(comm, "Second question?")
    assert frames[-1]["type"] == "turn_complete"
    battles = await database_sync_to_async(
        lambda: {str(b.pk): (b.status, b.void_reason) for b in Battle.objects.all()}
    )()
    assert battles[first["battle"]] == (Battle.Status.VOID, "abandoned: a new battle was started")
    assert battles[frames[0]["battle"]][0] == Battle.Status.READY
    await comm.disconnect()


@pytest.mark.parametrize(
    "origin",
    [
        b"https://evil.example",
        b"http://testserver:1",  # an allowed host on another port
        b"https://testserver",  # another scheme
        b"null",
        None,
    ],
)
async def test_websocket_from_any_other_origin_is_refused(alice, db, origin):
    headers = await database_sync_to_async(session_headers)(alice)
    headers = [h for h in headers if h[0] != b"origin"] + ([(b"origin", origin)] if origin else [])
    assert not await handshake(headers)


async def test_websocket_through_a_proxy_that_rewrites_host_needs_a_trusted_origin(
    alice, db, settings
):
    headers = await database_sync_to_async(session_headers)(alice)
    proxied = [h for h in headers if h[0] not in (b"origin", b"host")] + [
        (b"host", b"testserver"),
        (b"origin", b"https://arena.example"),
    ]
    assert not await handshake(proxied)
    settings.CSRF_TRUSTED_ORIGINS = ["https://arena.example"]
    assert await handshake(proxied)


async def handshake(headers) -> bool:
    from channels.testing import WebsocketCommunicator

    from arena.asgi import application

    comm = WebsocketCommunicator(application, "/ws/battle/", headers=headers)
    connected, _ = await comm.connect()
    if connected:
        await comm.disconnect()
    return connected


@pytest.mark.parametrize(
    "misbehaviour", ["error", "error_midstream", "missing_terminal", "empty", "refused", "blocked"]
)
async def test_each_failing_misbehaviour_voids_the_battle_blindly(
    ws_connect, alice, db, misbehaviour
):
    await database_sync_to_async(make_model)("Healthy", "healthy-1")
    await database_sync_to_async(make_model)("Faulty", "faulty-1", misbehaviour=misbehaviour)
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    assert frames[-1]["type"] == "void"
    assert "start a new battle" in frames[-1]["message"].lower()
    for frame in frames:
        assert "faulty" not in json.dumps(frame).lower()
    battle = await database_sync_to_async(Battle.objects.get)(pk=frames[0]["battle"])
    assert battle.status == Battle.Status.VOID
    await comm.disconnect()


@pytest.mark.parametrize("misbehaviour", ["no_usage", "incomplete", "slow_first_token"])
async def test_recoverable_misbehaviours_still_give_a_votable_battle(
    ws_connect, alice, db, misbehaviour
):
    await database_sync_to_async(make_model)("Healthy", "healthy-1")
    await database_sync_to_async(make_model)(
        "Quirky", "quirky-1", misbehaviour=misbehaviour, ttft_ms=5
    )
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    assert frames[-1]["type"] == "turn_complete"
    quirky = await database_sync_to_async(Answer.objects.get)(
        turn__battle_id=frames[0]["battle"], model__model_id="quirky-1"
    )
    assert quirky.status == "ok"
    if misbehaviour == "no_usage":
        assert quirky.tokens_estimated
    if misbehaviour == "incomplete":
        assert quirky.finish_reason == "length"
    await comm.disconnect()


async def test_a_stalled_model_voids_the_battle_at_the_deadline(ws_connect, alice, db, settings):
    settings.ARENA = {**settings.ARENA, "TURN_DEADLINE_S": 0.3}
    await database_sync_to_async(make_model)("Healthy", "healthy-1")
    await database_sync_to_async(make_model)("Stuck", "stuck-1", misbehaviour="stall")
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm)
    # Whichever deadline fires first (the answer's or the turn's), the battle is void.
    assert frames[-1]["type"] == "void" and "void" in frames[-1]["message"]
    assert not any(f["type"] == "delta" for f in frames)  # parity buffer: nothing one-sided
    battle = await database_sync_to_async(Battle.objects.get)(pk=frames[0]["battle"])
    assert battle.status == Battle.Status.VOID
    await comm.disconnect()


async def test_an_answer_naming_a_model_is_redacted_and_the_vote_will_not_count(
    ws_connect, alice, db
):
    await database_sync_to_async(make_model)("Honest", "honest-1")
    await database_sync_to_async(make_model)(
        "Chatty", "chatty-1", prefix="As ChatGPT from OpenAI (I am chatty-1), I think: "
    )
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "Tell me a fact.")
    assert frames[-1]["type"] == "turn_complete"
    notices = [f for f in frames if f["type"] == "notice"]
    assert [n["code"] for n in notices] == ["identity_leak"]
    shown = (pane_text(frames, "a") + pane_text(frames, "b")).lower()
    for name in ("chatgpt", "openai", "chatty-1", "chatty"):
        assert name not in shown
    assert "[model name]" in shown
    await comm.send_json_to({"action": "vote", "choice": "a"})
    assert (await comm.receive_json_from(timeout=RECEIVE_TIMEOUT))["type"] == "revealed"
    from arena.integrity.models import VoteFlag

    reasons = await database_sync_to_async(
        lambda: set(VoteFlag.objects.values_list("reason", flat=True))
    )()
    assert "identity_leak" in reasons
    await comm.disconnect()


async def test_an_answer_naming_its_maker_or_vendor_is_redacted_too(ws_connect, alice, db):
    await database_sync_to_async(make_model)("Plain", "plain-1")
    await database_sync_to_async(make_model)(
        "Proud",
        "proud-1",
        organisation="Demo Labs",
        vendor="Acmecloud",
        prefix="Made by Demo Labs, served by Acmecloud: ",
    )
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "Tell me a fact.")
    assert frames[-1]["type"] == "turn_complete"
    shown = (pane_text(frames, "a") + pane_text(frames, "b")).lower()
    assert "demo labs" not in shown and "acmecloud" not in shown
    assert "made by [model name], served by [model name]" in shown
    assert [f["code"] for f in frames if f["type"] == "notice"] == ["identity_leak"]
    await comm.disconnect()


async def test_an_identity_question_is_flagged_before_generation(ws_connect, alice, two_models):
    comm = await ws_connect(alice)
    await comm.connect()
    frames = await start_battle(comm, "¿Quién eres y qué modelo eres?")
    assert frames[0]["type"] == "battle"
    assert frames[1]["type"] == "notice" and frames[1]["code"] == "identity_question"
    battle = await database_sync_to_async(Battle.objects.get)(pk=frames[0]["battle"])
    assert [f["reason"] for f in battle.integrity_flags] == ["identity_question"]
    await comm.disconnect()
