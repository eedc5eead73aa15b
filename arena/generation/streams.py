"""Answer streams: each answer's text so far, readable by any web process until its battle ends.

The generator appends each (coalesced) piece of an answer's text, then one terminal entry with
the answer's status; readers keep a cursor per answer and read what came after it, as often as
they like, from any process, from the start if they wish. Nothing is pushed to a particular
process, so no web process has to be the one that started the battle, and a slow reader loses
nothing: it reads more at once.

With Redis (``REDIS_URL``) an answer is a Redis Stream: XADD by the generator, non-blocking
XREAD over every watched answer in one round trip by each web process's pacing schedule, an
expiry while it is live and a short one once its battle is over. Without Redis (the embedded
default, generation in the web process) the same contract holds in memory.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

# How long a stream is kept once its battle is over (voted, voided): long enough for a page
# reloaded at the vote to show the answers again, short enough that Redis holds only live ones.
KEEP_AFTER_END_S = 120
# How long a live stream is kept after its last write: past any turn's deadline.
KEEP_LIVE_S = 3600


@dataclass(frozen=True, slots=True)
class Entry:
    """One piece of an answer: ``text`` to append, or the terminal ``done`` status."""

    key: str
    id: str  # the cursor to read after this entry
    text: str = ""
    done: str = ""


def stream_key(*, battle_id: object, answer_id: int) -> str:
    # The battle's UUID keeps keys apart across databases that reuse answer ids (test runs,
    # two deployments on one Redis).
    return f"arena:answer:{battle_id}:{answer_id}"


START = "0"  # the cursor before the first entry


class AnswerStreams(Protocol):
    async def append(self, key: str, text: str) -> None: ...

    async def finish(self, key: str, status: str) -> None: ...

    async def read(self, cursors: dict[str, str]) -> list[Entry]:
        """Every entry after each key's cursor, in order per key; never blocks."""
        ...

    def expire(self, keys: list[str], after_s: float) -> None:
        """Drop these streams ``after_s`` seconds from now (synchronous: services call it)."""
        ...

    def seconds_left(self, key: str) -> float | None:
        """How long the stream is kept yet; None if there is no such stream."""
        ...


class RedisStreams:
    """Writes are batched per event loop: what every answer in the process asks to write while
    a batch is in flight goes in the next batch, one pipeline, so a lone answer waits for
    nobody and a worker streaming hundreds makes a few round trips, not one per piece."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._loops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._sync = None

    def _state(self) -> _LoopState:
        """One client per event loop: redis-py's asyncio connections belong to their loop."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            import redis.asyncio

            state = _LoopState(redis.asyncio.Redis.from_url(self.url, decode_responses=True))
            self._loops[loop] = state
        return state

    async def append(self, key: str, text: str) -> None:
        await self._state().write(key, {"t": text})

    async def finish(self, key: str, status: str) -> None:
        await self._state().write(key, {"done": status})

    async def read(self, cursors: dict[str, str]) -> list[Entry]:
        if not cursors:
            return []
        got = await self._state().client.xread(cursors)
        return [
            Entry(key, entry_id, fields.get("t", ""), fields.get("done", ""))
            for key, entries in got
            for entry_id, fields in entries
        ]

    def expire(self, keys: list[str], after_s: float) -> None:
        if not keys:
            return
        with self._sync_client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.pexpire(key, max(0, int(after_s * 1000)))
            pipe.execute()

    def seconds_left(self, key: str) -> float | None:
        left = self._sync_client().pttl(key)
        return left / 1000 if left >= 0 else None

    def _sync_client(self):
        if self._sync is None:
            import redis

            self._sync = redis.Redis.from_url(self.url)
        return self._sync


class _LoopState:
    def __init__(self, client) -> None:
        self.client = client
        self.queue: list[tuple[str, dict[str, str], asyncio.Future]] = []
        self.writer: asyncio.Task | None = None
        self.expiring: set[str] = set()  # live streams given their expiry already

    def write(self, key: str, fields: dict[str, str]) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self.queue.append((key, fields, done))
        if self.writer is None:
            self.writer = loop.create_task(self._drain())
        return done

    async def _drain(self) -> None:
        try:
            while self.queue:
                batch, self.queue = self.queue, []
                pipe = self.client.pipeline(transaction=False)
                for key, fields, _ in batch:
                    pipe.xadd(key, fields)
                    # The expiry is set with a stream's first entry and again with its last,
                    # not with every entry in between.
                    if key not in self.expiring or "done" in fields:
                        pipe.expire(key, KEEP_LIVE_S)
                        self.expiring.add(key)
                    if "done" in fields:
                        self.expiring.discard(key)
                try:
                    await pipe.execute()
                except Exception as exc:
                    for _, _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    for _, _, done in batch:
                        if not done.done():
                            done.set_result(None)
        finally:
            self.writer = None


class MemoryStreams:
    """The same contract in this process's memory, for any thread or event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, list[Entry]] = {}
        self._expires: dict[str, float] = {}
        self._ids = itertools.count(1)

    def _add(self, key: str, text: str, done: str) -> None:
        with self._lock:
            self._sweep()
            entry = Entry(key, str(next(self._ids)), text, done)
            self._entries.setdefault(key, []).append(entry)
            self._expires[key] = time.monotonic() + KEEP_LIVE_S

    async def append(self, key: str, text: str) -> None:
        self._add(key, text, "")

    async def finish(self, key: str, status: str) -> None:
        self._add(key, "", status)

    async def read(self, cursors: dict[str, str]) -> list[Entry]:
        out: list[Entry] = []
        with self._lock:
            self._sweep()
            for key, cursor in cursors.items():
                entries = self._entries.get(key, [])
                out += entries[bisect.bisect_right(entries, int(cursor), key=_number) :]
        return out

    def expire(self, keys: list[str], after_s: float) -> None:
        with self._lock:
            for key in keys:
                if key in self._entries:
                    self._expires[key] = time.monotonic() + after_s

    def seconds_left(self, key: str) -> float | None:
        with self._lock:
            self._sweep()
            at = self._expires.get(key)
        return None if at is None else at - time.monotonic()

    def _sweep(self) -> None:
        now = time.monotonic()
        for key in [k for k, at in self._expires.items() if at <= now]:
            del self._expires[key]
            self._entries.pop(key, None)


def _number(entry: Entry) -> int:
    return int(entry.id)


_streams: AnswerStreams | None = None
_streams_url: str | None = None


def answer_streams() -> AnswerStreams:
    """This process's answer streams: on Redis when ``REDIS_URL`` is set, else in memory."""
    global _streams, _streams_url
    url = settings.REDIS_URL
    if _streams is None or _streams_url != url:
        _streams = RedisStreams(url) if url else MemoryStreams()
        _streams_url = url
    return _streams
