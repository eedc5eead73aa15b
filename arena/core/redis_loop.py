"""The process's Redis clients: one asyncio client per event loop, and plain (synchronous) ones,
all with one retry policy.

redis-py's asyncio connections belong to the loop that made them, so the client is kept on the
loop itself: a loop that ends (``async_to_sync``'s) takes its client along, and a process with
one long-lived loop (daphne, a worker's generation loop) keeps one pool for everything.

A client made by ``from_url`` retries nothing unless told to: after Redis restarts, each pooled
connection's next command can fail once on its dead socket (an answer's stream write, and so its
battle, lost for it). Here a command that meets a dropped connection or a timeout is sent again on
a fresh one, up to six times with a jittered backoff (at most 3.5 s in all, about 2 s on
average): enough for a restart; while Redis stays down longer, a command fails after that wait.
A command whose reply was lost, not its request, runs twice: harmless where Redis restarted
empty, and after a network blip it costs at most a repeated piece of a live stream, or a
replica's lease held until it lapses."""

from __future__ import annotations

import asyncio

RETRIES = 6
BACKOFF_BASE_S, BACKOFF_CAP_S = 0.05, 1.0


def _retry_options(retry_class) -> dict:
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.exceptions import ConnectionError, TimeoutError

    return {
        "retry": retry_class(
            ExponentialWithJitterBackoff(base=BACKOFF_BASE_S, cap=BACKOFF_CAP_S), RETRIES
        ),
        "retry_on_error": [ConnectionError, TimeoutError],
    }


def sync_redis(url: str, *, decode: bool = False):
    """A plain client for ``url``, for code with no event loop."""
    import redis
    from redis.retry import Retry

    return redis.Redis.from_url(url, decode_responses=decode, **_retry_options(Retry))


def loop_redis(url: str):
    """This event loop's client for ``url`` (strings decoded)."""
    loop = asyncio.get_running_loop()
    clients = getattr(loop, "_arena_redis", None)
    if clients is None:
        clients = loop._arena_redis = {}  # type: ignore[attr-defined]
    client = clients.get(url)
    if client is None:
        import redis.asyncio
        from redis.asyncio.retry import Retry

        client = clients[url] = redis.asyncio.Redis.from_url(
            url, decode_responses=True, **_retry_options(Retry)
        )
    return client
