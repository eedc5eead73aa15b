"""Added delay per chunk, mock backend -> websocket client, through Redis and a Celery worker.

Not a test: it prints figures. Each mock chunk carries the time it was emitted; the client
notes when that chunk reaches it. The pipeline under test is the real one, as deployed: a Celery
worker (``--worker-pool``, ``--worker-concurrency``; the README's threads, 8 by default) ->
coalescer -> Redis channel layer -> ``--servers`` daphne processes (2) whose BattleConsumer paces
both sides (pacing set wide open, so it never holds text back beyond one tick) -> websocket
frame. The clients run in a process of their own (bench/latency_client.py), battles spread over
the servers in turn. The baseline, measured in the same run and the same client process, reads
the same mock streams directly.

    uv run python bench/battle_latency.py [--battles 1 20 100 200] [--worker-concurrency 8]

Per load it prints the baseline's delays, the pipeline's and what the pipeline adds (its
percentile less the baseline's), the delta frames per second all clients received together, the
CPU seconds per battle of the web processes (both daphnes together) and of the worker (from
/proc, threads and child processes included), and the battles that did not complete.

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

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("GENERATION_MODE", "celery")
# Queues of its own, so no other worker on the same Redis takes this bench's tasks.
os.environ["GENERATION_QUEUE"] = "bench-latency-generation"
os.environ["CELERY_DEFAULT_QUEUE"] = "bench-latency-default"
# Pacing wide open: one tick's worth of delay at most, so the figure is the transport's.
os.environ.setdefault("ARENA_PACE_TICK_MS", "10")
os.environ.setdefault("ARENA_PACE_CHARS", "1000000")
# The bench measures the pipeline, not the rate limits it would otherwise run into.
for _scope in ("USER", "NETWORK"):
    os.environ.setdefault(f"RATELIMIT_BATTLE_START_{_scope}", "")
os.environ.setdefault("PYTHONUNBUFFERED", "1")


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


def row(n: int, job: dict, web: list[subprocess.Popen], worker: subprocess.Popen) -> dict:
    """One load: the baseline, then the battles with the servers' CPU read around them."""
    tag = f"{RUN}-{n}-{time.time():.3f}"
    base = client({**job, "path": "direct", "battles": n, "tag": tag})["delays_ms"]
    before = cpu(web), cpu([worker])
    got = client({**job, "path": "pipeline", "battles": n, "tag": tag})
    time.sleep(0.5)  # the servers' last work on this load (closing sockets, leaving groups)
    after = cpu(web), cpu([worker])
    b, p = figures(base), figures(got["delays_ms"])
    print(f"{n:>7} {'direct':<8} {len(base):>7} {b[0]:>8.1f} {b[1]:>8.1f} {b[2]:>8.1f}")
    print(
        f"{n:>7} {'pipeline':<8} {len(got['delays_ms']):>7} {p[0]:>8.1f} {p[1]:>8.1f} "
        f"{p[2]:>8.1f} {p[0] - b[0]:>8.1f} {p[1] - b[1]:>8.1f} {p[2] - b[2]:>8.1f} "
        f"{got['window_s']:>7.1f} {got['frames'] / got['window_s']:>9.1f} "
        f"{(after[0] - before[0]) / n:>8.3f} "
        f"{(after[1] - before[1]) / n:>10.3f} {got['client_cpu_s'] / n:>10.3f} "
        f"{got['failed']:>6}",
        flush=True,
    )
    return {"n": n, "base": base, **got}


def measure(args: argparse.Namespace, job: dict, web: list, worker: subprocess.Popen) -> None:
    # Warm-up, one battle per server: worker start, connections, first queries.
    warm = client({**job, "path": "pipeline", "battles": len(web), "tag": f"{RUN}-warm"})
    if warm["failed"]:
        print(f"warm-up: {warm['failed']} of {len(web)} battles failed: {warm['failures']}")
    print(HEADER)
    rows = [row(n, job, web, worker) for n in args.battles]
    last = rows[-1]
    if last["delays_ms"] and last["base"]:
        mean = statistics.mean(last["delays_ms"]) - statistics.mean(last["base"])
        print(f"\nmean added at the last load: {mean:.1f} ms")
    for r in rows:
        if r["failures"]:
            print(f"failed at {r['n']} battles: {r['failures']}")
    mock = job["mock"]
    print(
        f"{len(web)} daphne processes; worker -P {args.worker_pool} -c {args.worker_concurrency}; "
        f"pacing tick {os.environ['ARENA_PACE_TICK_MS']} ms, "
        f"{os.environ['ARENA_PACE_CHARS']} chars (wide open); 2 mock streams per battle, "
        f"{mock['answer_tokens']} tokens at {mock['tokens_per_s']} tokens/s after "
        f"{mock['ttft_ms']} ms; +: the pipeline's figure less the baseline's; wall s: first "
        "start to last frame; frames/s: delta frames all clients received over that time; "
        "s/b: CPU seconds per battle (web: both daphnes together)"
    )
    print(f"logs: {LOGS}/bench-latency-*.log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, nargs="+", default=[1, 20, 100, 200])
    parser.add_argument("--servers", type=int, default=2, help="daphne processes")
    parser.add_argument("--worker-pool", default="threads", help="Celery pool (-P)")
    parser.add_argument("--worker-concurrency", type=int, default=8, help="Celery -c")
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
    }

    queues = f"{os.environ['GENERATION_QUEUE']},{os.environ['CELERY_DEFAULT_QUEUE']}"
    common.purge_queues(queues)
    procs = []
    try:
        worker = common.start_worker(
            queues,
            concurrency=args.worker_concurrency,
            pool=args.worker_pool,
            log=LOGS / "bench-latency-worker.log",
        )
        procs.append(worker)
        servers = []
        for i in range(args.servers):
            port, log = free_port(), LOGS / f"bench-latency-daphne-{i}.log"
            procs.append(common.start_daphne(port, log))
            servers.append((port, procs[-1], log))
        for port, server, log in servers:
            common.wait_until_serving(port, server, log)
        job["ports"] = [port for port, _, _ in servers]
        measure(args, job, [server for _, server, _ in servers], worker)
    finally:
        for proc in reversed(procs):
            common.stop(proc, timeout=30)


if __name__ == "__main__":
    main()
