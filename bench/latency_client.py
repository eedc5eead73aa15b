"""The client side of bench/battle_latency.py, in a process of its own (never the servers').

    python -m bench.latency_client < job.json     # prints one JSON result on stdout

The job names the path, the daphne ports, a session cookie, the number of battles, the mock's
settings, a tag that keeps prompts new and a per-battle time limit. Path "direct", the baseline:
the same mock streams, read directly in this process, two per battle, all at once. Path
"paced": the same again, each battle's two streams through a Pacer ticking as the servers'
do (job's "tick_s" and "chars"), so the pacing's own share is known. Path
"pipeline": the battles, all at once, spread over the ports in turn; each opens a websocket,
starts a battle and reads frames until the turn completes. Every stamped chunk's delay is its
arrival time less its emit time.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ws_client import connect  # noqa: E402

STAMP = re.compile(r"⟨(\d+\.\d+)⟩")


def prompt(tag: str, i: int) -> str:
    """Battle ``i``'s prompt; the baseline asks the mock the same, so it streams the same text."""
    return f"bench prompt {tag} {i}"


class StampReader:
    """Finds emit stamps in text as it arrives, however the text was split into frames."""

    def __init__(self) -> None:
        self.buf = ""
        self.delays_ms: list[float] = []

    def feed(self, text: str, now: float) -> None:
        self.buf += text
        last = 0
        for m in STAMP.finditer(self.buf):
            self.delays_ms.append((now - float(m.group(1))) * 1000)
            last = m.end()
        self.buf = self.buf[last:]


async def baseline(n_battles: int, mock: dict, tag: str) -> list[float]:
    """The same mock streams read directly: what the model's own pacing costs, nothing else."""
    from arena.backends.base import ChatRequest, Message, TextDelta
    from arena.backends.mock import MockBackend

    async def drain(side: str, i: int) -> list[float]:
        # The model ids of battle_latency's models "Bench A" and "Bench B".
        request = ChatRequest(f"bench-{side}", (Message("user", prompt(tag, i)),), {})
        reader = StampReader()
        async for event in MockBackend(mock).stream(request):
            if isinstance(event, TextDelta):
                reader.feed(event.text, time.time())
        return reader.delays_ms

    sides = await asyncio.gather(*(drain(s, i) for i in range(n_battles) for s in "ab"))
    return [d for side in sides for d in side]


async def paced(n_battles: int, mock: dict, tag: str, tick_s: float, chars: int) -> list[float]:
    """The same mock streams, both sides of each battle through the same blind Pacer and tick
    as the servers', in this process: what the pacing itself costs (both panes release
    together, so the side that is ahead waits for the other), with no transport at all."""
    from arena.backends.base import ChatRequest, Message, TextDelta
    from arena.backends.mock import MockBackend
    from arena.battles.pacing import Pacer

    async def feed(pacer: Pacer, side: str, i: int) -> None:
        request = ChatRequest(f"bench-{side}", (Message("user", prompt(tag, i)),), {})
        async for event in MockBackend(mock).stream(request):
            if isinstance(event, TextDelta):
                pacer.feed(side, event.text)
        pacer.finish(side)

    async def battle(i: int) -> list[float]:
        pacer = Pacer(chars_per_tick=chars)
        readers = {"a": StampReader(), "b": StampReader()}
        feeders = asyncio.gather(feed(pacer, "a", i), feed(pacer, "b", i))
        while not pacer.all_shown:
            out = pacer.tick()
            now = time.time()
            for side, reader in readers.items():
                reader.feed(out[side], now)
            await asyncio.sleep(tick_s)
        await feeders
        return readers["a"].delays_ms + readers["b"].delays_ms

    battles = await asyncio.gather(*(battle(i) for i in range(n_battles)))
    return [d for one in battles for d in one]


@dataclass
class Pipeline:
    """What the battles' clients saw."""

    delays_ms: list[float] = field(default_factory=list)
    frames: int = 0
    failures: Counter = field(default_factory=Counter)
    last_frame: float = 0.0


async def battle(i: int, job: dict, out: Pipeline) -> None:
    """One battle on its own websocket; a battle that does not complete counts as failed."""
    ports = job["ports"]
    readers = {"a": StampReader(), "b": StampReader()}
    deadline = time.monotonic() + job["timeout_s"]
    try:
        sock = await connect(ports[i % len(ports)], {"Cookie": job["cookie"]})
    except (TimeoutError, OSError) as exc:
        out.failures[f"connect:{type(exc).__name__}"] += 1
        return
    try:
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
            elif frame["type"] == "turn_complete":
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
        await sock.close()


async def run(job: dict) -> dict:
    """``job["path"]`` "direct": the baseline's delays; "pipeline": the battles'."""
    n = job["battles"]
    if job["path"] == "direct":
        return {"delays_ms": await baseline(n, job["mock"], job["tag"])}
    if job["path"] == "paced":
        delays = await paced(n, job["mock"], job["tag"], job["tick_s"], job["chars"])
        return {"delays_ms": delays}
    cpu_before = sum(os.times()[:2])
    out = Pipeline()
    began = time.time()
    await asyncio.gather(*(battle(i, job, out) for i in range(n)))
    return {
        "delays_ms": out.delays_ms,
        "frames": out.frames,
        "window_s": max(out.last_frame - began, 1e-9),
        "failed": sum(out.failures.values()),
        "failures": dict(out.failures),
        "client_cpu_s": sum(os.times()[:2]) - cpu_before,
    }


def main() -> None:
    json.dump(asyncio.run(run(json.load(sys.stdin))), sys.stdout)


if __name__ == "__main__":
    main()
