"""CI runs on PostgreSQL and Redis; the embedded default (SQLite, streams in memory,
generation in process) is what `uv run pytest` and a first try run on. Statements written for
PostgreSQL alone once left every answer there failing: the battle's database work is run again
on SQLite here, in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT

ON_SQLITE = [
    "tests/battles/test_answer_writes.py",
    "tests/battles/test_start_queries.py",
    "tests/battles/test_start_costs.py",
    "tests/battles/test_vote_queries.py",
]


def test_a_battle_s_database_work_runs_on_the_embedded_default(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "GENERATION_MODE"}}
    environment["DATABASE_URL"] = f"sqlite:///{tmp_path / 'embedded.sqlite3'}"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *ON_SQLITE],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
