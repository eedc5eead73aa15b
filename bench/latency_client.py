"""The client side of bench/battle_latency.py, in a process of its own (never the servers').

    python -m bench.latency_client < job.json     # prints one JSON result on stdout

The job names the path, the daphne ports, one session cookie per battle (a rater starting a
battle abandons their previous one, so each battle has its own rater), the number of battles,
the mock's settings, a tag that keeps prompts new and a per-battle time limit. Path "direct",
the baseline: the same mock streams, read directly in this process, two per battle, all at
once. Path "paced": the same again, each battle's two streams through a Pacer ticking as the
servers' do (job's "tick_s" and "chars"), so the pacing's own share is known. Path "pipeline":
the battles, all at once, spread over the ports in turn; each opens a websocket, starts a
battle and reads frames until the turn completes.

Every stamped chunk's delay is its arrival time less its emit time ("delays_ms"), and less
its release time under ideal blind pacing ("over_ideal_ms"): a pacer with no tick and no
transport, which releases a character on one side as soon as the other side has produced as
many (or has ended), worked out from the emit stamps of both sides of the battle. And less its
release time under the Pacer's own rules ("over_rules_ms"): the same Pacer the servers run
(tick, cap, name holds, blind pacing's lone-pane rule), fed each chunk of the battle's text at
its emit time and ticked on a clock of its own, with no transport (``rules_release``); what
those rules add over ideal pacing is "rules_over_ideal_ms".
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ws_client import connect  # noqa: E402

if TYPE_CHECKING:
    from arena.battles.pacing import Pacer

STAMP = re.compile(r"⟨(\d+\.\d+)⟩")


def prompt(tag: str, i: int) -> str:
    """Battle ``i``'s prompt; the baseline asks the mock the same, so it streams the same text."""
    return f"bench prompt {tag} {i}"


class StampReader:
    """Finds emit stamps in one side's text as it arrives, however the text was split into
    frames, and keeps where each stamp ends in the side's text, when it was emitted and when
    it arrived."""

    def __init__(self) -> None:
        self.buf = ""
        self.base = 0  # the position of ``buf``'s first character in the side's text
        self.delays_ms: list[float] = []
        self.stamps: list[tuple[int, int, float, float]] = []  # start, end, emitted, arrived
        self.parts: list[str] = []  # the side's text as it came

    def feed(self, text: str, now: float) -> None:
        self.parts.append(text)
        self.buf += text
        last = 0
        for m in STAMP.finditer(self.buf):
            emitted = float(m.group(1))
            self.delays_ms.append((now - emitted) * 1000)
            self.stamps.append((self.base + m.start(), self.base + m.end(), emitted, now))
            last = m.end()
        self.base += last
        self.buf = self.buf[last:]

    @property
    def length(self) -> int:
        """The side's text so far (all of it, once the turn is complete)."""
        return self.base + len(self.buf)


def produced_by(reader: StampReader) -> tuple[list[int], list[float]]:
    """When the side had produced its text: each chunk (from one stamp to the next, the mock
    stamps every chunk) ends at the first list's position and was emitted at the second's
    time; both ascending."""
    ends = [start for start, _, _, _ in reader.stamps[1:]] + [reader.length]
    return ends, [emitted for _, _, emitted, _ in reader.stamps]


def pacer_for(chars: int, terms: list[str]) -> Pacer:
    """A Pacer as the servers make one for a turn (live.Watch.for_turn), wide open or not as
    the job says."""
    from arena.battles.pacing import Pacer
    from arena.integrity.checks import name_tail, redact

    terms_ = tuple(terms)
    return Pacer(
        chars_per_tick=chars,
        redact=partial(redact, terms=terms_),
        hold=partial(name_tail, terms=terms_),
    )


