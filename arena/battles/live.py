"""One pacing schedule per web process: every turn being shown in this process, read from the
answer streams in one call per tick, paced blind, and sent.

The schedule does no database work and waits on nobody's: what a turn's end needs (marking it
shown, voiding it, noting a redaction) the viewer does in tasks of its own, so one rater's slow
query never holds back another rater's text. A turn's text lives in the answer streams, not
here, so a viewer that falls behind, or another process, reads it all the same.
"""

from __future__ import annotations

import asyncio
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
    busy: bool = True  # text came in, or some is still to be shown: tick it
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
        self._task: asyncio.Task | None = None
        self._read_failing = False  # logged once per outage, not once per tick
        # Ticks so far: a pacer is ticked only while it has something to show, and counts time
        # by this (pacing.Pacer.tick's ``at``).
        self.ticks = 0

    def add(self, watch: Watch) -> None:
        self.watches[watch] = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, watch: Watch) -> None:
        self.watches.pop(watch, None)

    def __contains__(self, watch: Watch) -> bool:
        """Is the watch's turn still being shown (not shown whole, failed, voided or left)?"""
        return watch in self.watches

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self.watches:
            began = loop.time()
            await self._tick(loop)
            period = settings.ARENA["PACE_TICK_MS"] / 1000
            await asyncio.sleep(max(0.0, period - (loop.time() - began)))

    async def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self.ticks += 1
        watches = list(self.watches)
        # Two sockets may show the same turn (two tabs): read each stream once, from the
        # earliest cursor, and give each watch what comes after its own.
        readers: dict[str, list[Watch]] = {}
        for watch in watches:
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
        for entry in entries:
            ws = readers[entry.key]
            if len(ws) == 1:  # the usual case: the read was from this watch's own cursor
                watch_take(ws[0], entry)
                continue
            for watch in ws:
                cursor = watch.cursors.get(entry.key)
                if cursor is not None and entry_order(entry.id) > entry_order(cursor):
                    watch_take(watch, entry)
        for watch in watches:
            try:
                await self._step(loop, watch)
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

    async def _step(self, loop: asyncio.AbstractEventLoop, watch: Watch) -> None:
        if watch not in self.watches:
            return  # left while the streams were read or an earlier frame was sent
        if watch.failed:
            self.remove(watch)
            watch.viewer.answer_failed(watch)
            return
        if watch.busy:
            pacer = watch.pacer
            out = pacer.tick(at=self.ticks)
            watch.busy = any(pane.backlog for pane in pacer.panes.values())
            if pacer.redactions > watch.redactions:
                watch.redactions = pacer.redactions
                watch.viewer.answer_redacted(watch)
            if out["a"] or out["b"]:
                try:
                    await watch.viewer.send_frame({"type": "delta", "a": out["a"], "b": out["b"]})
                except Exception as exc:
                    raise SocketGone from exc
                if watch not in self.watches:
                    return  # voided or left while the frame was sent
            if pacer.all_shown:
                self.remove(watch)
                watch.viewer.turn_shown(watch)
                return
        if loop.time() > watch.deadline:
            watch.deadline = loop.time() + 1.0  # asked again each second until it ends
            watch.viewer.turn_overdue(watch)


def watch_take(watch: Watch, entry: Entry) -> None:
    """One stream entry into the watch's pacer."""
    watch.busy = True
    side = watch.sides[entry.key]
    if entry.done:
        del watch.cursors[entry.key]
        watch.pacer.finish(side)
        watch.failed |= entry.done != "ok"
    else:
        watch.cursors[entry.key] = entry.id
        watch.pacer.feed(side, entry.text)


def schedule() -> Schedule:
    """This event loop's schedule, kept on the loop so that it goes when the loop goes."""
    loop = asyncio.get_running_loop()
    found = getattr(loop, "_arena_schedule", None)
    if found is None:
        found = Schedule()
        loop._arena_schedule = found  # type: ignore[attr-defined]
    return found
