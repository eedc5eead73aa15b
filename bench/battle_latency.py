"""Added delay per chunk, mock backend -> websocket client, through Redis and a Celery worker.

Not a test: it prints figures. Each mock chunk carries the time it was emitted; the client
notes when that chunk reaches it. The pipeline under test is the real one, as deployed: Celery
workers (``--workers`` processes, 1 by default, each ``-P threads -c 100`` as the README
recommends) -> coalescer -> answer streams on Redis -> ``--servers`` daphne processes (2), each
pacing all its battles from one schedule -> websocket frame. Pacing is set wide open (a 10 ms
tick, no limit on characters), so the only waits are the tick and blind pacing's own: the side
ahead waits for the other. The clients run in a process of their own (bench/latency_client.py),
battles spread over the servers in turn.

    uv run python bench/battle_latency.py [--battles 1 20 100 200] [--workers 1]

Per load it prints three rows, all measured in the same run and the same client process: the
baseline ("direct": the same mock streams read directly), the same streams through the same
Pacer and tick with no transport ("paced": what blind pacing costs by itself), and the pipeline;
each with what it adds (its percentile less the baseline's). The pipeline's row adds the delta
frames per second all clients received together, the CPU seconds per battle of the web
processes and of the workers (from /proc, threads and child processes included), and the
battles that did not complete.

The bench runs on PostgreSQL (DATABASE_URL, default the bench's own database arena_bench,
created if missing and migrated; the bench writes only its own rows) and Redis (REDIS_URL,
default database 9 of 127.0.0.1:6379, so it shares no keys with the tests' database 0), on
Celery queues of its own, which it purges before it starts; nothing else is flushed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

RUN = uuid.uuid4().hex[:8]
LOGS = ROOT / "var"

common.celery_environment(name="latency", database="arena_bench", redis_db=9)
# Pacing wide open: one tick's worth of delay at most, so the figure is the transport's.
os.environ.setdefault("ARENA_PACE_TICK_MS", "10")
os.environ.setdefault("ARENA_PACE_CHARS", "1000000")
# The bench measures the pipeline, not the rate limits it would otherwise run into.
for _scope in ("USER", "NETWORK"):
    os.environ.setdefault(f"RATELIMIT_BATTLE_START_{_scope}", "")


def client(job: dict) -> dict:
    """One job of bench/latency_client.py, in a process of its own."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.latency_client"],
        cwd=ROOT,
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=job["timeout_s"] + 120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the client failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def cpu(procs: list[subprocess.Popen]) -> float:
    return sum(common.cpu_seconds(p.pid) for p in procs)


