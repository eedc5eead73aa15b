"""The app's Redis clients across a Redis restart (``kill -9`` and back, on a Redis of the
test's own): a command in flight as the server dies is sent again on a fresh connection, not
failed, so an answer's stream write or heartbeat outlives a restart."""

from __future__ import annotations

import asyncio
import shutil
import threading

import pytest

from arena.core.redis_loop import loop_redis, sync_redis
from arena.devtools.processes import RedisServer, _wait

pytestmark = pytest.mark.faults


@pytest.fixture
def redis_server():
    if shutil.which("redis-server") is None:
        pytest.skip("starts its own redis-server")
    server = RedisServer()
    server.start()
    yield server
    server.stop()


def blocked_on(server: RedisServer, command: str) -> bool:
    """Whether some client of ``server`` is waiting in ``command`` now."""
    clients = sync_redis(server.url, decode=True).client_list()
    return any(c.get("cmd") == command for c in clients)


def test_a_blocking_read_in_flight_as_redis_restarts_is_sent_again(redis_server):
    client = sync_redis(redis_server.url, decode=True)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(client.blpop(["queue"], timeout=30)))
    reader.start()
    _wait(lambda: blocked_on(redis_server, "blpop"), "the blocking read")
    redis_server.restart()
    _wait(lambda: blocked_on(redis_server, "blpop"), "the read sent again")
    sync_redis(redis_server.url).rpush("queue", "after the restart")
    reader.join(timeout=30)
    assert got == [("queue", "after the restart")]


def test_the_loops_client_sends_a_command_in_flight_again_after_a_restart(redis_server):
    async def main() -> list:
        client = loop_redis(redis_server.url)
        read = asyncio.ensure_future(client.blpop(["queue"], timeout=30))
        await asyncio.to_thread(_wait, lambda: blocked_on(redis_server, "blpop"), "the read")
        await asyncio.to_thread(redis_server.restart)
        await asyncio.to_thread(_wait, lambda: blocked_on(redis_server, "blpop"), "again")
        await client.rpush("queue", "after the restart")
        return await read

    assert asyncio.run(main()) == ("queue", "after the restart")
