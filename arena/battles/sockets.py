"""How many battle sockets each rater has open, across every web process: a cap, so that one
rater (or one script with a stolen session) cannot hold a thousand sockets.

With Redis, each rater's open sockets are a sorted set of socket ids scored by when they lapse;
each web process renews its own sockets' entries every ``RENEW_S``, so the sockets of a process
that was killed lapse within ``LAPSE_S`` instead of counting forever. Without Redis (one web
process, the embedded default) the count is this process's own.
"""

from __future__ import annotations

import asyncio
import logging
import time

from django.conf import settings

from arena.core.redis_loop import loop_redis

log = logging.getLogger(__name__)

RENEW_S = 60.0
LAPSE_S = 3 * RENEW_S


def _key(user_id: int) -> str:
    return f"arena:sockets:{user_id}"


class _Registry:
    """This process's open sockets, and the task that renews them.

    Sockets that open together (a crowd arriving at once) are counted in together: one
    transaction, one round trip, one Redis connection for all the adds asked for while the
    last such transaction was in flight, rather than one each (each would take a connection
    of its own, made for it when a crowd comes); and counted out together as they close."""

    def __init__(self) -> None:
        self.open: dict[str, int] = {}  # socket id -> user id
        self.renewer: asyncio.Task | None = None
        self._adds: list[tuple[int, str, int, asyncio.Future]] = []
        self._adder: asyncio.Task | None = None
        self._removes: list[tuple[int, str, asyncio.Future]] = []
        self._remover: asyncio.Task | None = None

    async def add(self, *, user_id: int, socket_id: str, cap: int) -> bool:
        if not settings.REDIS_URL:
            if sum(1 for uid in self.open.values() if uid == user_id) >= cap:
                return False
            self.open[socket_id] = user_id
            return True
        loop = asyncio.get_running_loop()
        allowed = loop.create_future()
        self._adds.append((user_id, socket_id, cap, allowed))
        if self._adder is None or self._adder.done():
            self._adder = loop.create_task(self._add_all())
        if not await allowed:
            return False
        self.open[socket_id] = user_id
        if self.renewer is None or self.renewer.done():
            self.renewer = loop.create_task(self._renew())
        return True

    async def _add_all(self) -> None:
        """The adds asked for so far, in one transaction, in the order asked: each socket's
        count is its rater's as of its own add, as when each was a transaction of its own."""
        client = loop_redis(settings.REDIS_URL)
        while self._adds:
            batch, self._adds = self._adds, []
            try:
                now = time.time()
                pipe = client.pipeline(transaction=True)
                for user_id, socket_id, _, _ in batch:
                    pipe.zremrangebyscore(_key(user_id), "-inf", now)
                    pipe.zadd(_key(user_id), {socket_id: now + LAPSE_S})
                    pipe.zcard(_key(user_id))
                    pipe.expire(_key(user_id), int(LAPSE_S))
                counts = (await pipe.execute())[2::4]
                over = [a for a, count in zip(batch, counts, strict=True) if count > a[2]]
                if over:
                    pipe = client.pipeline(transaction=False)
                    for user_id, socket_id, _, _ in over:
                        pipe.zrem(_key(user_id), socket_id)
                    await pipe.execute()
            except Exception as exc:  # each add raises it, as its own transaction would have
                for *_, allowed in batch:
                    if not allowed.done():
                        allowed.set_exception(exc)
                continue
            for (_, _, cap, allowed), count in zip(batch, counts, strict=True):
                if not allowed.done():
                    allowed.set_result(count <= cap)

    async def remove(self, socket_id: str) -> None:
        user_id = self.open.pop(socket_id, None)
        if user_id is None or not settings.REDIS_URL:
            return
        loop = asyncio.get_running_loop()
        removed = loop.create_future()
        self._removes.append((user_id, socket_id, removed))
        if self._remover is None or self._remover.done():
            self._remover = loop.create_task(self._remove_all())
        await removed

    async def _remove_all(self) -> None:
        """The removes asked for so far, in one round trip (a crowd's battles end together)."""
        client = loop_redis(settings.REDIS_URL)
        while self._removes:
            batch, self._removes = self._removes, []
            try:
                pipe = client.pipeline(transaction=False)
                for user_id, socket_id, _ in batch:
                    pipe.zrem(_key(user_id), socket_id)
                await pipe.execute()
            except Exception as exc:
                for *_, removed in batch:
                    if not removed.done():
                        removed.set_exception(exc)
                continue
            for *_, removed in batch:
                if not removed.done():
                    removed.set_result(None)

    async def _renew(self) -> None:
        while self.open:
            await asyncio.sleep(RENEW_S)
            try:
                pipe = loop_redis(settings.REDIS_URL).pipeline(transaction=False)
                lapse = time.time() + LAPSE_S
                for socket_id, user_id in list(self.open.items()):
                    pipe.zadd(_key(user_id), {socket_id: lapse}, xx=True)
                    pipe.expire(_key(user_id), int(LAPSE_S))
                await pipe.execute()
            except Exception as exc:  # Redis away: the next renewal may land
                log.warning("renewing open sockets failed: %s", exc)


def registry() -> _Registry:
    """This event loop's registry (daphne runs one loop per process)."""
    loop = asyncio.get_running_loop()
    found = getattr(loop, "_arena_sockets", None)
    if found is None:
        found = loop._arena_sockets = _Registry()  # type: ignore[attr-defined]
    return found
