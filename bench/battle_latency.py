"""What a battle costs, mock backend -> websocket client, through Redis and a Celery worker.

Not a test: it prints figures. Each mock chunk carries the time it was emitted; the client
notes when that chunk reaches it. The pipeline under test is the real one, as deployed: Celery
workers (``--workers`` processes, 1 by default, each ``-P threads -c 100`` as the README
recommends) -> coalescer -> answer streams on Redis -> ``--servers`` daphne processes (2), each
pacing all its battles from one schedule -> websocket frame. Pacing is set wide open (a 10 ms
tick, no limit on characters), so the only waits are the tick and blind pacing's own: the side
ahead waits for the other. The clients run in a process of their own (bench/latency_client.py),
all battles of a load starting at once, spread over the servers in turn, each with a rater of
its own (a rater's new battle abandons their previous one).

    uv run python bench/battle_latency.py [--battles 1 20 100 200] [--workers 1]
                                          [--profile var/profiles]

Per load it prints five rows, measured in the same run and the same client process: "raw",
the same mock streams read directly (the baseline); "ideal", what ideal blind pacing adds to
them (a pacer with no tick and no transport that releases a character on one side as soon as
the other side has produced as many, from the emit stamps of both sides); "rules", what the
Pacer's own rules add (the pipeline's battles' text fed, chunk by chunk at its emit stamp, to
the Pacer the servers make, ticked on a clock of its own, no transport: blind pacing's tick,
name holds and lone-pane rule, which ideal pacing has none of); "paced", the same mock streams
through the same Pacer and tick live in the client process, no transport; and the pipeline.
Each row gives what it adds over the raw stream, over ideal pacing and over the Pacer's rules
(p50, p99, max): the pipeline's "+rules" is what transport, scheduling and load add on top of
the pacing rules the product keeps. The pipeline's row adds
start -> "battle" frame (p50, p99, max: how long a rater waits for the battle to begin), the
whole turn's p50 (start to "turn_complete"), the delta frames per second all clients received
together, the queries per start (counted in the web processes, bench/counted_asgi.py), the CPU
seconds per battle of the web processes and of the workers (from /proc, threads and child
processes included), and the battles that did not complete. Then the issue 28 targets, met or
missed; the delay over ideal pacing is judged on the text released while both panes show (the
"shared" column), where ideal pacing is blind: once one pane is shown whole it would release the
other at its model's own speed, which tells the models apart. Starts are counted against their
rate limits, as in production, with limits no load here reaches. ``--profile DIR``: py-spy
samples every web and worker process during each load and the top of each profile is printed
(bench/stacks.py); the raw stacks stay in DIR.

The bench runs on PostgreSQL (DATABASE_URL, default the bench's own database arena_bench,
created if missing and migrated; the bench writes only its own rows) and Redis (REDIS_URL,
default database 9 of 127.0.0.1:6379, so it shares no keys with the tests' database 0), on
Celery queues of its own, which it purges before it starts; nothing else is flushed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common, stacks  # noqa: E402

RUN = uuid.uuid4().hex[:8]
LOGS = ROOT / "var"

common.celery_environment(name="latency", database="arena_bench", redis_db=9)
# Pacing wide open: one tick's worth of delay at most, so the figure is the transport's.
os.environ.setdefault("ARENA_PACE_TICK_MS", "10")
os.environ.setdefault("ARENA_PACE_CHARS", "1000000")
# Every start counted against its rate limits, as in production, but limits no crowd here
# reaches: every client is on this machine's one network.
for _scope in ("USER", "NETWORK"):
    os.environ.setdefault(f"RATELIMIT_BATTLE_START_{_scope}", "100000/m")

# Where bench/counted_asgi.py adds up the web processes' queries per start (its KEY; not
# imported, as importing it sets up the web application).
COUNTED_KEY = "bench:latency:start-queries"

# Issue 28's targets: (battles, over ideal p99 ms, start -> battle frame p99 s); CPU per battle
# (web + worker) at 100 battles.
TARGETS = {20: (25.0, 0.3), 100: (50.0, 1.0), 200: (None, 2.0)}
CPU_TARGET = (100, 0.04)


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


def figures(values: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max; NaN for none."""
    if not values:
        return (float("nan"),) * 3
    return common.percentile(values, 0.5), common.percentile(values, 0.99), max(values)


