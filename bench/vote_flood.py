"""Vote flood: many signed-in raters start battles and vote as fast as they can.

Not a test: it prints what the rate limits let through and checks that every request is
accounted for. It starts its own servers (``--servers`` daphne processes on free ports on
127.0.0.1, so the counts must hold across processes) and a Celery worker, on Redis and a bench
PostgreSQL database (created if missing and migrated), seeds two fast mock models and fresh
raters with verified addresses, then opens one websocket per rater. Each rater tries
``--battles`` battles in a row, with no pause: start, wait for both answers, vote. A refused
start is counted and the next one tried at once.

    uv run python bench/vote_flood.py [--clients 40] [--battles 25] [--networks 1] [--servers 2]
                                      [--profile var/profiles]

Every rater claims an address on one of ``--networks`` /24 networks through X-Forwarded-For
(the servers are told to trust it, as they would behind a proxy), so the per-network limits
apply as they would to that many offices; by default all raters share one network, like a
bot farm on one host. Limits are the servers' settings, read from the
environment; the vote limits default lower here than in production (``RATELIMIT_VOTE_USER``
10/m, ``RATELIMIT_VOTE_NETWORK`` 100/m), so a flood bounded by the battle-start limits still
reaches them. Raters and networks are new for every run, so runs do not share counts; the
worker listens on queues of the bench's own, so no other worker on the same Redis takes its
tasks. DATABASE_URL and REDIS_URL, when set, name the database and Redis db it uses instead of
its own (``arena_bench_flood``, db 0).

Besides the cycles per second it prints the CPU seconds per cycle of the web processes and of
the worker (all their threads; a figure the machine's other load moves less than the rate), and
with ``--profile DIR`` py-spy samples each of them during the flood and the top of each profile
is printed (bench/stacks.py); the raw stacks stay in DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common, stacks  # noqa: E402
from bench.ws_client import connect  # noqa: E402

RUN = uuid.uuid4().hex[:8]

common.celery_environment(name="flood", database="arena_bench_flood", redis_db=0)
os.environ["TRUSTED_PROXY_HEADER"] = "HTTP_X_FORWARDED_FOR"
os.environ["TRUSTED_PROXY_COUNT"] = "1"
os.environ.setdefault("RATELIMIT_VOTE_USER", "10/m")
os.environ.setdefault("RATELIMIT_VOTE_NETWORK", "100/m")
# Fast pacing: a battle's length is the generation path's, not the reading speed's.
os.environ.setdefault("ARENA_PACE_TICK_MS", "5")
os.environ.setdefault("ARENA_PACE_CHARS", "60")

MOCK = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 20}
ACTIONS = ("start", "vote")


@dataclass
class Tally:
    """What the clients sent and what came back, per action."""

    sent: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)
    limited: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    error_codes: Counter = field(default_factory=Counter)
    voided: int = 0
    voted_battles: set[str] = field(default_factory=set)
    limited_battles: set[str] = field(default_factory=set)
    # Seconds per accepted action: start sent -> turn complete, vote sent -> revealed.
    took: dict[str, list[float]] = field(default_factory=lambda: {a: [] for a in ACTIONS})


# Data ---------------------------------------------------------------------------------------


def seed(n_clients: int) -> list[Any]:
    """Two fast mock models (the only active ones) and this run's raters, verified."""
    common.only_mock_models("Flood", MOCK)
    return common.raters(f"flood-{RUN}", n_clients)


def networks(count: int) -> list[str]:
    """``count`` distinct /24s from 198.18.0.0/15 (set aside for benchmarks), new each run."""
    picks = random.sample(range(512), count)
    return [f"198.{18 + p // 256}.{p % 256}" for p in picks]


# Clients ------------------------------------------------------------------------------------


def record_refusal(tally: Tally, action: str, frame: dict) -> None:
    if frame.get("code") == "rate_limited":
        tally.limited[action] += 1
    else:
        tally.errors[action] += 1
        tally.error_codes[f"{action}:{frame.get('code')}"] += 1


