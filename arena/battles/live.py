"""One pacing schedule per web process: every turn being shown in this process, read from the
answer streams in one call per frame, paced blind, and sent.

The schedule does no database work and waits on nobody's: what a turn's end needs (marking it
shown, voiding it, noting a redaction) the viewer does in tasks of its own, so one rater's slow
query never holds back another rater's text. A turn's text lives in the answer streams, not
here, so a viewer that falls behind, or another process, reads it all the same.

Pacing ticks and frames are apart. The pace is counted in ticks of ``PACE_TICK_MS`` of the
loop's clock, whatever the frame rate; a frame carries whatever both panes released in the
ticks since the last frame, so the text a rater sees, and when each side's is released
relative to the other's, is the pacer's alone. Frames come once a tick while this process
shows few turns and no faster than ``FRAME_MAX_S`` apart while it shows many (each frame is a
stream read, and a write on each socket with text to show), so a crowd costs a bounded number
of frames a second, not one per battle per tick. A turn with nothing to show (waiting for its
models' text, or holding text back that only more text lets out: ``Pacer.stalled``) costs no
step per frame: only its stream cursor in the one read, and its deadline in a heap.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from django.conf import settings

from arena.battles.pacing import Pacer
from arena.battles.selectors import TurnSides
from arena.generation.streams import START, Entry, answer_streams, entry_order, stream_key
from arena.integrity.checks import name_tail, redact

log = logging.getLogger(__name__)

# Frames: one a tick (``PACE_TICK_MS``) while this process shows at most FEW turns, then
# further apart as it shows more, up to FRAME_MAX_S apart (30 a second) at MANY and beyond,
# never closer than a tick. A frame's text waits for it at most a frame's period, so a crowd's
# added delay grows by tens of milliseconds while its frames per second stay bounded.
FRAME_MAX_S = 1 / 30
# MANY at 128, not 64: at 50 turns a process, frames 18 ms apart instead of 28 cut the text's
# delay at 100 battles (bench/battle_latency.py: p50 23 -> 17.5 ms, p99 once every battle had
# begun 40 -> 31 ms) for 7% more frames and about 0.001 s more web CPU per battle.
FEW, MANY = 8, 128
# A loop that stalled (a long garbage collection, a busy machine) catches up at most this many
# ticks in one frame; the rest of the stall is not made up, as before ticks were counted.
CATCH_UP_TICKS = 8


def frame_period(tick_s: float, shown: int) -> float:
    """Seconds from one frame to the next, for a process showing ``shown`` turns."""
    slowest = max(tick_s, FRAME_MAX_S)
    share = min(1.0, max(0, shown - FEW) / (MANY - FEW))
    return tick_s + (slowest - tick_s) * share


# How servers say a socket closed under a send (daphne's autobahn, the websockets library,
# uvicorn), by qualified class name so that none of them has to be installed; OSError covers
# the rest (a reset, a broken pipe).
CLOSED_SOCKET_ERRORS = frozenset(
    {
        "autobahn.exception.Disconnected",
        "websockets.exceptions.ConnectionClosed",
        "uvicorn.protocols.utils.ClientDisconnected",
    }
)


def socket_closed(exc: BaseException) -> bool:
    """Is this how a server reports a send on a socket that has closed?"""
    if isinstance(exc, OSError):
        return True
    return any(
        f"{c.__module__}.{c.__qualname__}" in CLOSED_SOCKET_ERRORS for c in type(exc).__mro__
    )


class SocketGone(Exception):
    """Sending a turn's frame failed: its socket is gone, whatever the server raised."""


class Viewer(Protocol):
    """The consumer showing a turn. ``send_frame`` is awaited in the schedule, so it must only
    send, and raise if it cannot; the rest are told once each and must not wait on anything."""

    async def send_frame(self, payload: dict) -> None: ...

    def answer_failed(self, watch: Watch) -> None: ...

    def answer_redacted(self, watch: Watch) -> None: ...

    def turn_shown(self, watch: Watch) -> None: ...

    def turn_overdue(self, watch: Watch) -> None: ...

    def pacing_failed(self, watch: Watch) -> None: ...


