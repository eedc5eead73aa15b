"""Answer streams: each answer's text so far, readable by any web process until its battle ends.

The generator appends each (coalesced) piece of an answer's text, its end (at once: the status
waits for a database write), then one terminal entry with the answer's status; readers keep a
cursor per answer and read what came after it, as often as they like, from any process, from the
start if they wish. Nothing is pushed to a particular process, so no web process has to be the
one that started the battle, and a slow reader loses nothing: it reads more at once.

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
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

from arena.core.redis_loop import loop_redis, sync_redis

# How long a stream is kept once its battle is over (voted, voided): long enough for a page
# reloaded at the vote to show the answers again, short enough that Redis holds only live ones.
KEEP_AFTER_END_S = 120
# How long a stream is kept from its first entry, if its battle never ends: past any deadline.
KEEP_LIVE_S = 3600
# A worker generating an answer says so every HEARTBEAT_EVERY_S; an answer whose heartbeat is
# older than HEARTBEAT_TTL_S has lost its worker (killed, frozen, cut off from Redis).
HEARTBEAT_EVERY_S = 2.0
HEARTBEAT_TTL_S = 8.0
# A worker streaming many answers gathers their pieces for a moment before each write: about
# WRITE_WAIT_PER_STREAM_S per answer it is writing, at most WRITE_WAIT_MAX_S, none for a few.
# Each write is a round trip and a system call or two whatever it carries, so a crowd's pieces
# cost a few hundred writes a second instead of one per token, for a few milliseconds' delay.
WRITE_WAIT_PER_STREAM_S = 0.000025
WRITE_WAIT_MAX_S = 0.005
WRITE_WAIT_MIN_S = 0.0005  # shorter than this, not worth a timer


@dataclass(frozen=True, slots=True)
class Entry:
    """One piece of an answer: ``text`` to append, or the terminal ``done`` status."""

    key: str
    id: str  # the cursor to read after this entry
    text: str = ""
    done: str = ""
    end: bool = False  # the text is whole: nothing more joins it, and its status follows


def stream_key(*, battle_id: object, answer_id: int) -> str:
    # The battle's UUID keeps keys apart across databases that reuse answer ids (test runs,
    # two deployments on one Redis).
    return f"arena:answer:{battle_id}:{answer_id}"


def heartbeat_key(key: str) -> str:
    return f"{key}:alive"


def stop_key(key: str) -> str:
    return f"{key}:stop"


START = "0"  # the cursor before the first entry


def entry_order(entry_id: str) -> tuple[int, ...]:
    """Entry ids (and cursors) in stream order: Redis's "ms-seq" and memory's counters alike."""
    return tuple(int(part) for part in entry_id.split("-"))


class AnswerStreams(Protocol):
    async def append(self, key: str, text: str) -> None: ...

    def put(self, key: str, text: str, *, end: bool = False) -> asyncio.Future:
        """``append`` without waiting, joined to any of this stream's text still waiting for
        the next write; done once written. ``end``: the text's end instead, after all put."""
        ...

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

    def readable(self, keys: list[str]) -> set[str]:
        """Those of these streams that exist still (not expired, not lost with a restart)."""
        ...

    async def beat(self, keys: list[str], ttl_s: float) -> set[str]:
        """These answers' worker is alive, for ``ttl_s`` more seconds; returns those of them
        asked to stop (``stop``), in the same round trip."""
        ...

    def stop(self, keys: list[str]) -> None:
        """Ask whichever worker generates these answers to stop: their battle is over."""
        ...

    async def rest(self, keys: list[str]) -> None:
        """These answers' worker is done with them: they have no heartbeat any more."""
        ...

    def alive(self, keys: list[str]) -> set[str]:
        """Those of these answers whose worker's heartbeat is current."""
        ...

    def text(self, key: str) -> str:
        """The text written to the stream so far (synchronous, for services)."""
        ...

    def end(self, key: str, status: str) -> None:
        """``finish``, from synchronous code: an answer failed by a service, not its worker."""
        ...


