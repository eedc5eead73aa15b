"""One pacing clock per event loop: every battle a web process paces ticks from one schedule.

A ticker task per battle means a timer and a wake-up per battle per tick; one clock wakes once
per tick and gives each battle its turn, in the order they joined.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Tick = Callable[[], Awaitable[bool]]  # True: tick me again next time


class PaceClock:
    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self._ticks: dict[object, Tick] = {}
        self._task: asyncio.Task | None = None

    def join(self, key: object, tick: Tick) -> None:
        """Tick ``tick`` every period until it returns False or ``key`` leaves; joining again
        under the same key replaces the earlier tick."""
        self._ticks[key] = tick
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def leave(self, key: object) -> None:
        self._ticks.pop(key, None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._ticks:
            started = loop.time()
            for key, tick in list(self._ticks.items()):
                if self._ticks.get(key) is not tick:
                    continue  # it left, or started over, during this round
                try:
                    again = await tick()
                except Exception:  # one battle's failure must not stop the others' clock
                    log.exception("a pacing tick failed")
                    again = False
                if not again and self._ticks.get(key) is tick:
                    del self._ticks[key]
            await asyncio.sleep(max(0.0, self.period_s - (loop.time() - started)))


_clocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PaceClock] = (
    weakref.WeakKeyDictionary()
)


def pace_clock(period_s: float) -> PaceClock:
    """This event loop's clock for ``period_s`` ticks."""
    loop = asyncio.get_running_loop()
    clock = _clocks.get(loop)
    if clock is None or clock.period_s != period_s:
        clock = _clocks[loop] = PaceClock(period_s)
    return clock
