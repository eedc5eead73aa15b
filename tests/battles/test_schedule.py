"""The pacing clock: every battle of an event loop ticks from one schedule."""

from __future__ import annotations

import asyncio

from arena.battles.schedule import pace_clock


async def test_battles_tick_in_turn_until_each_is_done():
    clock = pace_clock(0.0)
    seen: list[str] = []
    done = asyncio.Event()

    def ticker(name: str, rounds: int):
        async def tick() -> bool:
            seen.append(name)
            if name == "b" and seen.count("b") == rounds:
                done.set()
            return seen.count(name) < rounds

        return tick

    clock.join("a", ticker("a", 2))
    clock.join("b", ticker("b", 3))
    await done.wait()

    assert seen == ["a", "b", "a", "b", "b"]


async def test_one_failing_battle_does_not_stop_the_others():
    clock = pace_clock(0.0)
    ticks: list[str] = []
    done = asyncio.Event()

    async def broken() -> bool:
        ticks.append("broken")
        raise RuntimeError("boom")

    async def fine() -> bool:
        ticks.append("fine")
        if ticks.count("fine") == 3:
            done.set()
            return False
        return True

    clock.join("broken", broken)
    clock.join("fine", fine)
    await done.wait()

    assert ticks == ["broken", "fine", "fine", "fine"]


async def test_joining_again_replaces_the_earlier_tick_and_leave_stops_it():
    clock = pace_clock(0.0)
    ticks: list[str] = []
    done = asyncio.Event()

    async def old() -> bool:
        ticks.append("old")
        return True

    async def new() -> bool:
        ticks.append("new")
        if ticks.count("new") == 2:
            clock.leave("battle")
            done.set()
        return True

    clock.join("battle", old)
    clock.join("battle", new)
    await done.wait()
    await asyncio.sleep(0)

    assert ticks == ["new", "new"]
