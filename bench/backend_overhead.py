"""Requests per second and added latency of the adapter and pool layers, beside bare httpx.

Not a test: it prints figures. The mock OpenAI-compatible server runs in its own process (two
replicas, no artificial delay) and three clients stream the same requests from it in this run:
a bare httpx SSE loop (the baseline), the OpenAI-compatible adapter through ``stream_answer``,
and the same behind a two-replica pool.

    uv run python bench/backend_overhead.py [--requests 400] [--concurrency 1 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import percentile, stop  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
# Its mock servers listen on loopback, which backends refuse unless an operator allows it.
os.environ.setdefault("ARENA_BACKEND_ALLOW_HOSTS", "127.0.0.1,localhost")


def body(i: int) -> dict:
    return {
        "model": "bench",
        "messages": [{"role": "user", "content": f"question {i}"}],
        "max_tokens": 100,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def bare(url: str, i: int) -> float:
    import httpx

    from arena.backends.http import shared_client

    started = time.perf_counter()
    client: httpx.AsyncClient = shared_client()
    async with client.stream("POST", f"{url}/chat/completions", json=body(i)) as response:
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                break
            if line.startswith("data: "):
                json.loads(line[6:])  # the baseline parses each chunk too
    return (time.perf_counter() - started) * 1000


async def through(backend, i: int) -> float:
    from arena.backends.base import ChatRequest, Message
    from arena.generation.runner import stream_answer

    async def ignore(_: str) -> None:
        return None

    started = time.perf_counter()
    result = await stream_answer(
        backend,
        ChatRequest("bench", (Message("user", f"question {i}"),), {"max_tokens": 100}),
        on_delta=ignore,
        max_chars=100_000,
        timeout_s=30,
    )
    assert result.status == "ok", result.error_message
    return (time.perf_counter() - started) * 1000


async def run(make, n: int, concurrency: int) -> tuple[float, list[float]]:
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with sem:
            latencies.append(await make(i))

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return n / (time.perf_counter() - started), latencies


async def measure(urls: list[str], n: int, levels: list[int]) -> None:
    from arena.backends.registry import backend_for

    adapter = backend_for("openai_compatible", {"base_url": urls[0]})
    pool = backend_for(
        "openai_compatible", {"replicas": [{"base_url": u} for u in urls], "max_concurrency": 64}
    )
    paths = {
        "bare httpx": lambda i: bare(urls[i % 2], i),
        "adapter": lambda i: through(adapter, i),
        "pool (2)": lambda i: through(pool, i),
    }
    await run(paths["bare httpx"], 20, 4)  # warm-up: connections, imports
    print(
        f"{'conc':>5} {'path':<11} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'+p50 ms':>8} {'+p99 ms':>8} {'rps ratio':>9}"
    )
    for concurrency in levels:
        base_rps = base50 = base99 = 0.0
        for name, make in paths.items():
            rps, lat = await run(make, n, concurrency)
            p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
            if name == "bare httpx":
                base_rps, base50, base99 = rps, p50, p99
            print(
                f"{concurrency:>5} {name:<11} {rps:>8.1f} {p50:>8.2f} {p99:>8.2f} "
                f"{p50 - base50:>8.2f} {p99 - base99:>8.2f} {rps / base_rps:>9.2f}"
            )
    print(
        f"\n{n} requests per row, 100-token answers; mean over the last row "
        f"{statistics.mean(lat):.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()

    import django

    django.setup()
    from arena.devtools.http_server import free_port

    port = free_port()
    while True:  # two consecutive free ports for the two replicas
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            break
        except OSError:
            port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "mock_backend",
            "--port",
            str(port),
            "--replicas",
            "2",
            "--ttft-ms",
            "0",
            "--tokens-per-s",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        urls = []
        while len(urls) < 2:
            line = server.stdout.readline()
            if not line:
                raise SystemExit("the mock backend did not start")
            urls.append(line.rsplit(" ", 1)[1].strip())
        asyncio.run(measure(urls, args.requests, args.concurrency))
    finally:
        stop(server, timeout=10)


if __name__ == "__main__":
    main()
