"""One answer end to end, for any caller: the caller's claim says what to generate (or that
nothing is to be), the runner streams it, the caller's finish writes it once.

The database is touched once before the stream (claim) and once after it (finish), never per
token; the text goes to the answer's stream (``streams``), coalesced, then its terminal entry.
Heartbeats say the answer is alive while it streams, and bring its deadline forward when its
stream is marked stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from channels.db import database_sync_to_async
from django.db import InterfaceError, OperationalError

from arena.backends.base import Backend, ChatRequest
from arena.core.answers import AnswerStatus
from arena.generation.runner import StreamResult, stream_answer
from arena.generation.streams import (
    HEARTBEAT_EVERY_S,
    HEARTBEAT_TTL_S,
    AnswerStreams,
    answer_streams,
)


@dataclass
class GenerationJob:
    """What a caller's claim says to generate."""

    key: str  # the answer's stream (streams.stream_key)
    backend: Backend | None
    request: ChatRequest | None
    timeout_s: float = 0.0
    max_chars: int = 0
    abandoned: str = ""  # the answer's final status when the job must not run
    # What the claim hands its own finish, untouched here (what it read, so the finish need
    # not read it again).
    memo: Any = None


# The caller's two writes, both synchronous services taking keywords: claim(answer_id=) marks
# the answer running and returns its job (None: finished already, or another worker has it);
# finish(answer_id=, result=, memo=) writes the result once and returns the answer's final
# status.
Claim = Callable[..., GenerationJob | None]
Finish = Callable[..., str]

log = logging.getLogger(__name__)

# A database that is briefly gone (restarted, failed over, a dropped connection) is waited for,
# so that nothing queued is lost to a blip: about half a minute in all, well inside a turn's
# deadline; a longer outage fails the task and the sweep ends its battle.
DB_RETRY_DELAYS_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0)


@functools.cache
def _retrying(service: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
    # On the loop's thread pool, not asgiref's one thread-sensitive thread: claim and finish
    # touch only their own answer, and many answers stream in one loop at once. Each try runs
    # with a fresh connection: database_sync_to_async closes one that has failed.
    call = database_sync_to_async(service, thread_sensitive=False)

    async def retrying(**kwargs: Any) -> Any:
        for delay in DB_RETRY_DELAYS_S:
            try:
                return await call(**kwargs)
            except (OperationalError, InterfaceError) as exc:
                log.warning("%s: database unavailable (%s); retrying", service.__name__, exc)
                await asyncio.sleep(delay)
        return await call(**kwargs)

    return retrying


class _Together:
    """Calls made at one moment, carried out as one: each caller's key joins the next batch
    and waits for that batch's one round trip, so a crowd of answers starting or ending
    together costs a few Redis commands (and connections), not one each."""

    def __init__(self, send: Callable[[list[str]], Awaitable[None]]) -> None:
        self._send = send
        self._keys: list[str] = []
        self._batch: asyncio.Task | None = None

    async def __call__(self, key: str) -> None:
        self._keys.append(key)
        if self._batch is None:
            self._batch = asyncio.get_running_loop().create_task(self._flush())
        await asyncio.shield(self._batch)

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # the others of this moment join first
        keys, self._keys, self._batch = self._keys, [], None
        await self._send(keys)


class _Heartbeats:
    """The answers this event loop is generating, said to be alive every few seconds, all in
    one round trip, so that an answer whose worker is killed is noticed in seconds (the sweep,
    the caller's sweep), not at its deadline. The same round trip says which
    of them their battle has ended (a rater's Stop, a new battle, a void): those are stopped."""

    def __init__(self) -> None:
        self.stops: dict[str, asyncio.Event] = {}
        self.task: asyncio.Task | None = None
        self.first = _Together(self._beat)  # an answer's first beat, before its stream
        self.rest = _Together(self._rest)  # its heartbeat gone, once it has ended

    async def add(self, key: str) -> asyncio.Event:
        stop = self.stops[key] = asyncio.Event()
        await self.first(key)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())
        return stop

    async def _run(self) -> None:
        while self.stops:
            await asyncio.sleep(HEARTBEAT_EVERY_S)
            await self._beat(list(self.stops))

    async def _beat(self, keys: list[str]) -> None:
        if not keys:
            return
        try:
            stopped = await answer_streams().beat(keys, HEARTBEAT_TTL_S)
        except Exception as exc:  # Redis away: the next beat may land; the answer goes on
            log.warning("answer heartbeat failed: %s", exc)
            return
        for key in stopped:
            if (stop := self.stops.get(key)) is not None:
                stop.set()

    @staticmethod
    async def _rest(keys: list[str]) -> None:
        try:
            await answer_streams().rest(keys)
        except Exception as exc:  # they lapse on their own
            log.warning("answer heartbeats not cleared: %s", exc)