@dataclass(eq=False)
class Watch:
    """One turn being shown: where each side's stream has been read to, and the pacer."""

    viewer: Viewer
    battle_id: object
    turn_id: int
    sides: dict[str, str]  # stream key -> side
    pacer: Pacer
    deadline: float  # loop time after which the viewer is asked to check the deadline
    cursors: dict[str, str] = field(default_factory=dict)  # of the streams not yet finished
    redactions: int = 0
    busy: bool = True  # text came in, or some can still be shown without more: tick it
    failed: bool = False  # an answer ended without completing

    @classmethod
    def for_turn(
        cls,
        *,
        viewer: Viewer,
        battle_id: object,
        turn: TurnSides,
        terms: tuple[str, ...],
        deadline_s: float,
    ) -> Watch:
        conf = settings.ARENA
        watch = cls(
            viewer=viewer,
            battle_id=battle_id,
            turn_id=turn.turn_id,
            sides={},
            pacer=Pacer(
                chars_per_tick=conf["PACE_CHARS"],
                redact=partial(redact, terms=terms),
                hold=partial(name_tail, terms=terms),
            ),
            deadline=asyncio.get_running_loop().time() + deadline_s,
        )
        for answer_id, side in turn.sides.items():
            finished = turn.finished.get(answer_id)
            if finished is not None:
                # Shown again after it ended: the database has the whole answer, whether or
                # not its stream is still kept.
                status, text = finished
                watch.pacer.feed(side, text)
                watch.pacer.finish(side)
                watch.failed |= status != "ok"
                continue
            key = stream_key(battle_id=battle_id, answer_id=answer_id)
            watch.sides[key] = side
            watch.cursors[key] = START
        return watch


