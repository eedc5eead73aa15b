"""A text through the pacer as a stream would bring it, split at every point."""

from __future__ import annotations

from functools import partial

from arena.battles.pacing import Pacer
from arena.integrity.checks import name_tail, redact


def streamed(text: str, terms: tuple[str, ...]) -> list[tuple[str, str]]:
    """What a rater is shown of ``text``, (first tick, in all), for every split of it."""
    shown = []
    for split in range(1, len(text)):
        pacer = Pacer(
            chars_per_tick=1000,
            redact=partial(redact, terms=terms),
            hold=partial(name_tail, terms=terms),
        )
        pacer.feed("a", text[:split])
        pacer.feed("b", "other side")
        first = pacer.tick()["a"]
        pacer.feed("a", text[split:])
        pacer.finish("a")
        pacer.finish("b")
        shown.append((first, first + pacer.tick()["a"]))
    return shown