def rules_release(
    readers: dict[str, StampReader], *, tick_s: float, chars: int, terms: list[str]
) -> dict[str, list[float]]:
    """When each stamp would be shown under the Pacer's own rules, per side, in the order of
    the side's stamps: each chunk of the battle's text (a stamp to the next) fed to a Pacer as
    the servers make it at the moment it was emitted, a side finished at its last chunk's
    emit, the Pacer ticked every ``tick_s`` from the battle's first emit, no transport. A
    stamp is shown at the tick that releases its last character."""
    pacer = pacer_for(chars, terms)
    events = []  # (emitted, side, text, last)
    for side, reader in readers.items():
        text = "".join(reader.parts)
        if text and not reader.stamps:  # no stamp to time it by: it counts as emitted at once
            events.append((float("-inf"), side, text, True))
        cuts = [0] + [start for start, _, _, _ in reader.stamps[1:]] + [len(text)]
        for k, (_, _, emitted, _) in enumerate(reader.stamps):
            events.append((emitted, side, text[cuts[k] : cuts[k + 1]], k == len(reader.stamps) - 1))
        if not text:
            pacer.finish(side)
    events.sort(key=lambda e: e[0])
    first = next((e[0] for e in events if e[0] != float("-inf")), 0.0)
    ends = {side: [end for _, end, _, _ in r.stamps] for side, r in readers.items()}
    released: dict[str, list[float]] = {side: [] for side in readers}
    at, k = 0, 0
    while not pacer.all_shown and at < 1_000_000:
        now = first + at * tick_s
        while k < len(events) and events[k][0] <= now:
            _, side, text, last = events[k]
            pacer.feed(side, text)
            if last:
                pacer.finish(side)
            k += 1
        pacer.tick(at=at + 1)
        for side, pane in pacer.panes.items():
            done = released[side]
            while len(done) < len(ends[side]) and ends[side][len(done)] <= pane.shown:
                done.append(now)
        at += 1
    return released


def over_ideal(readers: dict[str, StampReader], *, since_emit: bool = False) -> list[float]:
    """Each stamp's arrival less its release under ideal blind pacing, in ms: a stamp ending at
    position ``e`` on one side is released once it is emitted and the other side has produced
    ``e`` characters, or has ended (then its last chunk's emit time). ``since_emit``: the ideal
    release less the emit time instead (what ideal pacing itself adds to the raw stream)."""
    return [d for d, _ in _over_ideal(readers, since_emit=since_emit)]


def over_ideal_shared(readers: dict[str, StampReader]) -> list[float]:
    """``over_ideal`` of the stamps the other side had produced as many characters as by the
    time they were emitted or later, before it ended: text released while both panes are
    shown together. The rest come after the other side's whole answer, where blind pacing
    goes on at the pace both panes had (pacing.Pacer, phase 3), not the model's own, and the
    ideal pacer does not: what that rule costs is blind pacing's own, not the pipeline's."""
    return [d for d, alone in _over_ideal(readers) if not alone]


def _over_ideal(readers: dict[str, StampReader], *, since_emit: bool = False):
    for _, _, emitted, arrived, ideal, alone in stamp_times(readers):
        yield ((ideal - emitted) if since_emit else (arrived - ideal)) * 1000, alone


def stamp_times(readers: dict[str, StampReader]):
    """Each stamp of both sides (a, then b, each in order): where it ends, when it was emitted,
    when it arrived, its release under ideal blind pacing, and whether it came after the
    other side's whole answer."""
    for side, other in (("a", "b"), ("b", "a")):
        ends, times = produced_by(readers[other])
        if not times:
            continue
        for _, end, emitted, arrived in readers[side].stamps:
            k = bisect.bisect_left(ends, end)
            alone = k >= len(times)
            ideal = max(emitted, times[min(k, len(times) - 1)])
            yield side, end, emitted, arrived, ideal, alone


def over_rules(
    readers: dict[str, StampReader], *, tick_s: float, chars: int, terms: list[str]
) -> tuple[list[float], list[float], list[float]]:
    """In ms, per stamp: its arrival less its release under the Pacer's own rules
    (``rules_release``); that release less the ideal one; and less its emit time."""
    released = rules_release(readers, tick_s=tick_s, chars=chars, terms=terms)
    index = {"a": 0, "b": 0}
    arrival, rules_ideal, rules_raw = [], [], []
    for side, _, emitted, arrived, ideal, _ in stamp_times(readers):
        k = index[side]
        index[side] += 1
        if k >= len(released[side]):
            continue  # never shown under the rules within the simulation's bound
        at = released[side][k]
        arrival.append((arrived - at) * 1000)
        rules_ideal.append((at - ideal) * 1000)
        rules_raw.append((at - emitted) * 1000)
    return arrival, rules_ideal, rules_raw


