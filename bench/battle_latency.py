"""Added delay per chunk, mock backend -> websocket client, through Redis and a Celery worker.

Not a test: it prints figures. Each mock chunk carries the time it was emitted; the client
notes when that chunk reaches it. The pipeline under test is the real one: Celery task ->
coalescer -> Redis channel layer -> BattleConsumer (pacing set wide open, so it never holds
text back beyond one tick) -> websocket frame. The baseline, measured in the same run, reads the
same mock stream directly in the client process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/arena_bench \
    REDIS_URL=redis://127.0.0.1:6379/0 uv run python bench/battle_latency.py [--battles 1 10 20]

The database named is created if missing and migrated; the bench writes only its own rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
# Pacing wide open: one tick's worth of delay at most, so the figure is the transport's.
os.environ.setdefault("ARENA_PACE_TICK_MS", "10")
os.environ.setdefault("ARENA_PACE_CHARS", "1000000")
# The bench measures the pipeline, not the rate limits it would otherwise run into.
for _scope in ("USER", "NETWORK"):
    os.environ.setdefault(f"RATELIMIT_BATTLE_START_{_scope}", "")

STAMP = re.compile(r"⟨(\d+\.\d+)⟩")
MOCK = {"ttft_ms": 50, "tokens_per_s": 40, "answer_tokens": 60, "timestamps": True}


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


async def baseline(n_battles: int) -> list[float]:
    """The same mock streams read directly: what the model's own pacing costs, nothing else."""
    from arena.backends.base import ChatRequest, Message, TextDelta
    from arena.backends.mock import MockBackend

    async def one(i: int) -> list[float]:
        backends = [MockBackend(MOCK), MockBackend(MOCK)]
        requests = [
            ChatRequest(f"bench-{s}", (Message("user", f"bench prompt {i}"),), {})
            for s in ("a", "b")
        ]

        async def drain(backend, request):
            reader = StampReader()
            async for event in backend.stream(request):
                if isinstance(event, TextDelta):
                    reader.feed(event.text, time.time())
            return reader.delays_ms

        sides = await asyncio.gather(
            *(drain(b, r) for b, r in zip(backends, requests, strict=True))
        )
        return [d for side in sides for d in side]

    results = await asyncio.gather(*(one(i) for i in range(n_battles)))
    return [d for r in results for d in r]


async def pipeline(n_battles: int, headers) -> tuple[list[float], int]:
    from channels.testing import WebsocketCommunicator

    from arena.asgi import application

    async def one(i: int) -> tuple[list[float], bool]:
        readers = {"a": StampReader(), "b": StampReader()}
        comm = WebsocketCommunicator(application, "/ws/battle/", headers=headers)
        connected, _ = await comm.connect()
        assert connected, "websocket refused"
        await comm.send_json_to({"action": "start", "prompt": f"bench prompt {i} {time.time()}"})
        ok = False
        while True:
            frame = await comm.receive_json_from(timeout=60)
            now = time.time()
            if frame["type"] == "delta":
                readers["a"].feed(frame["a"], now)
                readers["b"].feed(frame["b"], now)
            elif frame["type"] in {"turn_complete", "void", "error"}:
                ok = frame["type"] == "turn_complete"
                break
        await comm.disconnect()
        return readers["a"].delays_ms + readers["b"].delays_ms, ok

    results = await asyncio.gather(*(one(i) for i in range(n_battles)))
    failed = sum(1 for _, ok in results if not ok)
    return [d for r, _ in results for d in r], failed


async def measure(loads: list[int], headers) -> None:
    # One event loop for the whole run: the Redis channel layer binds to the loop it starts on.
    await pipeline(1, headers)  # warm-up: worker start, connections
    print(
        f"{'battles':>8} {'path':<10} {'chunks':>7} {'p50 ms':>9} {'p99 ms':>9} "
        f"{'added p50':>10} {'added p99':>10} {'failed':>7}"
    )
    for n in loads:
        base = await baseline(n)
        got, failed = await pipeline(n, headers)
        b50, b99 = common.percentile(base, 0.5), common.percentile(base, 0.99)
        p50, p99 = common.percentile(got, 0.5), common.percentile(got, 0.99)
        print(f"{n:>8} {'direct':<10} {len(base):>7} {b50:>9.2f} {b99:>9.2f}")
        print(
            f"{n:>8} {'pipeline':<10} {len(got):>7} {p50:>9.2f} {p99:>9.2f} "
            f"{p50 - b50:>10.2f} {p99 - b99:>10.2f} {failed:>7}"
        )
    print(
        f"\npacing tick {os.environ['ARENA_PACE_TICK_MS']} ms (wide open); the worker "
        "coalesces deltas for up to 30 ms or 256 chars; 2 streams per battle at "
        f"{MOCK['tokens_per_s']} tokens/s; mean added at the last load "
        f"{statistics.mean(got) - statistics.mean(base):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, nargs="+", default=[1, 10, 20])
    args = parser.parse_args()

    common.setup_database()
    from accounts.models import User
    from arena.catalog.models import standard_params

    common.only_mock_models("Bench", MOCK, supported_params=standard_params())
    user, _ = User.objects.get_or_create(email="bench@arena.local")
    common.verify_email(user)
    headers = [(b"cookie", common.session_cookie(user).encode()), (b"origin", b"http://localhost")]

    worker = common.start_worker("generation,default", concurrency=48)
    try:
        asyncio.run(measure(args.battles, headers))
    finally:
        common.stop(worker, timeout=30)


if __name__ == "__main__":
    main()
