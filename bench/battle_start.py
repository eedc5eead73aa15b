"""What one battle start costs the web process: CPU and wall time, and database statements.

Not a test: it prints figures. It calls what a socket's start calls (the consumer's one
database call, arena.battles.consumers._battle_begin) for ``--starts`` raters in turn, each
with a battle to begin on an existing prompt, against ten active mock models and a published
snapshot, as a crowd's starts find the arena. Generation is sent to a Celery queue of the
bench's own that no worker reads (purged before and after): the start's cost is the figure.

    uv run python bench/battle_start.py [--starts 200] [--profile]

``--profile`` prints pyinstrument's tree of the starts (wall time, so waits on the database
show). Before issue 28 (2 cores shared, figures noisy): 19 statements per start, about
30 ms of CPU; the statements are exact, the times are not.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

common.celery_environment(name="starts", database="arena_bench_starts", redis_db=9)

BASELINE_STATEMENTS = 19  # per start before issue 28, a snapshot published


def seed(run: str, starts: int) -> list:
    from allauth.account.models import EmailAddress
    from django.conf import settings
    from django.utils import timezone

    from accounts.models import User
    from arena.catalog.models import ModelEntry
    from ranking.models import LeaderboardRow, LeaderboardSnapshot

    prefix = f"Start bench {run}"
    # Ten models of this run are the only active ones while it runs.
    ModelEntry.objects.filter(active=True).update(active=False)
    for i in range(10):
        ModelEntry.objects.create(
            public_name=f"{prefix} {i}",
            model_id=f"start-bench-{run}-{i}",
            backend="mock",
            backend_settings={"ttft_ms": 0},
        )
    snapshot = LeaderboardSnapshot.objects.create(
        cutoff=timezone.now(), method="sandwich", settings={}, votes_used=0, content_hash=run
    )
    LeaderboardRow.objects.bulk_create(
        LeaderboardRow(
            snapshot=snapshot,
            view="raw",
            breakdown="all",
            model_name=f"{prefix} {i}",
            section=LeaderboardRow.Section.RANKED,
            score=1000 + 2 * i,
            lower=990 + 2 * i,
            upper=1010 + 2 * i,
            votes=100 * i,
        )
        for i in range(10)
    )
    users = [
        User.objects.create_user(
            f"start-bench-{run}-{i}@example.com", None, terms_version=settings.TERMS["VERSION"]
        )
        for i in range(starts + 1)
    ]
    EmailAddress.objects.bulk_create(
        EmailAddress(user=u, email=u.email, verified=True, primary=True) for u in users
    )
    return users


def purge() -> None:
    import os

    subprocess.run(
        [sys.executable, "-m", *common.CELERY, "purge", "-f", "-Q", os.environ["GENERATION_QUEUE"]],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="pyinstrument's tree")
    args = parser.parse_args()
    common.setup_database(require_postgres=True)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from arena.battles.consumers import _battle_begin

    purge()
    run = uuid.uuid4().hex[:8]
    users = seed(run, args.starts)
    text = f"What does a start cost? ({run})"
    _battle_begin(rater=users[0], text=text, prompt_id=None)  # the prompt exists; caches warm
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005)
        profiler.start()
    statements = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for user in users[1:]:
        with CaptureQueriesContext(connection) as ctx:
            _battle_begin(rater=user, text=text, prompt_id=None)
        statements += len(ctx.captured_queries)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None:
        profiler.stop()
    purge()
    n = args.starts
    print(f"{n} starts, one after another (statements counted in the web process)")
    print(
        f"  statements per start: {statements / n:.1f} (before issue 28: {BASELINE_STATEMENTS}) "
        f"{common.verdict(statements / n < BASELINE_STATEMENTS)}"
    )
    print(f"  CPU per start: {cpu / n * 1000:.1f} ms; wall per start: {wall / n * 1000:.1f} ms")
    if profiler is not None:
        print(profiler.output_text(unicode=False, color=False))


if __name__ == "__main__":
    main()
