"""One asyncio Redis client per event loop, for whatever a process's loop says to Redis.

redis-py's asyncio connections belong to the loop that made them, so the client is kept on the
loop itself: a loop that ends (``async_to_sync``'s) takes its client along, and a process with
one long-lived loop (daphne, a worker's generation loop) keeps one pool for everything.
"""

from __future__ import annotations

import asyncio


def loop_redis(url: str):
    """This event loop's client for ``url`` (strings decoded)."""
    loop = asyncio.get_running_loop()
    clients = getattr(loop, "_arena_redis", None)
    if clients is None:
        clients = loop._arena_redis = {}  # type: ignore[attr-defined]
    client = clients.get(url)
    if client is None:
        import redis.asyncio

        client = clients[url] = redis.asyncio.Redis.from_url(url, decode_responses=True)
    return client