@contextlib.asynccontextmanager
async def _kept_alive(key: str) -> AsyncIterator[asyncio.Event]:
    """Heartbeats for the answer while it is generated; yields the event set when it must
    stop."""
    loop = asyncio.get_running_loop()
    beats = getattr(loop, "_arena_heartbeats", None)
    if beats is None:
        beats = loop._arena_heartbeats = _Heartbeats()  # type: ignore[attr-defined]
    stop = await beats.add(key)
    try:
        yield stop
    finally:
        beats.stops.pop(key, None)
        await beats.rest(key)


async def answer_generate(answer_id: int, *, claim: Claim, finish: Finish) -> None:
    """Generate one answer. Safe to call twice: a finished answer is left alone."""
    job = await _retrying(claim)(answer_id=answer_id)
    if job is None:
        return
    if job.abandoned:
        await answer_streams().finish(job.key, job.abandoned)
        return
    async with _kept_alive(job.key) as stop:
        await _stream(answer_id, job, stop, finish)


class _Pieces:
    """An answer's text on its way to its stream: each piece is put at once, joining any of
    its text still waiting for the stream's next write, so a piece costs no task and no wait
    of its own; a write that failed is raised at the next piece, and at the end."""

    def __init__(self, streams: AnswerStreams, key: str) -> None:
        self._put = partial(streams.put, key)
        self._last: asyncio.Future | None = None
        self._failed: BaseException | None = None

    async def add(self, text: str) -> None:
        if self._failed is not None:
            raise self._failed
        written = self._put(text)
        if written is not self._last:
            self._last = written
            written.add_done_callback(self._check)

    def _check(self, written: asyncio.Future) -> None:
        if self._failed is None and not written.cancelled():
            self._failed = written.exception()

    async def flush(self) -> None:
        """Everything added so far, written; the first failure raised."""
        if self._last is not None:
            await self._last
        if self._failed is not None:
            raise self._failed


async def _stream(answer_id: int, job: GenerationJob, stop: asyncio.Event, finish: Finish) -> None:
    streams = answer_streams()
    pieces = _Pieces(streams, job.key)
    result: StreamResult = await stream_answer(
        job.backend,
        job.request,
        on_delta=pieces.add,
        max_chars=job.max_chars,
        timeout_s=job.timeout_s,
        stop=stop,
    )
    try:
        await pieces.flush()
    except Exception:
        # Text the rater never got cannot make a complete answer: it fails, and so the battle.
        log.exception("writing answer %s's stream failed", answer_id)
        result = replace(
            result,
            status=AnswerStatus.PARTIAL if result.text else AnswerStatus.ERROR,
            error_kind="server",
            error_message="The answer could not be passed on to the rater.",
        )
    # The text is whole: said at once, so that a viewer shows its last characters (a tail held
    # back as a name may begin there, a pane alone short of a whole step) without waiting for
    # the finish's database write, which a crowd's answers ending together queue for.
    ended = streams.put(job.key, "", end=True) if result.status == AnswerStatus.OK else None
    status = await _retrying(finish)(answer_id=answer_id, result=result, memo=job.memo)
    if ended is not None:
        try:
            await ended
        except Exception:  # the status entry still goes: it ends the pane all the same
            log.exception("writing answer %s's text end failed", answer_id)
    try:
        await streams.finish(job.key, status)
    except Exception:  # the battle is decided in the database; a viewer's deadline ends it
        log.exception("writing answer %s's final entry failed", answer_id)


async def answers_generate(answer_ids: list[int], *, claim: Claim, finish: Finish) -> None:
    """Generate several answers at once, each as ``answer_generate`` does; all of them end
    before this returns, and the first failure is raised then."""
    results = await asyncio.gather(
        *(answer_generate(pk, claim=claim, finish=finish) for pk in answer_ids),
        return_exceptions=True,
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result