HEADER = (
    f"{'battles':>7} {'path':<8} {'chunks':>6} | {'+raw p50':>8} {'p99':>6} {'max':>6} | "
    f"{'+ideal p50':>10} {'p99':>6} {'max':>6} | {'shared p50':>10} {'p99':>6} | "
    f"{'+rules p50':>10} {'p99':>6} {'max':>6} | "
    f"{'start p50 s':>11} {'p99':>5} {'max':>5} | "
    f"{'turn p50 s':>10} {'frames/s':>8} {'q/start':>7} {'web s/b':>7} {'worker s/b':>10} "
    f"{'client s/b':>10} {'failed':>6}"
)


def line(n: int, path: str, chunks: int, over_raw: list[float], got: dict) -> str:
    """The delays' columns: over the raw stream, over ideal pacing, over ideal pacing while
    both panes are shown together, and over the Pacer's own rules (``got``'s "over_ideal_ms",
    "shared_ms" and "over_rules_ms")."""
    r, i = figures(over_raw), figures(got.get("over_ideal_ms", []))
    s, u = figures(got.get("shared_ms", [])), figures(got.get("over_rules_ms", []))
    return (
        f"{n:>7} {path:<8} {chunks:>6} | {r[0]:>8.1f} {r[1]:>6.1f} {r[2]:>6.1f} | "
        f"{i[0]:>10.1f} {i[1]:>6.1f} {i[2]:>6.1f} | {s[0]:>10.1f} {s[1]:>6.1f} | "
        f"{u[0]:>10.1f} {u[1]:>6.1f} {u[2]:>6.1f}"
    )


def start_queries(reset: bool = False) -> float:
    """Queries per start, counted by the web processes (bench/counted_asgi.py) since the last
    reset; NaN for no start."""
    from arena.core.redis_loop import sync_redis

    client = sync_redis(os.environ["REDIS_URL"], decode=True)
    if reset:
        client.delete(COUNTED_KEY)
        return float("nan")
    got = client.hgetall(COUNTED_KEY)
    starts = int(got.get("starts", 0))
    return int(got.get("queries", 0)) / starts if starts else float("nan")


def row(n: int, job: dict, web: list, workers: list, profile: Path | None) -> dict:
    """One load: the baselines, then the battles with the servers' CPU read around them."""
    tag = f"{RUN}-{n}-{time.time():.3f}"
    base = client({**job, "path": "direct", "battles": n, "tag": tag})
    paced = client({**job, "path": "paced", "battles": n, "tag": tag})
    start_queries(reset=True)
    spies = stacks.spies_start(profile, str(n), web, workers) if profile else []
    before = cpu(web), cpu(workers)
    got = client({**job, "path": "pipeline", "battles": n, "tag": tag})
    time.sleep(0.5)  # the servers' last work on this load (closing sockets)
    after = cpu(web), cpu(workers)
    for spy in spies:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    web_s, worker_s = (after[0] - before[0]) / n, (after[1] - before[1]) / n
    queries = start_queries()
    raw = figures(base["delays_ms"])
    ideal = base["ideal_ms"]

    def over_raw(delays: list[float]) -> list[float]:
        return [d - raw[0] for d in delays]  # less the raw stream's median (about 0)

    print(line(n, "raw", len(base["delays_ms"]), over_raw(base["delays_ms"]), {}), flush=True)
    print(line(n, "ideal", len(ideal), ideal, {"over_ideal_ms": [0.0] * len(ideal)}), flush=True)
    rules = got["rules_over_raw_ms"]
    print(
        line(
            n,
            "rules",
            len(rules),
            rules,
            {
                "over_ideal_ms": got["rules_over_ideal_ms"],
                "shared_ms": got["rules_shared_ms"],
                "over_rules_ms": [0.0] * len(rules),
            },
        ),
        flush=True,
    )
    print(
        line(n, "paced", len(paced["delays_ms"]), over_raw(paced["delays_ms"]), paced), flush=True
    )
    st = figures(got["start_s"])
    turn = figures(got["turn_s"])[0]
    head = line(n, "pipeline", len(got["delays_ms"]), over_raw(got["delays_ms"]), got)
    print(
        f"{head}"
        f" | {st[0]:>11.2f} {st[1]:>5.2f} {st[2]:>5.2f} | {turn:>10.2f} "
        f"{got['frames'] / got['window_s']:>8.0f} {queries:>7.1f} {web_s:>7.3f} {worker_s:>10.3f} "
        f"{got['client_cpu_s'] / n:>10.3f} {got['failed']:>6}",
        flush=True,
    )
    if profile:
        for kind in ("web", "worker"):
            print(f"profile, {kind} processes at {n} battles:")
            print(stacks.top(sorted(profile.glob(f"{kind}-{n}-*.txt")), 12), flush=True)
    return {
        "n": n,
        "over_ideal_p99": figures(got["over_ideal_ms"])[1],
        "shared_p99": figures(got["shared_ms"])[1],
        "settled": figures(got["settled_ms"])[:2],
        "settled_share": len(got["settled_ms"]) / max(1, len(got["shared_ms"])),
        "paced_shared_p99": figures(paced["shared_ms"])[1],
        "over_rules": figures(got["over_rules_ms"])[:2],
        "rules_over_ideal_p99": figures(got["rules_over_ideal_ms"])[1],
        "start_p99": st[1],
        "cpu": web_s + worker_s,
        **got,
    }


