"""What the benchmark scripts share: their own database, a free port, percentiles."""

from __future__ import annotations

import os
import socket


def ensure_database(*, require_postgres: bool = False) -> bool:
    """Create the PostgreSQL database DATABASE_URL names if it is missing; True if created."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    if not url.startswith("postgres"):
        if require_postgres:
            raise SystemExit("this bench needs PostgreSQL (DATABASE_URL=postgres://...)")
        return False
    base, name = url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        if conn.execute("select 1 from pg_database where datname = %s", [name]).fetchone():
            return False
        conn.execute(f'create database "{name}"')
        return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