async def baseline(n_battles: int, mock: dict, tag: str) -> dict:
    """The same mock streams read directly: what the model's own pacing costs, nothing else;
    and, from their stamps, what ideal blind pacing adds to them."""
    from arena.backends.base import ChatRequest, Message, TextDelta
    from arena.backends.mock import MockBackend

    async def drain(side: str, i: int) -> StampReader:
        # The model ids of battle_latency's models "Bench A" and "Bench B".
        request = ChatRequest(f"bench-{side}", (Message("user", prompt(tag, i)),), {})
        reader = StampReader()
        async for event in MockBackend(mock).stream(request):
            if isinstance(event, TextDelta):
                reader.feed(event.text, time.time())
        return reader

    async def battle(i: int) -> dict[str, StampReader]:
        a, b = await asyncio.gather(drain("a", i), drain("b", i))
        return {"a": a, "b": b}

    battles = await asyncio.gather(*(battle(i) for i in range(n_battles)))
    return {
        "delays_ms": [d for one in battles for r in one.values() for d in r.delays_ms],
        "ideal_ms": [d for one in battles for d in over_ideal(one, since_emit=True)],
    }


async def paced(
    n_battles: int, mock: dict, tag: str, tick_s: float, chars: int, terms: list[str]
) -> dict:
    """The same mock streams, both sides of each battle through the same blind Pacer and tick
    as the servers', in this process: what the pacing itself costs (both panes release
    together, so the side that is ahead waits for the other), with no transport at all."""
    from arena.backends.base import ChatRequest, Message, TextDelta
    from arena.backends.mock import MockBackend

    async def feed(pacer: Pacer, side: str, i: int) -> None:
        request = ChatRequest(f"bench-{side}", (Message("user", prompt(tag, i)),), {})
        async for event in MockBackend(mock).stream(request):
            if isinstance(event, TextDelta):
                pacer.feed(side, event.text)
        pacer.finish(side)

    async def battle(i: int) -> dict[str, StampReader]:
        pacer = pacer_for(chars, terms)
        readers = {"a": StampReader(), "b": StampReader()}
        feeders = asyncio.gather(feed(pacer, "a", i), feed(pacer, "b", i))
        while not pacer.all_shown:
            out = pacer.tick()
            now = time.time()
            for side, reader in readers.items():
                reader.feed(out[side], now)
            await asyncio.sleep(tick_s)
        await feeders
        return readers

    battles = await asyncio.gather(*(battle(i) for i in range(n_battles)))
    rules = [over_rules(one, tick_s=tick_s, chars=chars, terms=terms)[0] for one in battles]
    return {
        "delays_ms": [d for one in battles for r in one.values() for d in r.delays_ms],
        "over_ideal_ms": [d for one in battles for d in over_ideal(one)],
        "shared_ms": [d for one in battles for d in over_ideal_shared(one)],
        "over_rules_ms": [d for one in rules for d in one],
    }


@dataclass
class Pipeline:
    """What the battles' clients saw."""

    delays_ms: list[float] = field(default_factory=list)
    over_ideal_ms: list[float] = field(default_factory=list)
    shared_ms: list[float] = field(default_factory=list)  # over_ideal_shared's
    over_rules_ms: list[float] = field(default_factory=list)  # over_rules's, and the rules':
    rules_over_ideal_ms: list[float] = field(default_factory=list)
    rules_over_raw_ms: list[float] = field(default_factory=list)
    rules_shared_ms: list[float] = field(default_factory=list)  # over ideal, both panes shown
    # shared_ms of the text that arrived after the last battle began (its 'battle' frame): the
    # pipeline once the crowd's starts are done, apart from while they compete with streaming
    settled_ms: list[float] = field(default_factory=list)
    last_start: float = 0.0
    start_s: list[float] = field(default_factory=list)  # send "start" -> "battle" frame
    turn_s: list[float] = field(default_factory=list)  # send "start" -> "turn_complete"
    frames: int = 0
    failures: Counter = field(default_factory=Counter)
    last_frame: float = 0.0
    complete: list[dict[str, StampReader]] = field(default_factory=list)  # each side's reader


