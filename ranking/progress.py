"""Progress of long ranking runs, for the commands that show it on a terminal.

The ranking math reports work done through ``expect`` and ``advance``, which do nothing unless a
command has opened a ``stage``: the math stays pure and pays a context-variable read. A stage
draws a tqdm bar on standard error, and only where that is a terminal and the user did not ask
for quiet (``shown``); a log file or a pipe gets nothing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO

_bar: ContextVar[object | None] = ContextVar("ranking_progress", default=None)


def expect(total: int) -> None:
    """The open stage will take ``total`` units of work in all (bootstrap rounds, boards)."""
    bar = _bar.get()
    if bar is not None:
        bar.total = total
        bar.refresh()


def advance(n: int = 1) -> None:
    """``n`` more units of the open stage are done."""
    bar = _bar.get()
    if bar is not None:
        bar.update(n)


def shown(*, quiet: bool, stream: TextIO | None = None) -> bool:
    """Whether to draw progress: on a terminal, unless asked to be quiet."""
    stream = stream or sys.stderr
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


@contextlib.contextmanager
def stage(desc: str, *, unit: str, enabled: bool, total: int | None = None) -> Iterator[None]:
    """A bar for one stage of a run (reading, fitting), while the block runs."""
    if not enabled:
        yield
        return
    from tqdm import tqdm  # only where a bar is drawn

    with tqdm(desc=desc, unit=unit, total=total, file=sys.stderr, dynamic_ncols=True,
              mininterval=0.25, unit_scale=unit != " board") as bar:  # fmt: skip
        token = _bar.set(bar)
        try:
            yield
        finally:
            _bar.reset(token)
