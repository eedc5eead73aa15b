"""Faults, counted: votes and battles through real faults of the app's real processes.

Not a test (tests/faults/ asserts the behaviour): it prints, per fault, votes sent, accepted (the
client got the reveal), stored, lost and duplicated, the seconds from the fault to the first
success after it, and what else it saw (battles stranded, the worker's exit).

It starts everything it breaks: a PostgreSQL cluster (``initdb``, as the ``postgres`` user) and a
Redis server of its own on free ports, the app migrated as the owner and run as a role that does
not own the tables, daphne, a Celery worker and beat; never the shared servers. The client is
``arena.devtools.rater.RaterSocket``, which retries as the page does (``unavailable`` with
backoff, a dropped socket reopened, a vote always naming its battle).

    uv run python bench/faults.py [--votes 30] [--only web,redis,postgres,worker,generation]

Faults:
- web: ``kill -9`` of daphne with every vote sent and none answered, then a restart;
- redis: ``kill -9`` of Redis halfway through the votes, then a fresh one on the same port;
- postgres: ``kill -9`` of PostgreSQL halfway through the votes, up again 2 s later;
- worker: ``kill -9`` of the worker mid-answer, a new one started (as its supervisor would);
  seconds until the battle is void and said so;
- generation: PostgreSQL down 2.5 s, then Redis restarted, while battles generate: how many
  are answered in full, how many fail (their battles void, and said so), how many are still
  open a minute later (stranded), and whether the worker is still up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")

from arena.devtools.processes import (  # noqa: E402
    APP_ROLE,
    AppStack,
    PostgresCluster,
    RedisServer,
    database_create,
)
from arena.devtools.rater import RaterSocket  # noqa: E402

LOGS = ROOT / "var"
SEED = """
from allauth.account.models import EmailAddress
from django.conf import settings
from django.test import Client
from accounts.models import User
from arena.catalog.models import ModelEntry
for name, mid in (("Bench Fault A", "bench-fault-a"), ("Bench Fault B", "bench-fault-b")):
    ModelEntry.objects.create(public_name=name, model_id=mid, backend="mock",
        backend_settings=BACKEND, supported_params=["temperature", "top_p", "max_tokens"])
