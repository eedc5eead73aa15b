"""arena.asgi's application with each battle start's queries counted, for bench/battle_latency.py.

    daphne bench.counted_asgi:application

Every query a websocket "start" action makes, on whichever thread its database work runs (the
count rides in a context variable, which asgiref's sync_to_async carries into its thread), is
added up in Redis (``KEY``: a hash of ``starts`` and ``queries``), so the bench reads queries per
start from all its web processes together. Nothing else differs from arena.asgi.
"""

from __future__ import annotations

import contextvars

from django.conf import settings
from django.db.backends.signals import connection_created

from arena.asgi import application  # sets Django up
from arena.battles.consumers import BattleConsumer
from arena.core.redis_loop import loop_redis

__all__ = ["application"]

KEY = "bench:latency:start-queries"

_counting: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "bench_start_queries", default=None
)


def _count(execute, sql, params, many, context):
    box = _counting.get()
    if box is not None:
        box[0] += 1
    return execute(sql, params, many, context)


def _install(sender, connection, **kwargs) -> None:
    if _count not in connection.execute_wrappers:
        connection.execute_wrappers.append(_count)


connection_created.connect(_install)

_start = BattleConsumer._start


async def _counted_start(self, message: dict) -> None:
    box = [0]
    token = _counting.set(box)
    try:
        await _start(self, message)
    finally:
        _counting.reset(token)
        pipe = loop_redis(settings.REDIS_URL).pipeline(transaction=False)
        pipe.hincrby(KEY, "starts", 1)
        pipe.hincrby(KEY, "queries", box[0])
        await pipe.execute()


BattleConsumer._start = _counted_start
