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
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from django.conf import settings

from arena.battles.pacing import Pacer
from arena.generation.streams import START, answer_streams, stream_key
from arena.integrity.checks import name_tail, redact

log = logging.getLogger(__name__)


class Viewer(Protocol):
    """The consumer showing a turn. ``send`` is awaited in the schedule, so it must only send;
    the rest are told once each and must not wait on anything."""

    async def send_frame(self, payload: dict) -> None: ...

    def answer_failed(self, watch: Watch) -> None: ...

    def answer_redacted(self, watch: Watch) -> None: ...

    def turn_shown(self, watch: Watch) -> None: ...

    def turn_overdue(self, watch: Watch) -> None: ...


@dataclass(eq=False)
class Watch:
    """One turn being shown: where each side's stream has been read to, and the pacer."""

    viewer: Viewer
    sides: dict[str, str]  # stream key -> side
    pacer: Pacer
    deadline: float  # loop time after which the viewer is asked to check the deadline
    cursors: dict[str, str] = field(default_factory=dict)  # of the streams not yet finished
    redactions: int = 0
    busy: bool = False  # text came in, or some is still to be shown: tick it

    @classmethod
    def for_turn(
        cls,
        *,
        viewer: Viewer,
        battle_id: object,
        sides: dict[int, str],
        terms: tuple[str, ...],
        deadline_s: float,
    ) -> Watch:
        conf = settings.ARENA
        keys = {
            stream_key(battle_id=battle_id, answer_id=answer_id): side
            for answer_id, side in sides.items()
        }
        return cls(
            viewer=viewer,
            sides=keys,
            pacer=Pacer(
                chars_per_tick=conf["PACE_CHARS"],
                redact=partial(redact, terms=terms),
                hold=partial(name_tail, terms=terms),
            ),
            deadline=asyncio.get_running_loop().time() + deadline_s,
            cursors=dict.fromkeys(keys, START),
        )


class Schedule:
    """The ticker of one event loop; it runs while anything is watched."""

    def __init__(self) -> None:
        self.watches: dict[Watch, None] = {}  # in the order added
        self._task: asyncio.Task | None = None

    def add(self, watch: Watch) -> None:
        self.watches[watch] = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, watch: Watch) -> None:
        self.watches.pop(watch, None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self.watches:
            began = loop.time()
            try:
                await self._tick(loop)
            except Exception:  # the schedule serves every rater here: log, and tick on
                log.exception("pacing tick failed")
            period = settings.ARENA["PACE_TICK_MS"] / 1000
            await asyncio.sleep(max(0.0, period - (loop.time() - began)))

    async def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        watches = list(self.watches)
        by_key = {key: w for w in watches for key in w.cursors}
        entries = await answer_streams().read({k: c for w in watches for k, c in w.cursors.items()})
        failed: set[Watch] = set()
        for entry in entries:
            watch = by_key[entry.key]
            watch.busy = True
            side = watch.sides[entry.key]
            if entry.done:
                watch.cursors.pop(entry.key, None)
                watch.pacer.finish(side)
                if entry.done != "ok":
                    failed.add(watch)
            else:
                watch.cursors[entry.key] = entry.id
                watch.pacer.feed(side, entry.text)
        for watch in watches:
            if watch not in self.watches:
                continue  # left while the streams were read
            if watch in failed:
                self.remove(watch)
                watch.viewer.answer_failed(watch)
                continue
            if watch.busy and await self._show(watch):
                continue
            if loop.time() > watch.deadline:
                watch.deadline = loop.time() + 1.0  # asked again each second until it ends
                watch.viewer.turn_overdue(watch)

    async def _show(self, watch: Watch) -> bool:
        """One tick of the watch's pacer, sent; True if the turn is now fully shown."""
        pacer = watch.pacer
        out = pacer.tick()
        watch.busy = any(pane.backlog for pane in pacer.panes.values())
        if pacer.redactions > watch.redactions:
            watch.redactions = pacer.redactions
            watch.viewer.answer_redacted(watch)
        if out["a"] or out["b"]:
            await watch.viewer.send_frame({"type": "delta", "a": out["a"], "b": out["b"]})
        if pacer.all_shown:
            self.remove(watch)
            watch.viewer.turn_shown(watch)
            return True
        return False


_schedules: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Schedule] = (
    weakref.WeakKeyDictionary()
)


def schedule() -> Schedule:
    """This event loop's schedule."""
    loop = asyncio.get_running_loop()
    if loop not in _schedules:
        _schedules[loop] = Schedule()
    return _schedules[loop]