async def rater(
    n: int, port: int, headers: dict[str, str], battles: int, deadline: float, tally: Tally
) -> None:
    """One rater on one websocket. A reply lost with its connection counts as an error."""
    try:
        sock = await connect(port, headers)
    except (TimeoutError, OSError) as exc:
        tally.error_codes[f"connect:{type(exc).__name__}"] += 1
        return
    try:
        for b in range(battles):
            if time.monotonic() > deadline:
                break
            tally.sent["start"] += 1
            sent = time.monotonic()
            sock.send({"action": "start", "prompt": f"Flood {RUN} rater {n} battle {b}: why?"})
            try:
                end = await sock.until("turn_complete", "void", "error")
            except (TimeoutError, ConnectionError) as exc:
                tally.errors["start"] += 1
                tally.error_codes[f"start:{type(exc).__name__}"] += 1
                return
            if end["type"] == "error":
                record_refusal(tally, "start", end)
                continue
            tally.accepted["start"] += 1
            tally.took["start"].append(time.monotonic() - sent)
            if end["type"] == "void":
                tally.voided += 1
                continue
            tally.sent["vote"] += 1
            sent = time.monotonic()
            sock.send({"action": "vote", "choice": random.choice(["a", "b", "tie", "both_bad"])})
            try:
                reply = await sock.until("revealed", "error")
            except (TimeoutError, ConnectionError) as exc:
                tally.errors["vote"] += 1
                tally.error_codes[f"vote:{type(exc).__name__}"] += 1
                return
            if reply["type"] == "revealed":
                tally.accepted["vote"] += 1
                tally.took["vote"].append(time.monotonic() - sent)
                tally.voted_battles.add(reply["battle"])
            else:
                record_refusal(tally, "vote", reply)
    finally:
        await sock.close()


async def flood(
    ports: list[int], clients: list[dict[str, str]], battles: int, limit_s: float
) -> Tally:
    tally = Tally()
    deadline = time.monotonic() + limit_s
    await asyncio.gather(
        *(
            rater(n, ports[n % len(ports)], headers, battles, deadline, tally)
            for n, headers in enumerate(clients)
        )
    )
    return tally


# Report -------------------------------------------------------------------------------------


