"""The answer streams' contract, on Redis (when REDIS_URL is set, as in CI) and in memory (the
embedded default): ordered, nothing lost or doubled, readable from the start by a second reader
(another process when a Celery worker writes), and gone soon after the battle ends."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

from arena.battles.services import vote_cast
from arena.generation.streams import (
    KEEP_AFTER_END_S,
    START,
    WRITE_WAIT_MAX_S,
    Entry,
    MemoryStreams,
    RedisStreams,
    answer_streams,
    stream_key,
)
from arena.records.models import Answer
from tests.helpers import ready_battle


@pytest.fixture(params=["memory", "redis"])
def streams(request):
    if request.param == "memory":
        return MemoryStreams()
    if not settings.REDIS_URL:
        pytest.skip("the Redis streams need REDIS_URL (CI sets it)")
    return RedisStreams(settings.REDIS_URL)


def new_keys(n: int) -> list[str]:
    battle = uuid.uuid4()
    return [stream_key(battle_id=battle, answer_id=i) for i in range(1, n + 1)]


async def read_all(streams, keys: list[str], *, while_writing: asyncio.Task | None = None):
    """Read every key from the start until each has its terminal entry; the entries per key."""
    cursors = dict.fromkeys(keys, START)
    got: dict[str, list[Entry]] = {key: [] for key in keys}
    while cursors:
        for entry in await streams.read(cursors):
            got[entry.key].append(entry)
            if entry.done:
                del cursors[entry.key]
            else:
                cursors[entry.key] = entry.id
        await asyncio.sleep(0)  # let the writer on
    if while_writing is not None:
        await while_writing
    return got


async def write(streams, key: str, pieces: list[str], status: str = "ok") -> None:
    for piece in pieces:
        await streams.append(key, piece)
        await asyncio.sleep(0)  # let the reader in between pieces, in memory too
    await streams.finish(key, status)


async def test_a_reader_gets_every_piece_in_order_once_while_they_are_written(streams):
    keys = new_keys(3)
    pieces = {key: [f"{key[-1]}{i} " for i in range(200)] for key in keys}

    async def writers():
        await asyncio.gather(*(write(streams, key, pieces[key]) for key in keys))

    got = await read_all(streams, keys, while_writing=asyncio.create_task(writers()))
    for key in keys:
        texts = [e.text for e in got[key] if not e.done]
        assert texts == pieces[key]  # every piece, in order, none twice
        assert [e.done for e in got[key]] == [""] * 200 + ["ok"]
        ids = [e.id for e in got[key]]
        assert len(set(ids)) == len(ids)


async def test_a_worker_writing_many_answers_gathers_their_pieces_and_loses_none():
    if not settings.REDIS_URL:
        pytest.skip("the Redis streams need REDIS_URL (CI sets it)")
    streams = RedisStreams(settings.REDIS_URL)
    keys = new_keys(300)
    pieces = {key: [f"{i}:{n} " for n in range(5)] for i, key in enumerate(keys)}
    await asyncio.gather(*(streams.append(key, pieces[key][0]) for key in keys))
    # 300 answers being written: each write waits a moment for more pieces to go with it.
    assert streams._state()._wait_s() == WRITE_WAIT_MAX_S

    async def rest(key: str) -> None:
        for piece in pieces[key][1:]:
            await streams.append(key, piece)
        await streams.finish(key, "ok")

    async def writers() -> None:
        await asyncio.gather(*(rest(key) for key in keys))

    got = await read_all(streams, keys, while_writing=asyncio.create_task(writers()))
    for key in keys:
        assert [e.text for e in got[key] if not e.done] == pieces[key]
        assert got[key][-1].done == "ok"
    assert streams._state()._wait_s() == 0.0  # all finished: a lone answer waits for nobody


async def test_a_second_reader_reads_the_whole_stream_from_the_start(streams):
    (key,) = new_keys(1)
    await write(streams, key, ["one ", "two ", "three"], status="partial")
    first = await read_all(streams, [key])
    second = await read_all(streams, [key])
    assert [(e.text, e.done) for e in second[key]] == [(e.text, e.done) for e in first[key]]
    assert "".join(e.text for e in second[key]) == "one two three"
    assert second[key][-1].done == "partial"


async def test_reading_after_the_last_entry_gives_nothing_new(streams):
    (key,) = new_keys(1)
    await write(streams, key, ["all of it"])
    entries = (await read_all(streams, [key]))[key]
    assert await streams.read({key: entries[-1].id}) == []


async def test_an_expired_stream_is_gone(streams):
    keys = new_keys(2)
    for key in keys:
        await write(streams, key, ["soon gone"])
    streams.expire(keys[:1], 0)
    assert await streams.read(dict.fromkeys(keys[:1], START)) == []
    assert streams.seconds_left(keys[0]) is None
    assert [e.key for e in await streams.read({keys[1]: START})] == [keys[1]] * 2


def answer_keys(battle) -> list[tuple[Answer, str]]:
    answers = Answer.objects.filter(turn__battle=battle).order_by("side")
    return [(a, stream_key(battle_id=battle.pk, answer_id=a.pk)) for a in answers]


@pytest.mark.usefixtures("generation")
def test_what_the_generator_wrote_is_read_whole_by_another_reader(alice, two_models):
    # With Celery the worker process wrote these streams; this process reads them.
    battle = ready_battle(alice)
    pairs = answer_keys(battle)
    got = async_to_sync(read_all)(answer_streams(), [key for _, key in pairs])
    for answer, key in pairs:
        assert "".join(e.text for e in got[key]) == answer.text
        assert got[key][-1].done == Answer.Status.OK


@pytest.mark.usefixtures("generation")
def test_a_battles_streams_expire_soon_after_the_vote(alice, two_models):
    battle = ready_battle(alice)
    streams = answer_streams()
    keys = [key for _, key in answer_keys(battle)]
    assert all(streams.seconds_left(key) > KEEP_AFTER_END_S for key in keys)
    vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    assert all(0 < streams.seconds_left(key) <= KEEP_AFTER_END_S for key in keys)


async def test_a_write_redis_cannot_take_fails_its_writer():
    import redis

    from arena.devtools.http_server import free_port

    nowhere = RedisStreams(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    with pytest.raises(redis.ConnectionError):
        await nowhere.append(new_keys(1)[0], "lost")


async def test_a_texts_end_comes_after_its_pieces_and_before_its_status(streams):
    (key,) = new_keys(1)
    await streams.append(key, "one ")
    ended = streams.put(key, "two")  # still waiting for its write as the end is said
    await streams.put(key, "", end=True)
    await ended
    await streams.finish(key, "ok")
    got = (await read_all(streams, [key]))[key]
    assert [(e.text, e.end, e.done) for e in got] == [
        ("one ", False, ""),
        ("two", False, ""),
        ("", True, ""),
        ("", False, "ok"),
    ]