def figures(delays: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max, in ms; NaN for no chunks."""
    if not delays:
        return (float("nan"),) * 3
    return common.percentile(delays, 0.5), common.percentile(delays, 0.99), max(delays)


HEADER = (
    f"{'battles':>7} {'path':<8} {'chunks':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
    f"{'+p50 ms':>8} {'+p99 ms':>8} {'+max ms':>8} {'wall s':>7} {'frames/s':>9} {'web s/b':>8} "
    f"{'worker s/b':>10} {'client s/b':>10} {'failed':>6}"
)


def line(n: int, path: str, delays: list[float], base: tuple[float, float, float]) -> str:
    f = figures(delays)
    return (
        f"{n:>7} {path:<8} {len(delays):>7} {f[0]:>8.1f} {f[1]:>8.1f} {f[2]:>8.1f} "
        f"{f[0] - base[0]:>8.1f} {f[1] - base[1]:>8.1f} {f[2] - base[2]:>8.1f}"
    )


def row(n: int, job: dict, web: list[subprocess.Popen], workers: list[subprocess.Popen]) -> dict:
    """One load: the baselines, then the battles with the servers' CPU read around them."""
    tag = f"{RUN}-{n}-{time.time():.3f}"
    base = client({**job, "path": "direct", "battles": n, "tag": tag})["delays_ms"]
    paced = client({**job, "path": "paced", "battles": n, "tag": tag})["delays_ms"]
    before = cpu(web), cpu(workers)
    got = client({**job, "path": "pipeline", "battles": n, "tag": tag})
    time.sleep(0.5)  # the servers' last work on this load (closing sockets)
    after = cpu(web), cpu(workers)
    b = figures(base)
    print(line(n, "direct", base, b), flush=True)
    print(line(n, "paced", paced, b), flush=True)
    print(
        f"{line(n, 'pipeline', got['delays_ms'], b)} "
        f"{got['window_s']:>7.1f} {got['frames'] / got['window_s']:>9.1f} "
        f"{(after[0] - before[0]) / n:>8.3f} "
        f"{(after[1] - before[1]) / n:>10.3f} {got['client_cpu_s'] / n:>10.3f} "
        f"{got['failed']:>6}",
        flush=True,
    )
    return {"n": n, "base": base, "paced": paced, **got}


def measure(args: argparse.Namespace, job: dict, web: list, workers: list) -> None:
    # Warm-up, one battle per server: worker start, connections, first queries.
    warm = client({**job, "path": "pipeline", "battles": len(web), "tag": f"{RUN}-warm"})
    if warm["failed"]:
        print(f"warm-up: {warm['failed']} of {len(web)} battles failed: {warm['failures']}")
    print(HEADER, flush=True)
    rows = [row(n, job, web, workers) for n in args.battles]
    last = rows[-1]
    if last["delays_ms"] and last["base"]:
        mean = statistics.mean(last["delays_ms"]) - statistics.mean(last["base"])
        print(f"\nmean added at the last load: {mean:.1f} ms")
    for r in rows:
        if r["failures"]:
            print(f"failed at {r['n']} battles: {r['failures']}")
    mock = job["mock"]
    print(
        f"{len(web)} daphne processes; {len(workers)} worker process(es) -P {args.worker_pool} "
        f"-c {args.worker_concurrency}; DATABASE_CONN_MAX_AGE "
        f"{os.environ['DATABASE_CONN_MAX_AGE']}; pacing tick {os.environ['ARENA_PACE_TICK_MS']} "
        f"ms, {os.environ['ARENA_PACE_CHARS']} chars (wide open); 2 mock streams per battle, "
        f"{mock['answer_tokens']} tokens at {mock['tokens_per_s']} tokens/s after "
        f"{mock['ttft_ms']} ms; +: the figure less the direct baseline's; paced: the same "
        "streams through the same Pacer and tick in the client process, no transport (what "
        "blind pacing costs by itself: the side ahead waits for the other); wall s: first start "
        "to last frame; frames/s: delta frames all clients received over that time; s/b: CPU "
        "seconds per battle (web: all daphnes together; worker: all workers together)"
    )
    print(f"logs: {LOGS}/bench-latency-*.log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, nargs="+", default=[1, 20, 100, 200])
    parser.add_argument("--servers", type=int, default=2, help="daphne processes")
    parser.add_argument("--worker-pool", default="threads", help="Celery pool (-P)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes")
    parser.add_argument("--worker-concurrency", type=int, default=100, help="Celery -c")
    parser.add_argument("--answer-tokens", type=int, default=60, help="mock answer length")
    parser.add_argument("--tokens-per-s", type=float, default=40, help="mock speed")
    parser.add_argument("--ttft-ms", type=float, default=50, help="mock time to first token")
    args = parser.parse_args()
    mock = {
        "ttft_ms": args.ttft_ms,
        "tokens_per_s": args.tokens_per_s,
        "answer_tokens": args.answer_tokens,
        "timestamps": True,
    }

    common.setup_database()
    from django.conf import settings

    from accounts.models import User
    from arena.catalog.models import standard_params
    from arena.devtools.http_server import free_port

    common.only_mock_models("Bench", mock, supported_params=standard_params())
    user, _ = User.objects.get_or_create(email="bench@arena.local")
    common.verify_email(user)
    job = {
        "cookie": common.session_cookie(user),
        "mock": mock,
        "timeout_s": settings.ARENA["TURN_DEADLINE_S"] + 60,
        "tick_s": settings.ARENA["PACE_TICK_MS"] / 1000,
        "chars": settings.ARENA["PACE_CHARS"],
    }

    queues = f"{os.environ['GENERATION_QUEUE']},{os.environ['CELERY_DEFAULT_QUEUE']}"
    common.purge_queues(queues)
    procs = []
    try:
        workers = [
            common.start_worker(
                queues,
                concurrency=args.worker_concurrency,
                pool=args.worker_pool,
                log=LOGS / f"bench-latency-worker-{i}.log",
                name=f"bench-latency-{i}@%h",
            )
            for i in range(args.workers)
        ]
        procs += workers
        servers = []
        for i in range(args.servers):
            port, log = free_port(), LOGS / f"bench-latency-daphne-{i}.log"
            procs.append(common.start_daphne(port, log))
            servers.append((port, procs[-1], log))
        for port, server, log in servers:
            common.wait_until_serving(port, server, log)
        job["ports"] = [port for port, _, _ in servers]
        measure(args, job, [server for _, server, _ in servers], workers)
    finally:
        for proc in reversed(procs):
            common.stop(proc, timeout=30)


if __name__ == "__main__":
    main()