async def battle(i: int, job: dict, out: Pipeline) -> None:
    """One battle on its own websocket; a battle that does not complete counts as failed."""
    ports, cookies = job["ports"], job["cookies"]
    readers = {"a": StampReader(), "b": StampReader()}
    deadline = time.monotonic() + job["timeout_s"]
    try:
        sock = await connect(ports[i % len(ports)], {"Cookie": cookies[i % len(cookies)]})
    except (TimeoutError, OSError) as exc:
        out.failures[f"connect:{type(exc).__name__}"] += 1
        return
    complete = False
    try:
        sent = time.monotonic()
        sock.send({"action": "start", "prompt": prompt(job["tag"], i)})
        while True:
            frame = await sock.receive(timeout=max(0.0, deadline - time.monotonic()))
            now = time.time()
            out.last_frame = max(out.last_frame, now)
            if frame is None:
                out.failures["closed"] += 1
                return
            if frame["type"] == "delta":
                out.frames += 1
                readers["a"].feed(frame["a"], now)
                readers["b"].feed(frame["b"], now)
            elif frame["type"] == "battle":
                out.start_s.append(time.monotonic() - sent)
                out.last_start = max(out.last_start, now)
            elif frame["type"] == "turn_complete":
                out.turn_s.append(time.monotonic() - sent)
                complete = True
                return
            elif frame["type"] in {"void", "error"}:
                out.failures[f"{frame['type']}:{frame.get('code', '')}".rstrip(":")] += 1
                return
    except TimeoutError:
        out.failures["timeout"] += 1
    except (ConnectionError, OSError) as exc:
        out.failures[f"socket:{type(exc).__name__}"] += 1
    finally:
        out.delays_ms += readers["a"].delays_ms + readers["b"].delays_ms
        if complete:  # the ideal needs both sides' whole text
            # Worked out once every battle has ended (``analyse``), not here: this loop stamps
            # the other battles' frames as they arrive, and the rules' simulation of a battle
            # takes it tens of milliseconds (the first, with its imports, hundreds), which the
            # frames that came meanwhile would count as the pipeline's delay.
            out.complete.append(readers)
        await sock.close()


def analyse(out: Pipeline, job: dict) -> None:
    """Each complete battle's delays over ideal pacing and over the Pacer's own rules."""
    for readers in out.complete:
        out.over_ideal_ms += over_ideal(readers)
        out.shared_ms += over_ideal_shared(readers)
        out.settled_ms += [
            (arrived - ideal) * 1000
            for *_, arrived, ideal, alone in stamp_times(readers)
            if not alone and arrived > out.last_start
        ]
        arrival, rules_ideal, rules_raw = over_rules(
            readers, tick_s=job["tick_s"], chars=job["chars"], terms=job.get("terms", [])
        )
        out.over_rules_ms += arrival
        out.rules_over_ideal_ms += rules_ideal
        out.rules_over_raw_ms += rules_raw
        alone = [a for *_, a in stamp_times(readers)]
        if len(alone) == len(rules_ideal):
            out.rules_shared_ms += [d for d, a in zip(rules_ideal, alone, strict=True) if not a]


async def run(job: dict) -> dict:
    """``job["path"]`` "direct": the baseline's delays; "paced" and "pipeline": the battles'."""
    n = job["battles"]
    if job["path"] == "direct":
        return await baseline(n, job["mock"], job["tag"])
    if job["path"] == "paced":
        return await paced(
            n, job["mock"], job["tag"], job["tick_s"], job["chars"], job.get("terms", [])
        )
    cpu_before = sum(os.times()[:2])
    out = Pipeline()
    began = time.time()
    await asyncio.gather(*(battle(i, job, out) for i in range(n)))
    client_cpu_s = sum(os.times()[:2]) - cpu_before
    analyse(out, job)
    return {
        "delays_ms": out.delays_ms,
        "over_ideal_ms": out.over_ideal_ms,
        "shared_ms": out.shared_ms,
        "settled_ms": out.settled_ms,
        "over_rules_ms": out.over_rules_ms,
        "rules_over_ideal_ms": out.rules_over_ideal_ms,
        "rules_over_raw_ms": out.rules_over_raw_ms,
        "rules_shared_ms": out.rules_shared_ms,
        "start_s": out.start_s,
        "turn_s": out.turn_s,
        "frames": out.frames,
        "window_s": max(out.last_frame - began, 1e-9),
        "failed": sum(out.failures.values()),
        "failures": dict(out.failures),
        "client_cpu_s": client_cpu_s,
    }


def main() -> None:
    json.dump(asyncio.run(run(json.load(sys.stdin))), sys.stdout)


if __name__ == "__main__":
    main()