def busiest_windows(users: list[Any], n_networks: int) -> dict[str, tuple[int, str]]:
    """Per action, the most writes one network got in one window of its network limit. Read
    from the rows' times, which trail the check by milliseconds: a write just after a window
    ends counts in the next one, so this is close to, not exactly, what the limiter counted."""
    from django.conf import settings

    from accounts.ratelimits import parse_rate
    from arena.records.models import Battle, Vote

    network = {user.pk: i % n_networks for i, user in enumerate(users)}
    out = {}
    for action, model in (("battle_start", Battle), ("vote", Vote)):
        rate = settings.RATELIMITS[action]["network"]
        if rate is None:
            continue
        _, period = parse_rate(rate)
        rows = model.objects.filter(rater__in=users).values_list("rater_id", "created_at")
        windows = Counter((network[r], int(at.timestamp() // period)) for r, at in rows)
        out[action] = (max(windows.values(), default=0), rate)
    return out


def cpu(procs: list) -> float:
    return sum(common.cpu_seconds(p.pid) for p in procs)


def report(
    tally: Tally,
    users: list[Any],
    elapsed: float,
    args: argparse.Namespace,
    cpu_s: tuple[float, float],
) -> bool:
    from django.conf import settings

    from arena.integrity.models import VoteFlag
    from arena.records.models import Battle, Vote

    limits = {k: settings.RATELIMITS[k] for k in ("battle_start", "vote")}
    print(
        f"\n{args.clients} raters on {args.networks} networks and {args.servers} servers, up to "
        f"{args.battles} battles each, {elapsed:.1f} s; limits {limits}"
    )
    print(
        f"{'action':<8} {'sent':>6} {'accepted':>9} {'limited':>8} {'errors':>7} "
        f"{'p50 s':>6} {'p99 s':>6}"
    )
    for action in ACTIONS:
        took = tally.took[action] or [float("nan")]
        print(
            f"{action:<8} {tally.sent[action]:>6} {tally.accepted[action]:>9} "
            f"{tally.limited[action]:>8} {tally.errors[action]:>7} "
            f"{common.percentile(took, 0.5):>6.2f} {common.percentile(took, 0.99):>6.2f}"
        )
    print("(p50, p99: an accepted start to its turn complete, a vote to its reveal)")
    print(
        f"cycles/s: {tally.accepted['vote'] / elapsed:.1f} (start, both answers, vote accepted; "
        f"{tally.accepted['vote']} in {elapsed:.1f} s)"
    )
    cycles = max(1, tally.accepted["vote"])
    print(
        f"CPU s per cycle: web {cpu_s[0] / cycles:.4f}, worker {cpu_s[1] / cycles:.4f} "
        f"(all web processes together; the worker with its threads)"
    )
    if tally.voided:
        print(f"void battles (accepted, not votable): {tally.voided}")
    if tally.error_codes:
        print(f"errors by code: {dict(tally.error_codes)}")

    votes = Vote.objects.filter(rater__in=users)
    flags = VoteFlag.objects.filter(vote__in=votes, action=VoteFlag.Action.FLAG)
    flagged_battles = {str(b) for b in flags.values_list("vote__battle_id", flat=True)}
    per_reason = dict(Counter(flags.values_list("reason", flat=True)).most_common())
    print(
        f"votes: {tally.accepted['vote']} accepted, {tally.limited['vote']} rate-limited, "
        f"{len(flagged_battles)} flagged ({per_reason or 'no flags'})"
    )

    busiest = busiest_windows(users, args.networks)
    print(
        "most accepted on one network in one window (check: at most the limit): "
        + ", ".join(f"{action} {n} (limit {rate})" for action, (n, rate) in busiest.items())
    )

    db_battles = Battle.objects.filter(rater__in=users).count()
    db_voted = {str(b) for b in votes.values_list("battle_id", flat=True)}
    starts, votes_sent = tally.sent["start"], tally.sent["vote"]
    accepted, lost = tally.accepted["start"], tally.errors["start"]
    checks = {
        "every start accounted for (accepted + limited + errors = sent)": starts
        == accepted + tally.limited["start"] + lost,
        "every vote accounted for (accepted + limited + errors = sent)": votes_sent
        == tally.accepted["vote"] + tally.limited["vote"] + tally.errors["vote"],
        # A start whose reply was lost with its connection may or may not have been written.
        f"battles in the database ({db_battles}) = accepted starts (+ lost replies)": accepted
        <= db_battles
        <= accepted + lost,
        f"votes in the database ({len(db_voted)}) = accepted votes": db_voted
        == tally.voted_battles,
        "flagged votes are a subset of accepted votes": flagged_battles <= tally.voted_battles,
    }
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    passed = all(checks.values())
    print("PASS" if passed else "FAIL")
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--battles", type=int, default=25, help="battles each rater tries")
    parser.add_argument("--networks", type=int, default=1, help="/24s the raters are spread over")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds, then stop")
    common.add_server_options(parser)
    args = parser.parse_args()

    common.setup_database()
    from arena.devtools.http_server import free_port

    users = seed(args.clients)
    nets = networks(args.networks)
    clients = [
        {
            "Cookie": common.session_cookie(user),
            "X-Forwarded-For": f"{nets[i % len(nets)]}.{10 + i // len(nets)}",
        }
        for i, user in enumerate(users)
    ]

    ports = [free_port() for _ in range(args.servers)]
    logs = ROOT / "var"
    worker_log = logs / "bench-flood-worker.log"
    queues = f"{os.environ['GENERATION_QUEUE']},{os.environ['CELERY_DEFAULT_QUEUE']}"
    common.purge_queues(queues)
    procs, spies = [], []
    try:
        procs.append(common.start_worker(queues, concurrency=100, log=worker_log, heartbeat=False))
        worker = procs[:1]
        servers = []
        for i, port in enumerate(ports):
            log = logs / f"bench-flood-daphne-{i}.log"
            procs.append(common.start_daphne(port, log))
            servers.append((port, procs[-1], log))
        for port, server, log in servers:
            common.wait_until_serving(port, server, log)
        web = [server for _, server, _ in servers]
        if args.profile:
            spies = stacks.spies_start(args.profile, "flood", web, worker)
        before = cpu(web), cpu(worker)
        began = time.monotonic()
        tally = asyncio.run(flood(ports, clients, args.battles, args.time_limit))
        elapsed = time.monotonic() - began
        cpu_s = cpu(web) - before[0], cpu(worker) - before[1]
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        for proc in reversed(procs):
            common.stop(proc)
    print(f"logs: {logs}/bench-flood-*.log")
    passed = report(tally, users, elapsed, args, cpu_s)
    if args.profile:
        for kind in ("web", "worker"):
            print(f"profile, {kind} processes:")
            print(stacks.top(sorted(args.profile.glob(f"flood-{kind}-*.txt")), 15), flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
