"""Blind pacing: two incoming streams in, one common release schedule out.

Pure and clock-free: the caller feeds text as it arrives and calls ``tick`` at a fixed period.
Nothing is released until both sides have produced text (the parity buffer). After that, every
tick releases the same number of characters on each side, and when either unfinished side has
nothing new both panes wait together, so a faster model never looks faster.
"""

from __future__ import annotations

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
    panes: dict[str, _Pane] = field(default_factory=lambda: {s: _Pane() for s in SIDES})

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

    def tick(self) -> dict[str, str]:
        """The text to release on each side now; both sides advance by the same amount."""
        if not self.started:
            return {s: "" for s in SIDES}
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
