"""The app's Redis clients across a Redis restart (``kill -9`` and back, on a Redis of the
test's own): a command in flight as the server dies is sent again on a fresh connection, not
failed, so an answer's stream write or heartbeat outlives a restart; a stream made anew on the
restarted server still expires."""

from __future__ import annotations

import asyncio
import shutil
import threading

import pytest

from arena.backends.pool_state import RedisState
from arena.core.redis_loop import RETRIES, loop_redis, sync_redis
from arena.devtools.processes import RedisServer, _wait
from arena.generation.streams import KEEP_LIVE_S, RedisStreams, stream_key

pytestmark = pytest.mark.faults


@pytest.fixture
def redis_server():
    if shutil.which("redis-server") is None:
        pytest.skip("starts its own redis-server")
    server = RedisServer()
    server.start()
    yield server
    server.stop()


def blocked_on(server: RedisServer, command: str):
    """A check: whether some client of ``server`` is waiting in ``command`` now."""
    admin = sync_redis(server.url, decode=True)
    return lambda: any(c.get("cmd") == command for c in admin.client_list())


def test_a_blocking_read_in_flight_as_redis_restarts_is_sent_again(redis_server):
    client = sync_redis(redis_server.url, decode=True)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(client.blpop(["queue"], timeout=30)))
    reader.start()
    waiting = blocked_on(redis_server, "blpop")
    _wait(waiting, "the blocking read")
    redis_server.restart()
    _wait(waiting, "the read sent again")
    sync_redis(redis_server.url).rpush("queue", "after the restart")
    reader.join(timeout=30)
    assert got == [("queue", "after the restart")]


def test_the_loops_client_sends_a_command_in_flight_again_after_a_restart(redis_server):
    waiting = blocked_on(redis_server, "blpop")

    async def main() -> list:
        client = loop_redis(redis_server.url)
        read = asyncio.ensure_future(client.blpop(["queue"], timeout=30))
        await asyncio.to_thread(_wait, waiting, "the read")
        await asyncio.to_thread(redis_server.restart)
        await asyncio.to_thread(_wait, waiting, "the read sent again")
        await client.rpush("queue", "after the restart")
        return await read

    assert asyncio.run(main()) == ("queue", "after the restart")


def test_the_answer_streams_and_pool_leases_use_the_retrying_clients(redis_server):
    streams, pools = RedisStreams(redis_server.url), RedisState(redis_server.url)

    async def loop_client():  # the writer's client belongs to a running loop
        return streams._state().client

    clients = [streams._sync_client(), pools._client(), asyncio.run(loop_client())]
    for client in clients:
        assert client.connection_pool.connection_kwargs["retry"].get_retries() == RETRIES


def test_a_stream_written_across_a_restart_keeps_its_text_and_an_expiry(redis_server):
    streams = RedisStreams(redis_server.url)
    key = stream_key(battle_id="b1", answer_id=1)

    async def main() -> None:
        await streams.append(key, "before ")
        await asyncio.to_thread(redis_server.restart)  # empty again
        await streams.append(key, "after")

    asyncio.run(main())
    assert streams.text(key) == "after"  # what was written before is gone with the server
    left = streams.seconds_left(key)
    assert left is not None and left > KEEP_LIVE_S - 60