def targets(rows: list[dict]) -> None:
    """Issue 28's targets, for the loads that were run."""
    print("\ntargets (issue 28):")
    for r in rows:
        ideal_p99, start_p99 = TARGETS.get(r["n"], (None, None))
        if ideal_p99 is not None:
            # Ideal pacing is blind only while both panes show: once one model's answer is
            # shown whole, it would release the other's at that model's own speed, a timing
            # that tells the two apart, where blind pacing keeps the pace both had. The target
            # is judged where ideal pacing is blind; the whole text's figure is printed beside.
            ok = r["shared_p99"] <= ideal_p99
            print(
                f"  {r['n']:>3} battles: over ideal blind pacing (both panes shown together) "
                f"p99 {r['shared_p99']:.1f} ms (<= {ideal_p99:g}) {common.verdict(ok)} (blind "
                f"pacing alone, no transport: {r['paced_shared_p99']:.1f} ms); over the whole "
                f"text, one pane kept at pace included, {r['over_ideal_p99']:.1f} ms"
            )
            print(
                f"  {r['n']:>3} battles: of that, once every battle had begun "
                f"({r['settled_share']:.0%} of the text): p50 {r['settled'][0]:.1f} / p99 "
                f"{r['settled'][1]:.1f} ms (the rest arrived while starts still competed)"
            )
            print(
                f"  {r['n']:>3} battles: the Pacer's own rules add p99 "
                f"{r['rules_over_ideal_p99']:.1f} ms over ideal pacing; the pipeline adds over "
                f"those rules p50 {r['over_rules'][0]:.1f} / p99 {r['over_rules'][1]:.1f} ms"
            )
        if start_p99 is not None:
            ok = r["start_p99"] <= start_p99
            print(
                f"  {r['n']:>3} battles: start -> battle p99 {r['start_p99']:.2f} s "
                f"(<= {start_p99:g}) {common.verdict(ok)}"
            )
        if r["n"] == CPU_TARGET[0]:
            ok = r["cpu"] <= CPU_TARGET[1]
            print(
                f"  {r['n']:>3} battles: CPU per battle {r['cpu']:.3f} s (<= {CPU_TARGET[1]:g}) "
                f"{common.verdict(ok)}"
            )
        print(f"  {r['n']:>3} battles: {r['failed']} failed {common.verdict(r['failed'] == 0)}")