user = User.objects.create_user("faults@example.com", "bench-password-1234")
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
User.objects.filter(pk=user.pk).update(terms_version=settings.TERMS["VERSION"])
client = Client()
client.force_login(user)
name = settings.SESSION_COOKIE_NAME
print("COOKIE", f"{name}={client.cookies[name].value}")
"""
FAST = {"ttft_ms": 0, "tokens_per_s": 0, "answer_tokens": 30}


@dataclass
class Row:
    fault: str
    sent: int = 0
    accepted: int = 0
    stored: int = 0
    lost: int = 0
    duplicated: int = 0
    recovery_s: float | None = None
    note: str = ""


class Bench:
    def __init__(self) -> None:
        self.cluster = PostgresCluster()
        self.redis = RedisServer()
        self.stack: AppStack | None = None
        self.cookie = ""

    def start(self, backend: dict) -> None:
        self.cluster.init()
        self.cluster.start()
        env = dict(os.environ)
        env.update(
            GENERATION_MODE="celery",
            ARENA_PACE_TICK_MS="5",
            ARENA_PACE_CHARS="60",
            ARENA_TURN_DEADLINE_S="60",
            PYTHONUNBUFFERED="1",
        )
        # The bench counts faults, not rate limits: none of its votes may be refused, but each
        # is still counted on Redis, as in production.
        for action in ("VOTE", "BATTLE_START", "FOLLOW_UP"):
            env.update(
                {f"RATELIMIT_{action}_USER": "10000/m", f"RATELIMIT_{action}_NETWORK": "10000/m"}
            )
        seed = SEED.replace("BACKEND", repr(backend))
        printed = database_create(self.cluster, env, seed=seed)
        self.cookie = printed.split("COOKIE", 1)[1].strip()
        self.redis.start()
        env.update(REDIS_URL=self.redis.url, DATABASE_URL=self.cluster.url("arena", APP_ROLE))
        self.stack = AppStack(env, self.redis, logs=LOGS, name="bench-faults").start()

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()
        self.cluster.stop()

    def rater(self) -> RaterSocket:
        return RaterSocket(self.stack.daphne.url, self.cookie, patience_s=90)

    def votes_stored(self, battle_ids: list[str]) -> dict[str, int]:
        import psycopg

        with psycopg.connect(self.cluster.url("arena")) as conn:
            rows = conn.execute(
                "SELECT battle_id::text, count(*) FROM arena_vote WHERE battle_id::text = ANY(%s)"
                " GROUP BY battle_id",
                [battle_ids],
            )
            return dict(rows.fetchall())

    def answer_outcomes(self, battle_ids: list[str]) -> dict[str, str]:
        """Per battle: "complete" (both answers ok), "failed" (one ended otherwise) or
        "open" (one still pending or running)."""
        import psycopg

        with psycopg.connect(self.cluster.url("arena")) as conn:
            rows = conn.execute(
                "SELECT t.battle_id::text, a.status FROM arena_answer a"
                " JOIN arena_turn t ON t.id = a.turn_id WHERE t.battle_id::text = ANY(%s)",
                [battle_ids],
            ).fetchall()
        outcome: dict[str, str] = dict.fromkeys(battle_ids, "complete")
        for battle_id, status in rows:
            if status in ("pending", "running"):
                outcome[battle_id] = "open"
            elif status != "ok" and outcome[battle_id] != "open":
                outcome[battle_id] = "failed"
        return outcome

    def set_backend(self, backend: dict) -> None:
        import psycopg

        with psycopg.connect(self.cluster.url("arena")) as conn:
            conn.execute("UPDATE arena_modelentry SET backend_settings = %s", [json.dumps(backend)])


async def ready_battles(rater: RaterSocket, n: int) -> list[str]:
    ids = []
    for i in range(n):
        battle_id, last = await rater.battle(f"Fault bench question {i}: is {i * 7 + 3} prime?")
        if last["type"] != "turn_complete":
            raise RuntimeError(f"battle {i} did not complete: {last}")
        ids.append(battle_id)
    return ids


def tally_votes(bench: Bench, row: Row, ids: list[str], replies: list[dict], fault_at: float,
                rater: RaterSocket) -> Row:  # fmt: skip
    stored = bench.votes_stored(ids)
    row.sent = len(ids)
    row.accepted = sum(1 for r in replies if r.get("type") == "revealed")
    row.stored = sum(min(n, 1) for n in stored.values())
    row.lost = sum(1 for battle_id in ids if battle_id not in stored)
    row.duplicated = sum(n - 1 for n in stored.values() if n > 1)
    if rater.tally.recovered is not None:
        row.recovery_s = rater.tally.recovered - fault_at
    row.note = f"{rater.tally.unavailable} unavailable, {rater.tally.reconnects} reconnects"
    return row


async def fault_web(bench: Bench, votes: int, name: str) -> Row:
    async with bench.rater() as rater:
        ids = await ready_battles(rater, votes)
        for battle_id in ids:
            await rater.sock.send(
                json.dumps({"action": "vote", "battle": battle_id, "choice": "a"})
            )
        bench.stack.daphne.kill()
        fault_at = time.monotonic()
        await asyncio.to_thread(bench.stack.daphne.start)
        replies = [await rater.vote(battle_id, "a") for battle_id in ids]
    return tally_votes(bench, Row(name), ids, replies, fault_at, rater)


async def fault_mid_votes(bench: Bench, votes: int, name: str, strike) -> Row:
    """Half the votes, then ``strike()`` (it returns once the fault has struck, with what
    mends it, if anything, still to await), then the other half, each sent until answered."""
    async with bench.rater() as rater:
        ids = await ready_battles(rater, votes)
        half = votes // 2
        replies = [await rater.vote(battle_id, "b") for battle_id in ids[:half]]
        mending = await strike()
        fault_at = time.monotonic()
        replies += [await rater.vote(battle_id, "b") for battle_id in ids[half:]]
        if mending is not None:
            await mending
    return tally_votes(bench, Row(name), ids, replies, fault_at, rater)


async def redis_restart(bench: Bench) -> None:
    await asyncio.to_thread(bench.redis.restart)


async def postgres_outage(bench: Bench) -> asyncio.Future:
    await asyncio.to_thread(bench.cluster.kill)
    return asyncio.get_running_loop().run_in_executor(None, restart_after, bench.cluster, 2)


async def fault_worker(bench: Bench, name: str) -> Row:
    bench.set_backend({**FAST, "tokens_per_s": 8, "answer_tokens": 40})
    row = Row(name)
    async with bench.rater() as rater:
        await rater.sock.send(json.dumps({"action": "start", "prompt": "Explain recursion."}))
        while json.loads(await rater.sock.recv())["type"] != "delta":
            pass
        victim = next(w for w in bench.stack.workers if w.alive())
        victim.kill()
        fault_at = time.monotonic()
        bench.stack.workers.remove(victim)  # killed on purpose: not one that should be up
        bench.stack.start_worker()
        while (frame := json.loads(await rater.sock.recv()))["type"] not in (
            "void",
            "turn_complete",
        ):
            pass
        row.recovery_s = time.monotonic() - fault_at
        row.note = f"battle {frame['type']} {row.recovery_s:.1f} s after the kill"
    bench.set_backend(FAST)
    return row


async def fault_generation(bench: Bench, battles: int, name: str, *, broken: str) -> Row:
    """Battles generating (a slow first token) when ``broken`` ("postgres" or "redis") fails."""
    bench.set_backend({**FAST, "ttft_ms": 1500})
    row = Row(name)
    async with bench.rater() as rater:
        ids = []
        for i in range(battles):  # started together, on sockets of their own
            await rater.sock.send(json.dumps({"action": "start", "prompt": f"Generating {i}?"}))
            while (frame := json.loads(await rater.sock.recv()))["type"] != "battle":
                pass
            ids.append(frame["battle"])
            await rater.sock.close()
            await rater._open()
        fault_at = time.monotonic()
        if broken == "postgres":
            await asyncio.to_thread(bench.cluster.kill)
            await asyncio.to_thread(restart_after, bench.cluster, 2.5)
        else:
            await asyncio.to_thread(bench.redis.restart)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            outcomes = await asyncio.to_thread(bench.answer_outcomes, ids)
            if "open" not in outcomes.values():
                break
            await asyncio.sleep(0.5)
        row.recovery_s = time.monotonic() - fault_at
    counts = {s: list(outcomes.values()).count(s) for s in ("complete", "failed", "open")}
    row.note = (
        f"{battles} battles: {counts['complete']} answered in full, {counts['failed']} failed, "
        f"{counts['open']} still open after 60 s"
    )
    bench.set_backend(FAST)
    return row


def restart_after(cluster: PostgresCluster, seconds: float) -> None:
    time.sleep(seconds)  # the outage's length
    cluster.start()


def table(rows: list[Row]) -> str:
    lines = [
        "| fault | votes sent | accepted | stored | lost | duplicated | s to recovery | seen |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        recovery = f"{r.recovery_s:.1f}" if r.recovery_s is not None else "-"
        counts = (
            f"{r.sent} | {r.accepted} | {r.stored} | {r.lost} | {r.duplicated}"
            if r.sent
            else "- | - | - | - | -"
        )
        lines.append(f"| {r.fault} | {counts} | {recovery} | {r.note} |")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> list[Row]:
    only = set(args.only.split(","))
    bench = Bench()
    rows: list[Row] = []
    faults = [  # (--only key, name, how to run it under that name)
        ("web", "web process kill -9 mid-votes", lambda n: fault_web(bench, args.votes, n)),
        ("redis", "Redis kill -9 + restart mid-votes",
         lambda n: fault_mid_votes(bench, args.votes, n, lambda: redis_restart(bench))),
        ("postgres", "PostgreSQL kill -9, back 2 s later, mid-votes",
         lambda n: fault_mid_votes(bench, args.votes, n, lambda: postgres_outage(bench))),
        ("worker", "worker kill -9 mid-answer", lambda n: fault_worker(bench, n)),
        ("generation", "PostgreSQL down 2.5 s while battles generate",
         lambda n: fault_generation(bench, args.battles, n, broken="postgres")),
        ("generation", "Redis kill -9 + restart while battles generate",
         lambda n: fault_generation(bench, args.battles, n, broken="redis")),
    ]  # fmt: skip
    try:
        bench.start(FAST)
        for key, name, run in faults:
            if key not in only:
                continue
            try:
                row = await run(name)
            except Exception as exc:  # an earlier version may fail outright: say how
                row = Row(name, note=f"FAILED: {type(exc).__name__}: {str(exc)[:160]}")
            dead = [w for w in bench.stack.workers if not w.alive()]
            if dead:  # as a supervisor would: the next fault starts with a live worker
                row.note += f"; {len(dead)} worker(s) EXITED (restarted for the next fault)"
                for worker in dead:
                    bench.stack.workers.remove(worker)
                bench.stack.start_worker()
            rows.append(row)
    finally:
        bench.stop()
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=30)
    parser.add_argument("--battles", type=int, default=10, help="for the generation fault")
    parser.add_argument("--only", default="web,redis,postgres,worker,generation")
    started = time.monotonic()
    result = asyncio.run(main(parser.parse_args()))
    print(table(result))
    print(f"\n({time.monotonic() - started:.0f} s in all)")