class RedisStreams:
    """Writes are batched per event loop: what every answer in the process asks to write while
    a batch is in flight goes in the next batch, one command, so a lone answer waits for
    nobody and a worker streaming hundreds makes a few round trips, not one per piece."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._sync = None

    def _state(self) -> _LoopState:
        """The batched writer of this event loop, on the loop's Redis client."""
        loop = asyncio.get_running_loop()
        state = getattr(loop, "_arena_streams", None)
        if state is None or state.url != self.url:
            state = _LoopState(self.url, loop_redis(self.url))
            loop._arena_streams = state  # type: ignore[attr-defined]
        return state

    async def append(self, key: str, text: str) -> None:
        await self.put(key, text)

    def put(self, key: str, text: str, *, end: bool = False) -> asyncio.Future:
        return self._state().write(key, {"end": "1"} if end else {"t": text})

    async def finish(self, key: str, status: str) -> None:
        await self._state().write(key, {"done": status})

    async def read(self, cursors: dict[str, str]) -> list[Entry]:
        if not cursors:
            return []
        got = await self._state().client.xread(cursors)
        return [
            Entry(key, entry_id, fields.get("t", ""), fields.get("done", ""), "end" in fields)
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

    def readable(self, keys: list[str]) -> set[str]:
        if not keys:
            return set()
        with self._sync_client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(key)
            found = pipe.execute()
        return {key for key, n in zip(keys, found, strict=True) if n}

    async def beat(self, keys: list[str], ttl_s: float) -> set[str]:
        marks = [mark for key in keys for mark in (heartbeat_key(key), stop_key(key))]
        stopped = await self._state().beat_script(keys=marks, args=[int(ttl_s * 1000)])
        return {keys[i - 1] for i in stopped}

    def stop(self, keys: list[str]) -> None:
        if not keys:
            return
        with self._sync_client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.set(stop_key(key), "1", ex=KEEP_AFTER_END_S)
            pipe.execute()

    async def rest(self, keys: list[str]) -> None:
        if keys:
            await self._state().client.delete(*map(heartbeat_key, keys))

    def alive(self, keys: list[str]) -> set[str]:
        if not keys:
            return set()
        with self._sync_client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(heartbeat_key(key))
            found = pipe.execute()
        return {key for key, n in zip(keys, found, strict=True) if n}

    def text(self, key: str) -> str:
        entries = self._sync_client().xrange(key)
        return "".join(fields.get(b"t", b"").decode() for _, fields in entries)

    def end(self, key: str, status: str) -> None:
        with self._sync_client().pipeline(transaction=False) as pipe:
            pipe.xadd(key, {"done": status})
            pipe.expire(key, KEEP_LIVE_S, nx=True)
            pipe.execute()

    def _sync_client(self):
        if self._sync is None:
            self._sync = sync_redis(self.url)
        return self._sync


# A batch is one command, whatever it carries (a pipeline's reply per entry costs the writer
# more than the entry itself): each entry appended to its stream, and each stream given its
# expiry if it has none (NX), so a stream made anew by a Redis that restarted empty gets one
# too, and once its battle ends, battle_streams_end's shorter expiry is not undone by a late
# entry. ARGV: the expiry, then a field and its value per key.
_APPEND_LUA = """
for i, key in ipairs(KEYS) do
    redis.call('XADD', key, '*', ARGV[2 * i], ARGV[2 * i + 1])
    redis.call('EXPIRE', key, ARGV[1], 'NX')
end
"""

# Heartbeats, the same way: KEYS are each answer's heartbeat mark and its stop mark, in pairs;
# ARGV[1], how long the heartbeat lasts (ms). The answers asked to stop, by their place (1-based).
_BEAT_LUA = """
local stopped = {}
for i = 1, #KEYS, 2 do
    redis.call('SET', KEYS[i], '1', 'PX', ARGV[1])
    if redis.call('EXISTS', KEYS[i + 1]) == 1 then stopped[#stopped + 1] = (i + 1) / 2 end
end
return stopped
"""


class _LoopState:
    def __init__(self, url: str, client) -> None:
        self.url = url
        self.client = client
        self.append_script = client.register_script(_APPEND_LUA)
        self.beat_script = client.register_script(_BEAT_LUA)
        self.queue: list[tuple[str, dict[str, str], asyncio.Future]] = []
        # Each stream's text entry in the queue that nothing has followed yet: more text for
        # that stream joins it (one entry, one future) instead of queueing an entry of its own.
        self.open: dict[str, tuple[dict[str, str], asyncio.Future]] = {}
        self.writer: asyncio.Task | None = None
        # The streams this loop is writing (appended to, not yet finished), with when each was
        # last written: a writer that died without finishing is forgotten after STALE_S.
        self.writing: dict[str, float] = {}
        self._pruned = 0.0

    STALE_S = 10.0

    def write(self, key: str, fields: dict[str, str]) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        if "t" not in fields:  # the text's end, or the status: nothing more joins its text
            self.open.pop(key, None)
            self.writing.pop(key, None)
        else:
            self.writing[key] = loop.time()
            if (waiting := self.open.get(key)) is not None:
                waiting[0]["t"] += fields["t"]
                return waiting[1]
        done = loop.create_future()
        self.queue.append((key, fields, done))
        if "t" in fields:
            self.open[key] = (fields, done)
        if self.writer is None:
            self.writer = loop.create_task(self._drain())
        return done

    def _wait_s(self) -> float:
        """How long to gather pieces before the next write, for as many streams as are being
        written."""
        now = asyncio.get_running_loop().time()
        if now - self._pruned > 1.0:
            self._pruned = now
            self.writing = {k: t for k, t in self.writing.items() if now - t < self.STALE_S}
        wait = min(WRITE_WAIT_MAX_S, WRITE_WAIT_PER_STREAM_S * len(self.writing))
        return wait if wait >= WRITE_WAIT_MIN_S else 0.0

    async def _drain(self) -> None:
        try:
            while self.queue:
                if wait := self._wait_s():
                    await asyncio.sleep(wait)
                batch, self.queue, self.open = self.queue, [], {}
                args: list[object] = [KEEP_LIVE_S]
                for _, fields, _ in batch:
                    for pair in fields.items():
                        args += pair
                try:
                    await self.append_script(keys=[key for key, _, _ in batch], args=args)
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
        self._swept = 0.0
        self._beats: dict[str, float] = {}
        self._stops: dict[str, float] = {}

    def _add(self, key: str, text: str, done: str, end: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            self._sweep(now)
            entries = self._live(key, now)
            if entries is None:
                entries = self._entries[key] = []
                self._expires[key] = now + KEEP_LIVE_S  # as on Redis: with the first entry
            entries.append(Entry(key, str(next(self._ids)), text, done, end))

    async def append(self, key: str, text: str) -> None:
        self._add(key, text, "")

    def put(self, key: str, text: str, *, end: bool = False) -> asyncio.Future:
        self._add(key, text, "", end)
        written = asyncio.get_running_loop().create_future()
        written.set_result(None)
        return written

    async def finish(self, key: str, status: str) -> None:
        self._add(key, "", status)

    async def read(self, cursors: dict[str, str]) -> list[Entry]:
        out: list[Entry] = []
        with self._lock:
            now = time.monotonic()
            for key, cursor in cursors.items():
                entries = self._live(key, now) or []
                out += entries[bisect.bisect_right(entries, int(cursor), key=_number) :]
        return out

    def expire(self, keys: list[str], after_s: float) -> None:
        with self._lock:
            for key in keys:
                if key in self._entries:
                    self._expires[key] = time.monotonic() + after_s

    def seconds_left(self, key: str) -> float | None:
        with self._lock:
            now = time.monotonic()
            if self._live(key, now) is None:
                return None
            return self._expires[key] - now

    def readable(self, keys: list[str]) -> set[str]:
        with self._lock:
            now = time.monotonic()
            return {key for key in keys if self._live(key, now) is not None}

    async def beat(self, keys: list[str], ttl_s: float) -> set[str]:
        with self._lock:
            until = time.monotonic() + ttl_s
            self._beats.update(dict.fromkeys(keys, until))
            return {key for key in keys if key in self._stops}

    def stop(self, keys: list[str]) -> None:
        with self._lock:
            until = time.monotonic() + KEEP_AFTER_END_S
            self._stops.update(dict.fromkeys(keys, until))

    async def rest(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                self._beats.pop(key, None)

    def alive(self, keys: list[str]) -> set[str]:
        with self._lock:
            now = time.monotonic()
            return {key for key in keys if self._beats.get(key, now) > now}

    def text(self, key: str) -> str:
        with self._lock:
            return "".join(e.text for e in self._live(key, time.monotonic()) or [])

    def end(self, key: str, status: str) -> None:
        self._add(key, "", status)

    def _live(self, key: str, now: float) -> list[Entry] | None:
        """The key's entries, or None if it has none or has expired (and is dropped now)."""
        if self._expires.get(key, now + 1) <= now:
            del self._expires[key]
            self._entries.pop(key, None)
        return self._entries.get(key)

    def _sweep(self, now: float) -> None:
        """Expired streams no one reads any more, dropped: at most once a second."""
        if now - self._swept < 1.0:
            return
        self._swept = now
        for key in [k for k, at in self._expires.items() if at <= now]:
            del self._expires[key]
            self._entries.pop(key, None)
        for marks in (self._beats, self._stops):
            for key in [k for k, at in marks.items() if at <= now]:
                del marks[key]


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