def measure(args: argparse.Namespace, job: dict, web: list, workers: list) -> None:
    # Warm-up, one battle per server: worker start, connections, first queries.
    warm = client({**job, "path": "pipeline", "battles": len(web), "tag": f"{RUN}-warm"})
    if warm["failed"]:
        print(f"warm-up: {warm['failed']} of {len(web)} battles failed: {warm['failures']}")
    print(HEADER, flush=True)
    rows = [row(n, job, web, workers, args.profile) for n in args.battles]
    for r in rows:
        if r["failures"]:
            print(f"failed at {r['n']} battles: {r['failures']}")
    targets(rows)
    mock = job["mock"]
    print(
        f"\n{len(web)} daphne processes; {len(workers)} worker process(es) -P {args.worker_pool} "
        f"-c {args.worker_concurrency}; DATABASE_CONN_MAX_AGE "
        f"{os.environ['DATABASE_CONN_MAX_AGE']}; pacing tick {os.environ['ARENA_PACE_TICK_MS']} "
        f"ms, {os.environ['ARENA_PACE_CHARS']} chars (wide open); 2 mock streams per battle, "
        f"{mock['answer_tokens']} tokens at {mock['tokens_per_s']} tokens/s after "
        f"{mock['ttft_ms']} ms. Delays in ms: +raw, over the raw stream (less its median); "
        "+ideal, over ideal blind pacing (no tick, no transport: a character released on one "
        "side once the other has produced as many); raw: the mock streams read directly; "
        "shared: +ideal of the text released while both panes are shown together (after one "
        "side's whole answer is shown, blind pacing keeps the other at the pace both had, "
        "which the ideal pacer does not: that share is blind pacing's own, see the paced row); "
        "ideal: ideal pacing itself; +rules: over the Pacer's own rules (the same Pacer, fed "
        "each chunk at its emit stamp, ticked on its own clock, no transport); rules: those "
        "rules themselves; paced: the same streams through the same Pacer and tick "
        "in the client process, no transport. start: sending 'start' to the 'battle' frame; "
        "turn: to 'turn_complete'; frames/s: delta frames all clients received, first start "
        "to last frame; q/start: queries per start in the web processes; s/b: CPU seconds per "
        "battle (web: all daphnes together; worker: all workers together)"
    )
    print(f"logs: {LOGS}/bench-latency-*.log")


def raters(n: int) -> list[str]:
    """Session cookies of ``n`` raters of the bench's own, each able to rate."""
    from accounts.models import User

    cookies = []
    for i in range(n):
        user, _ = User.objects.get_or_create(email=f"bench-{i}@arena.local")
        common.verify_email(user)
        cookies.append(common.session_cookie(user))
    return cookies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, nargs="+", default=[1, 20, 100, 200])
    parser.add_argument("--worker-pool", default="threads", help="Celery pool (-P)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes")
    parser.add_argument("--worker-concurrency", type=int, default=100, help="Celery -c")
    parser.add_argument("--answer-tokens", type=int, default=60, help="mock answer length")
    parser.add_argument("--tokens-per-s", type=float, default=40, help="mock speed")
    parser.add_argument("--ttft-ms", type=float, default=50, help="mock time to first token")
    common.add_server_options(parser)
    args = parser.parse_args()
    mock = {
        "ttft_ms": args.ttft_ms,
        "tokens_per_s": args.tokens_per_s,
        "answer_tokens": args.answer_tokens,
        "timestamps": True,
    }

    common.setup_database()
    from django.conf import settings

    from arena.catalog.models import standard_params
    from arena.devtools.http_server import free_port
    from arena.integrity.selectors import identity_terms

    common.only_mock_models("Bench", mock, supported_params=standard_params())
    job = {
        "cookies": raters(max([*args.battles, args.servers])),
        "mock": mock,
        "timeout_s": settings.ARENA["TURN_DEADLINE_S"] + 60,
        "tick_s": settings.ARENA["PACE_TICK_MS"] / 1000,
        "chars": settings.ARENA["PACE_CHARS"],
        # The names the servers' pacers hold back and redact (draw_cache's, from every model).
        "terms": list(identity_terms()),
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
            # arena.asgi's application, each start's queries counted (bench/counted_asgi.py)
            daphne = ["daphne", "-b", "127.0.0.1", "-p", str(port)]
            procs.append(common.start([*daphne, "bench.counted_asgi:application"], log))
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
