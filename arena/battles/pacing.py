"""Blind pacing: two incoming streams in, one common release schedule out.

Pure and clock-free: the caller feeds text as it arrives and calls ``tick`` at a fixed period
(with the period's index when it skips idle periods, so the pacer still counts time). What the
rater may learn of the models' speeds, phase by phase:

1. Nothing is released until both sides have produced text (the parity buffer): who answered
   first does not show.
2. Together: every tick releases the same number of characters on each side, at most the cap
   (``chars_per_tick``) unless both sides hold a large backlog (catch-up), and when either
   unfinished side has nothing new both panes wait together. The pace shown is the slower
   side's, and nothing says which side that is.
3. Alone: once one pane has shown its whole answer, the other goes on at the pace both panes had
   together (characters per side per tick, from the first release to that moment), never at its
   own model's speed. A faster model's text waits in the buffer, even after its stream ends:
   speeding up when it ended would show when that was. Two things bend the rule. The pace is
   measured over at least ``pace_window_ticks`` (shorter, and it is the cap: an answer of a
   few words says nothing about a pace) and is at least ``slowest_share`` of the cap (so a
   slow pair does not keep the rater waiting for text that is there). And text cannot be shown
   before it exists: a model that falls behind that pace is waited for in whole steps (of at
   most the cap), so its slowness shows as pauses only, and only once it drops below a pace the
   rater already saw. (A turn shown again while its answers are still being written starts with
   a catch-up, whose pace a model may not keep: it then pauses the same way.)
   A turn whose answers had both ended before anything was shown (a turn shown again) has no
   speed to hide and is caught up as in phase 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

SIDES = ("a", "b")


@dataclass
class _Pane:
    text: str = ""
    shown: int = 0
    done: bool = False
    last_seq: int = 0
    # The last hold worked out, and for which (text length, shown): a tick asks for it several
    # times, and hundreds of panes tick many times a second.
    held: tuple[int, int, int] = (-1, -1, 0)

    @property
    def backlog(self) -> int:
        return len(self.text) - self.shown


@dataclass
class Pacer:
    chars_per_tick: int = 12
    # When both sides have a big backlog, catch up so the rater is not kept waiting for text
    # that has already arrived: release at least backlog / catch_up_ticks per tick.
    catch_up_ticks: int = 40
    # Redaction of names before anything is shown: until its side is done, a tail that could
    # begin a name is held back (``hold(text, shown)`` says how many characters), so a name is
    # always whole in the buffer, and redacted, before any of it is released.
    redact: Callable[[str], str] | None = None
    hold: Callable[[str, int], int] | None = None
    redactions: int = 0
    # Phase 3 (see above): the shortest shared stretch whose pace is trusted, and the slowest
    # pace a pane left alone goes at, as a share of the cap.
    pace_window_ticks: int = 25
    slowest_share: float = 0.25
    panes: dict[str, _Pane] = field(default_factory=lambda: {s: _Pane() for s in SIDES})
    now: int = 0  # the index of the last tick
    began: int | None = None  # the tick of the first release
    replay: bool = False  # both sides had ended before anything was shown
    alone_pace: float | None = None  # characters per tick for a pane left alone, once fixed
    credit: float = 0.0  # characters the pane left alone may show, fractions carried over

    def feed(self, side: str, text: str, seq: int | None = None) -> None:
        pane = self.panes[side]
        if seq is not None:
            if seq <= pane.last_seq:
                return  # a duplicate after a redelivery
            pane.last_seq = seq
        if not pane.done:
            pane.text += text
            pane.held = (-1, -1, 0)
            self._redact(pane)

    def _redact(self, pane: _Pane) -> None:
        """Names in the text not yet shown, redacted; a held tail (a name, or a name's version,
        perhaps still arriving) waits for the text after it, or the end of its side."""
        if self.redact is None:
            return
        held = self.hold(pane.text, pane.shown) if self.hold and not pane.done else 0
        cut = len(pane.text) - held
        unshown = pane.text[pane.shown : cut]
        cleaned = self.redact(unshown)
        if cleaned != unshown:
            self.redactions += 1
            pane.text = pane.text[: pane.shown] + cleaned + pane.text[cut:]
            pane.held = (-1, -1, 0)

    def _available(self, pane: _Pane) -> int:
        if pane.done or self.hold is None:
            return pane.backlog
        size, shown, held = pane.held
        if (size, shown) != (len(pane.text), pane.shown):
            held = self.hold(pane.text, pane.shown)
            pane.held = (len(pane.text), pane.shown, held)
        return max(0, pane.backlog - held)

    def finish(self, side: str) -> None:
        pane = self.panes[side]
        pane.done = True
        self._redact(pane)  # the held tail too: nothing more will join it

    @property
    def started(self) -> bool:
        return all(p.text or p.done for p in self.panes.values())

    @property
    def all_shown(self) -> bool:
        return all(p.done and p.backlog == 0 for p in self.panes.values())

    def tick(self, at: int | None = None) -> dict[str, str]:
        """The text to release on each side now. ``at``: this tick's index, when the caller
        skipped ticks while nothing was to be shown; by default the one after the last."""
        previous, self.now = self.now, self.now + 1 if at is None else at
        if not self.started:
            return {s: "" for s in SIDES}
        if self.began is None:
            self.began = self.now
            self.replay = all(p.done for p in self.panes.values())
        alone = self._alone()
        if alone is not None and not self.replay:
            return self._tick_alone(alone, elapsed=max(1, self.now - previous))
        waiting = [p for p in self.panes.values() if not p.done]
        if waiting:
            step = min(self._available(p) for p in waiting)
        else:
            step = max(p.backlog for p in self.panes.values())
        live = [self._available(p) for p in self.panes.values() if self._available(p) > 0]
        floor = max(self.chars_per_tick, -(-min(live, default=0) // self.catch_up_ticks))
        step = min(step, floor)
        out: dict[str, str] = {}
        for side, pane in self.panes.items():
            n = min(step, self._available(pane))
            out[side] = pane.text[pane.shown : pane.shown + n]
            pane.shown += n
        return out

    def _alone(self) -> str | None:
        """The side still to be shown once the other pane has shown its whole answer."""
        whole = [p.done and p.backlog == 0 for p in self.panes.values()]
        if whole.count(True) != 1:
            return None
        return SIDES[whole.index(False)]

    def _tick_alone(self, side: str, *, elapsed: int) -> dict[str, str]:
        if self.alone_pace is None:
            self.alone_pace = self._shared_pace(side)
        pace = self.alone_pace
        pane = self.panes[side]
        # Credit for the ticks since the last, but never more than about a step: text that
        # waited for its model must not come out in a burst that shows it had been waited for.
        self.credit = min(self.credit + pace * elapsed, pace + 1)
        step = min(int(self.credit), math.ceil(pace))  # a pause ends in a step like any other
        available = self._available(pane)
        out = {s: "" for s in SIDES}
        if available < min(step, self.chars_per_tick) and not pane.done:
            # Short of a whole step (or the cap, after a catch-up's fast pace): wait. Showing
            # what there is would show the model's own pace.
            return out
        n = min(step, available)
        out[side] = pane.text[pane.shown : pane.shown + n]
        pane.shown += n
        self.credit -= n
        return out

    def _shared_pace(self, side: str) -> float:
        """Characters per side per tick while both panes were shown together: what the rater
        has seen already, so going on at it tells nothing about the side left alone."""
        ticks = self.now - (self.began if self.began is not None else self.now)
        if ticks < self.pace_window_ticks:
            return float(self.chars_per_tick)
        return max(self.panes[side].shown / ticks, self.chars_per_tick * self.slowest_share)