class Schedule:
    """The ticker of one event loop; it runs while anything is watched."""

    def __init__(self) -> None:
        self.watches: dict[Watch, None] = {}  # in the order added
        # The watches to step at the next frame (text came in, some is still to be shown, or
        # an answer failed), in the order they became so; the rest wait on their streams.
        self._due: dict[Watch, None] = {}
        self._deadlines: list[tuple[float, int, Watch]] = []  # a heap; stale entries skipped
        self._order = itertools.count()
        self._task: asyncio.Task | None = None
        self._read_failing = False  # logged once per outage, not once per tick
        # Pacing ticks so far, counted on the loop's clock from the first frame: a pacer is
        # ticked only while it has something to show, and counts time by this
        # (pacing.Pacer.tick's ``at``).
        self.ticks = 0
        self._clock: float | None = None  # the loop time of tick 0
        self.frames = 0  # frames so far (one stream read each)

    def add(self, watch: Watch) -> None:
        self.watches[watch] = None
        self._due[watch] = None
        heapq.heappush(self._deadlines, (watch.deadline, next(self._order), watch))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, watch: Watch) -> None:
        self.watches.pop(watch, None)
        self._due.pop(watch, None)

    def __contains__(self, watch: Watch) -> bool:
        """Is the watch's turn still being shown (not shown whole, failed, voided or left)?"""
        return watch in self.watches

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        self._clock = None
        while self.watches:
            began = loop.time()
            await self._tick(loop)
            tick_s = settings.ARENA["PACE_TICK_MS"] / 1000
            period = frame_period(tick_s, len(self.watches))
            await asyncio.sleep(max(0.0, period - (loop.time() - began)))

    def _advance(self, now: float) -> range:
        """The pacing ticks that fell due since the last frame (at least one)."""
        tick_s = settings.ARENA["PACE_TICK_MS"] / 1000
        if self._clock is None:
            self._clock = now - tick_s  # this first frame is the next tick
        due = round((now - self._clock) / tick_s) - self.ticks
        if due > CATCH_UP_TICKS:
            self._clock += (due - CATCH_UP_TICKS) * tick_s
            due = CATCH_UP_TICKS
        first = self.ticks + 1
        self.ticks += max(1, due)
        return range(first, self.ticks + 1)

    async def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self.frames += 1
        ticks = self._advance(loop.time())
        # Two sockets may show the same turn (two tabs): read each stream once, from the
        # earliest cursor, and give each watch what comes after its own.
        readers: dict[str, list[Watch]] = {}
        for watch in self.watches:
            for key in watch.cursors:
                readers.setdefault(key, []).append(watch)
        cursors = {
            key: ws[0].cursors[key]
            if len(ws) == 1
            else min((w.cursors[key] for w in ws), key=entry_order)
            for key, ws in readers.items()
        }
        try:
            entries = await answer_streams().read(cursors)
        except Exception:  # the streams' store is down: no text this tick, deadlines still run
            if not self._read_failing:
                log.exception("reading the answer streams failed; retrying every tick")
            self._read_failing = True
            entries = []
        else:
            if self._read_failing:
                log.warning("reading the answer streams works again")
            self._read_failing = False
        due = self._due
        # A read gives each stream's entries together, in order.
        for key, group in itertools.groupby(entries, key=lambda entry: entry.key):
            ws = readers[key]
            if len(ws) == 1:  # the usual case: the read was from this watch's own cursor
                watch_take(ws[0], list(group))
                due[ws[0]] = None
                continue
            got = list(group)
            for watch in ws:
                cursor = watch.cursors.get(key)
                if cursor is None:
                    continue
                after = [e for e in got if entry_order(e.id) > entry_order(cursor)]
                if after:
                    watch_take(watch, after)
                    due[watch] = None
        for watch in list(due):
            try:
                await self._step(watch, ticks)
            except SocketGone as gone:
                # Only the schedule is left: the battle stays as it is, for the rater to come
                # back to ("Carry on"), and it is never voided for a socket.
                self.remove(watch)
                cause = gone.__cause__
                if cause is not None and socket_closed(cause):
                    log.info("a battle's socket closed mid-frame: %r", cause)
                else:  # a server that says so in a way not listed: worth a look, still no void
                    log.warning("sending a battle's frame failed; left it", exc_info=cause)
            except Exception:  # a bug pacing this battle: it cannot be shown blind, so it ends
                log.exception("pacing a battle failed")
                self.remove(watch)
                watch.viewer.pacing_failed(watch)
            else:
                if watch not in self.watches or not (watch.busy or watch.failed):
                    due.pop(watch, None)  # ended, or nothing to show until its streams say more
        self._overdue(loop.time())

    async def _step(self, watch: Watch, ticks: range) -> None:
        if watch not in self.watches:
            return  # left while the streams were read or an earlier frame was sent
        if watch.failed:
            self.remove(watch)
            watch.viewer.answer_failed(watch)
            return
        if not watch.busy:
            return
        pacer = watch.pacer
        # Every tick due since the last frame, in one frame: the pacer releases as it would
        # have tick by tick, and stops being ticked once it has nothing left to show, or
        # nothing it can show before its streams say more (it is stalled: waiting for the
        # other side's text, a held tail's next word, a lone pane's next whole step).
        a: list[str] = []
        b: list[str] = []
        for at in ticks:
            out = pacer.tick(at=at)
            a.append(out["a"])
            b.append(out["b"])
            watch.busy = not pacer.stalled and any(pane.backlog for pane in pacer.panes.values())
            if not watch.busy or pacer.all_shown:
                break
        if pacer.redactions > watch.redactions:
            watch.redactions = pacer.redactions
            watch.viewer.answer_redacted(watch)
        text_a, text_b = "".join(a), "".join(b)
        if text_a or text_b:
            try:
                await watch.viewer.send_frame({"type": "delta", "a": text_a, "b": text_b})
            except Exception as exc:
                raise SocketGone from exc
            if watch not in self.watches:
                return  # voided or left while the frame was sent
        if pacer.all_shown and not watch.cursors:
            # Shown whole, and both answers' statuses read (a text's end comes before its
            # status): a turn is shown once its answers are finished.
            self.remove(watch)
            watch.viewer.turn_shown(watch)

    def _overdue(self, now: float) -> None:
        """Viewers of turns past their deadline, asked to check it: once, then each second
        until the turn ends."""
        heap = self._deadlines
        if len(heap) > 2 * len(self.watches) + 64:  # mostly turns that ended: let them go
            heap[:] = [e for e in heap if e[2] in self.watches and e[2].deadline == e[0]]
            heapq.heapify(heap)
        while heap and heap[0][0] <= now:
            deadline, _, watch = heapq.heappop(heap)
            if watch not in self.watches or watch.deadline != deadline:
                continue  # ended, or its deadline was moved (a newer entry stands for it)
            watch.deadline = now + 1.0
            heapq.heappush(heap, (watch.deadline, next(self._order), watch))
            watch.viewer.turn_overdue(watch)


def watch_take(watch: Watch, entries: list[Entry]) -> None:
    """One stream's entries of a read into the watch's pacer: their text fed at once (one
    name check for what came since the last frame, not one per entry), then the side finished
    if its text's end or its status came."""
    watch.busy = True
    key = entries[0].key
    side = watch.sides[key]
    texts: list[str] = []
    for entry in entries:
        if entry.done or entry.end:
            if texts:
                watch.pacer.feed(side, "".join(texts))
                texts = []
            if not watch.pacer.panes[side].done:
                watch.pacer.finish(side)
            if entry.end:  # the status is still to come: read on
                watch.cursors[key] = entry.id
                continue
            watch.cursors.pop(key, None)
            watch.failed |= entry.done != "ok"
            return  # a stream's last entry
        texts.append(entry.text)
        watch.cursors[key] = entry.id
    if texts:
        watch.pacer.feed(side, "".join(texts))


def schedule() -> Schedule:
    """This event loop's schedule, kept on the loop so that it goes when the loop goes."""
    loop = asyncio.get_running_loop()
    found = getattr(loop, "_arena_schedule", None)
    if found is None:
        found = Schedule()
        loop._arena_schedule = found  # type: ignore[attr-defined]
    return found
