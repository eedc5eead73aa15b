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
   own model's speed. The pace is fixed at that moment, not when the other side next has text
   (how long that takes is its model's). A faster model's text waits in the buffer, even after
   its stream ends: speeding up when it ended would show when that was. Two things bend the
   rule. The pace is measured over at least ``pace_window_ticks`` (shorter, and it is the cap:
   an answer of a few words says nothing about a pace) and is at least ``slowest_share`` of the
   cap (so a slow pair does not keep the rater waiting for text that is there). And text cannot
   be shown before it exists: a model that falls behind that pace is waited for in whole steps
   (of at most the cap), so its slowness shows as pauses only, and only once it drops below a
   pace the rater already saw. (A turn shown again while its answers are still being written
   starts with a catch-up, whose pace a model may not keep: it then pauses the same way.)
   A turn whose answers had both ended before anything was shown (a turn shown again) has no
   speed to hide and is caught up as in phase 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from arena.integrity.disguise import breaks_names

SIDES = ("a", "b")

# A character no name reaches across (integrity.disguise.breaks_names): text before it that
# was redacted knowing what follows it is redacted for good, so only what comes after the last
# such character is looked at again as more text arrives.
# Characters whose effect reaches past such a break: a right-to-left override (its run goes
# back to it however long), and ASCII controls (an all-ASCII text's skeleton may keep them).
# While one is in the text not yet shown, it is all redacted again, as one.
_WHOLE_ONLY = re.compile("[\u202e\x00-\x08\x0e-\x1b\x7f]")


def _first_difference(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


@dataclass
class _Pane:
    text: str = ""
    shown: int = 0
    done: bool = False
    last_seq: int = 0
    # The last hold worked out, and for which (text length, shown): a tick asks for it several
    # times, and hundreds of panes tick many times a second. It holds for the same text
    # while ``shown`` stays at or before the held tail (integrity.disguise.held_tail: what is
    # released before a held tail does not change it), so releasing text costs no new hold.
    held: tuple[int, int, int] = (-1, -1, 0)
    # Redaction done so far (see ``Pacer._redact``): the text before ``scanned`` was redacted;
    # ``brk``, the last character before it that no name reaches across (-1: none), and that
    # text before it is redacted for good; ``head``, the ``shown`` the text up to the first such
    # character was last redacted from; ``special``, the last of ``_WHOLE_ONLY`` seen (-1: none).
    scanned: int = 0
    brk: int = -1
    head: int = -1
    special: int = -1

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
    # The last tick released nothing, and no tick will until text or an end comes in: the
    # caller may stop ticking until then (and say the ticks it skipped with ``at``), since
    # the waiting costs the pacer nothing but counting ticks (see ``tick``).
    stalled: bool = False

    def feed(self, side: str, text: str, seq: int | None = None) -> None:
        pane = self.panes[side]
        if seq is not None:
            if seq <= pane.last_seq:
                return  # a duplicate after a redelivery
            pane.last_seq = seq
        if not pane.done:
            self.stalled = False
            pane.text += text
            pane.held = (-1, -1, 0)
            self._redact(pane)

    def _redact(self, pane: _Pane) -> None:
        """Names in the text not yet shown, redacted; a held tail (a name, or a name's version,
        perhaps still arriving) waits for the text after it, or the end of its side.

        As if all the text not yet shown were redacted again at each call (as it once was),
        but a stream's entries come about once a token, and a fast model's backlog can be
        thousands of characters: only the text after the last break (``breaks_names``) before
        what was redacted last time is, and the text up to the first break after ``shown`` (a
        name is matched there as at the start of a text) when ``shown`` has moved."""
        if self.redact is None:
            return
        text, shown = pane.text, pane.shown
        held = self.hold(text, shown) if self.hold and not pane.done else 0
        cut = len(text) - held
        if not pane.done and self.hold:
            pane.held = (len(text), shown, held)  # for this tick's ``_available``
        old = max(shown, min(pane.scanned, cut))
        if old == cut and pane.head == shown:
            return  # nothing new to redact: the text that came is held
        fresh = _WHOLE_ONLY.search(text, old, cut)
        tail = pane.brk if shown <= pane.brk < old else None
        head = None
        if tail is not None and pane.head != shown:
            head = next(k for k in range(shown, tail + 1) if breaks_names(text[k]))
        if fresh or pane.special >= shown or tail is None or head == tail:
            tail, head = shown, None  # all of it again
        # Where this call changed the text first: a name redacted may leave one beside it
        # that was not one before ("metaClaude"), so the next call looks again from there.
        redo = None
        part = text[tail:cut]
        cleaned = self.redact(part)
        if cleaned != part:
            redo = tail + _first_difference(cleaned, part)
            text = text[:tail] + cleaned + text[cut:]
        end = tail + len(cleaned)
        if tail == shown:
            found = _WHOLE_ONLY.finditer(text, shown, end)
            pane.special = max((m.start() for m in found), default=-1)
        pane.head = shown
        if head is not None:
            part = text[shown : head + 1]
            cleaned = self.redact(part)
            if cleaned != part:
                redo = shown + _first_difference(cleaned, part)
                text = text[:shown] + cleaned + text[head + 1 :]
                end += len(cleaned) - len(part)
        pane.scanned = end if redo is None else redo
        pane.brk = next(
            (k for k in range(pane.scanned - 1, shown - 1, -1) if breaks_names(text[k])), -1
        )
        if redo is not None:
            self.redactions += 1
            pane.text = text
            pane.held = (-1, -1, 0)

    def _available(self, pane: _Pane) -> int:
        if pane.done or self.hold is None:
            return pane.backlog
        size, shown, held = pane.held
        if size != len(pane.text) or not shown <= pane.shown <= size - held:
            held = self.hold(pane.text, pane.shown)
            pane.held = (len(pane.text), pane.shown, held)
        return max(0, pane.backlog - held)

    def finish(self, side: str) -> None:
        pane = self.panes[side]
        self.stalled = False
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
        skipped ticks while nothing was to be shown; by default the one after the last.

        Afterwards ``stalled`` says whether ticks before the next ``feed`` or ``finish`` would
        release nothing either: each waits for text (the parity buffer, a side with nothing
        new, a held tail, a pane alone short of a whole step), and what they would change (the
        tick count; a lone pane's credit, which grows to its cap however the ticks come) is
        the same when they are skipped and the next tick says its ``at``."""
        previous, self.now = self.now, self.now + 1 if at is None else at
        self.stalled = False
        if not self.started:
            self.stalled = True
            return {s: "" for s in SIDES}
        if self.began is None:
            self.began = self.now
            self.replay = all(p.done for p in self.panes.values())
        alone = self._alone()
        if alone is not None and not self.replay:
            # Credit for the ticks spent alone since the last tick: none before this one when
            # the pane is alone from now (the other side ended with nothing left to show).
            elapsed = 1 if self.alone_pace is None else max(1, self.now - previous)
            self._fix_pace(alone, through=self.now)
            return self._tick_alone(alone, elapsed=elapsed)
        # What each pane may show, worked out once: nothing changes it before the release.
        available = {side: self._available(pane) for side, pane in self.panes.items()}
        waiting = [available[side] for side, pane in self.panes.items() if not pane.done]
        if waiting:
            step = min(waiting)
        else:
            step = max(p.backlog for p in self.panes.values())
        live = [n for n in available.values() if n > 0]
        floor = max(self.chars_per_tick, -(-min(live, default=0) // self.catch_up_ticks))
        step = min(step, floor)
        # Nothing to release (a side waited for has nothing new): only text can change that.
        self.stalled = step <= 0
        out: dict[str, str] = {}
        for side, pane in self.panes.items():
            n = min(step, available[side])
            out[side] = pane.text[pane.shown : pane.shown + n]
            pane.shown += n
        alone = self._alone()
        if alone is not None and not self.replay:
            # One pane has just shown its whole answer: the pace is fixed now, as of the next
            # tick. The schedule may not tick again until the other model writes more, and by
            # then the pace would take in how long that model kept the rater waiting.
            self._fix_pace(alone, through=self.now + 1)
        return out

    def _fix_pace(self, side: str, *, through: int) -> None:
        if self.alone_pace is None:
            self.alone_pace = self._shared_pace(side, through=through)

    def _alone(self) -> str | None:
        """The side still to be shown once the other pane has shown its whole answer."""
        whole = [p.done and p.backlog == 0 for p in self.panes.values()]
        if whole.count(True) != 1:
            return None
        return SIDES[whole.index(False)]

    def _tick_alone(self, side: str, *, elapsed: int) -> dict[str, str]:
        pace = self.alone_pace
        assert pace is not None  # fixed when the other pane showed its last character
        pane = self.panes[side]
        # Credit for the ticks since the last, but never more than about a step: text that
        # waited for its model must not come out in a burst that shows it had been waited for.
        self.credit = min(self.credit + pace * elapsed, pace + 1)
        step = min(int(self.credit), math.ceil(pace))  # a pause ends in a step like any other
        available = self._available(pane)
        out = {s: "" for s in SIDES}
        if available < min(step, self.chars_per_tick) and not pane.done:
            # Short of a whole step (or the cap, after a catch-up's fast pace): wait. Showing
            # what there is would show the model's own pace. The step only grows with the
            # ticks to come (the credit does), so they would wait too, until text comes.
            self.stalled = True
            return out
        n = min(step, available)
        # Nothing released for want of text (with credit still short of a character, the
        # ticks to come may release some).
        self.stalled = available == 0 and not pane.done
        out[side] = pane.text[pane.shown : pane.shown + n]
        pane.shown += n
        self.credit -= n
        return out

    def _shared_pace(self, side: str, *, through: int) -> float:
        """Characters per side per tick while both panes were shown together (from the first
        release to ``through``, the tick at which one pane was first whole): what the rater
        has seen already, so going on at it tells nothing about the side left alone."""
        ticks = through - (self.began if self.began is not None else through)
        if ticks < self.pace_window_ticks:
            return float(self.chars_per_tick)
        return max(self.panes[side].shown / ticks, self.chars_per_tick * self.slowest_share)
