"""What a crowd's starts no longer pay for, and what they must still get right: the gold ticket
looked up only where one may exist, a new prompt written and counted in one statement, the
start's reads built once per process, the rate limit's thread trip only when something is
counted, the start itself on threads of its own, and a socket's end work off the shared thread
yet in order."""

from __future__ import annotations

import asyncio
import random
import threading
from datetime import UTC, datetime, timedelta

import pytest
from channels.db import database_sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import ratelimits
from arena.battles import gold, prompts, services
from arena.battles.consumers import BattleConsumer
from arena.battles.prompts import _prompt_insert, prompt_create, prompt_for_text
from arena.battles.services import battle_begin, battle_start
from arena.battles.start_reads import _rater_query, _state_query, rater_read, start_state
from arena.battles.turn_shown import turn_shown
from arena.core import statements
from arena.core.statements import statement
from arena.core.text import prompt_hash
from arena.records.models import Answer, Battle, GoldItem, Prompt
from tests.helpers import frames_until, make_user


def _no_claim(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(gold, "gold_claim", lambda **kw: calls.append(kw))
    return calls


def test_no_gold_ticket_is_looked_up_while_no_gold_item_is_served(alice, two_models, monkeypatch):
    prompt, _ = prompt_create(text="Explain DNS.")
    calls = _no_claim(monkeypatch)
    battle_begin(rater=alice, text="Explain DNS.", prompt_id=prompt.pk)
    assert calls == []


def test_a_served_gold_item_makes_a_drawn_prompt_look_its_ticket_up(alice, two_models, monkeypatch):
    source = battle_start(rater=make_user("bob@example.com"), text="Explain DNS.")
    GoldItem.objects.create(source=source, correct_side="a")
    calls = _no_claim(monkeypatch)
    battle_begin(rater=alice, text="Explain DNS.", prompt_id=source.prompt_id)
    assert [c["prompt"].pk for c in calls] == [source.prompt_id]
    # A prompt typed for the first time cannot be a gold item's: no ticket names it.
    battle_begin(rater=alice, text="Nobody typed this before.")
    assert len(calls) == 1


def test_a_new_prompt_is_written_counted_once_and_in_its_language(alice, two_models):
    battle = battle_start(rater=alice, text="Quelle heure est-il à Paris ?")
    prompt = Prompt.objects.get(pk=battle.prompt_id)
    assert (prompt.usage_count, prompt.source, prompt.active) == (1, Prompt.Source.RATER, False)
    assert prompt.language == "fr"
    battle_start(rater=alice, text="Quelle heure est-il à Paris ?")
    prompt.refresh_from_db()
    assert prompt.usage_count == 2


def test_a_prompt_written_meanwhile_is_used_not_written_again(db, monkeypatch):
    """Another start wrote the same text between this one's read and its insert: the insert
    does nothing and the other's row is the prompt, not yet counted for this start."""
    text = "Written by another start."
    theirs = _prompt_insert(text=text, text_hash=prompt_hash(text))
    assert theirs is not None and theirs.usage_count == 1
    assert _prompt_insert(text=text, text_hash=prompt_hash(text)) is None
    # The read misses, as it would have before the other's commit.
    monkeypatch.setattr(prompts, "_prompt_read", lambda kind, **value: None)
    prompt, created = prompt_for_text(text=text)
    assert (prompt.pk, created) == (theirs.pk, False)
    assert Prompt.objects.filter(text_hash=prompt_hash(text)).count() == 1


def test_the_starts_reads_built_once_read_what_the_querysets_read(alice, two_models):
    battle_start(rater=alice, text="Explain DNS.")
    GoldItem.objects.create(source=Battle.objects.get(), correct_side="b")
    built = rater_read(rater=alice)
    orm = _rater_query(pk=alice.pk, lock=False).get()
    fields = [f.attname for f in type(alice)._meta.concrete_fields]
    assert [getattr(built, f) for f in fields] == [getattr(orm, f) for f in fields]
    assert built.email_verified is orm.email_verified
    state, row = start_state(rater=alice), _state_query(pk=alice.pk).get()
    assert (
        (state.unwatched, state.gold_live) == (row["unwatched"], row["gold_live"]) == (True, True)
    )
    assert (state.stamps.models, state.stamps.snapshot) == (
        row["models_stamp"],
        row["snapshot_key"],
    )
    with CaptureQueriesContext(connection) as ctx:
        rater_read(rater=alice)
        start_state(rater=alice)
    assert len(ctx.captured_queries) == 2


def test_a_statement_whose_values_cannot_be_told_apart_is_refused(db):
    from accounts.models import User

    with pytest.raises(RuntimeError):
        # Both marks name the same parameter twice over: which is which cannot be told.
        statement("twice", lambda a, b: User.objects.filter(pk=a), {"a": (-1, -2), "b": (-1, -2)})
    built = statement("by pk", lambda pk: User.objects.filter(pk=pk), {"pk": (-1, -2)})
    with pytest.raises(TypeError):
        built.bind(pk=1, other=2)


async def test_an_action_with_no_limit_takes_no_trip_to_a_thread(settings, monkeypatch):
    settings.RATELIMITS = {**settings.RATELIMITS, "battle_start": {}}

    def counted(*args, **kwargs):
        raise AssertionError("nothing was to be counted")

    monkeypatch.setattr(ratelimits, "check", counted)
    assert await ratelimits.check_websocket("battle_start", {"user": None}) is None


async def test_a_sockets_end_work_runs_in_order_and_past_a_failure():
    consumer = BattleConsumer()
    consumer.tasks, consumer.end_work = set(), None
    gate, seen = asyncio.Event(), []

    async def first() -> None:
        await gate.wait()
        seen.append("leak noted")
        raise RuntimeError("the database went away")

    async def second() -> None:
        seen.append("turn shown")

    consumer._in_order(first)
    consumer._in_order(second)
    for _ in range(10):  # every task that can run, runs
        await asyncio.sleep(0)
    assert seen == []
    gate.set()
    await consumer.end_work
    assert seen == ["leak noted", "turn shown"]


def _written(battle: Battle) -> tuple:
    """A start's rows as the database holds them, less what differs from start to start."""
    battle = Battle.objects.select_related("prompt").get(pk=battle.pk)
    turn = battle.turns.get()
    answers = sorted((a.side, a.model_id, a.status, a.text) for a in turn.answers.all())
    fields = ("rater_id", "model_a_id", "model_b_id", "status", "params", "integrity_flags")
    return (
        tuple(getattr(battle, f) for f in fields),
        battle.created_at is not None,
        (turn.index, turn.text, turn.created_at is not None, turn.shown_at),
        answers,
    )


@pytest.mark.parametrize("vendor", ["postgresql", "other"])
def test_the_one_statement_writes_what_the_orm_writes(alice, two_models, monkeypatch, vendor):
    """PostgreSQL's one statement, and the ORM's four where the database is another: the same
    rows, the same objects handed back, the prompt's use counted once."""
    if vendor == "other":
        monkeypatch.setattr(statements, "ONE_STATEMENT", set())
    started = battle_begin(rater=alice, text="Who made you?", rng=random.Random(1))
    again = battle_begin(rater=alice, text="Who made you?", rng=random.Random(1))
    for one in (started, again):
        battle = one.battle
        assert _written(battle)[1:] == (True, (0, "Who made you?", True, None), _written(battle)[3])
        answers = {a.side: a for a in Answer.objects.filter(turn__battle=battle)}
        assert one.turn.sides == {a.pk: side for side, a in answers.items()}
        assert one.turn.turn_id == battle.turns.get().pk
        assert {side: a.model_id for side, a in answers.items()} == {
            "a": battle.model_a_id,
            "b": battle.model_b_id,
        }
        assert all(a.status == Answer.Status.PENDING and a.text == "" for a in answers.values())
        assert battle.integrity_flags == [
            {"reason": "identity_question", "detail": "asked before generation"}
        ]
    assert Prompt.objects.get(pk=started.battle.prompt_id).usage_count == 2
    assert Battle.objects.get(pk=started.battle.pk).status == Battle.Status.VOID  # abandoned
    assert Battle.objects.get(pk=again.battle.pk).status == Battle.Status.GENERATING


def test_a_turn_shown_takes_two_statements_and_keeps_its_first_time(alice, two_models):
    """The consumer's end of every battle: built once per process, as the ORM would write it."""
    battle = battle_start(rater=alice, text="Explain DNS.")
    turn = battle.turns.get()
    turn.answers.update(status=Answer.Status.OK)
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.WAITING)
    first = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    turn_shown(turn_id=turn.pk, at=first)
    with CaptureQueriesContext(connection) as ctx:
        turn_shown(turn_id=turn.pk, at=first + timedelta(hours=1))
    assert len([q for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]]) == 2
    turn.refresh_from_db()
    battle.refresh_from_db()
    assert (turn.shown_at, battle.status) == (first, Battle.Status.READY)


@pytest.mark.usefixtures("generation")
async def test_a_crowds_starts_run_on_the_start_threads_not_the_shared_pool(
    ws_connect, alice, bob, two_models, monkeypatch
):
    """Starts keep to their own few threads (WEB_START_THREADS), so a crowd's starts never take
    the interpreter from the loop pacing the battles already streaming with more threads."""
    carol = await database_sync_to_async(make_user)("carol@example.com")
    threads: list[str] = []
    begin = services.battle_begin

    def noted(**kwargs):  # the real start, its thread noted
        threads.append(threading.current_thread().name)
        return begin(**kwargs)

    monkeypatch.setattr(services, "battle_begin", noted)
    comms = [await ws_connect(rater) for rater in (alice, bob, carol)]
    try:
        for comm in comms:
            assert (await comm.connect())[0]
        await asyncio.gather(
            *(comm.send_json_to({"action": "start", "prompt": "Explain DNS."}) for comm in comms)
        )
        for comm in comms:
            frames = await frames_until(comm, "battle", "error")
            assert frames[-1]["type"] == "battle"
    finally:
        for comm in comms:
            await comm.disconnect()
    assert len(threads) == 3
    assert all(name.startswith("battle-start") for name in threads), threads
