"""The test databases on PostgreSQL: each cloned from one migrated template, and a transactional
test's flush by ``DELETE``.

Every xdist worker has a test database of its own, and Django makes each by running every
migration: seconds of CPU per worker, for the same schema each time. Here the first process
(the xdist controller, before its workers start) migrates a template once, named for the
migrations it holds, and each worker's database is a copy of it (``TEST["TEMPLATE"]``; the
migrate Django still runs on the copy finds nothing to do). A template whose migrations are
not today's is dropped when the new one is made.

Django ends a transactional test (``transactional_db``, ``django_db(transaction=True)``) with
its flush: one ``TRUNCATE`` of every table, which PostgreSQL carries out by making new files
for each table and each index, about 0.3 s for this schema whatever the tables hold, most of a
short transactional test's time. A test writes a few rows, which ``DELETE`` removes in
milliseconds. Tables whose rows may not be deleted (the append-only logs' triggers refuse it)
are truncated when they hold rows, with whatever refers to them, first, while nothing is
pending on them. Content types and permissions stay: they are what migrate made, and what the
flush's post-migrate step would make again as they were, so that step is left out. What a
test sees after the flush is what it saw after Django's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from django.apps import apps
from django.core.management.commands import flush as flush_command
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections
from django.db.backends.postgresql.operations import DatabaseOperations

ROOT = Path(__file__).resolve().parent.parent
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})
GUARDED_TABLES = """
    SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE NOT t.tgisinternal
"""

_django_sql_flush = DatabaseOperations.sql_flush
_guarded: dict[str, frozenset[str]] = {}  # per database: the tables with triggers of our own
_kept: dict[str, bool] = {}  # per alias: whether its last flush kept KEPT_TABLES


# The template -------------------------------------------------------------------------------


def _migrations_digest() -> str:
    """Every installed app's migrations, and the lockfile that pins the apps."""
    digest = hashlib.sha256((ROOT / "uv.lock").read_bytes())
    for config in sorted(apps.get_app_configs(), key=lambda c: c.label):
        folder = Path(config.path) / "migrations"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else ():
            digest.update(f"{config.label}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _admin(db: dict) -> psycopg.Connection:
    return psycopg.connect(
        dbname="postgres",
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        autocommit=True,
    )


def _migrate(name: str) -> None:
    """``manage.py migrate`` into the database ``name``, in a process of its own (this one's
    connections stay on the test database)."""
    url = urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}").geturl()
    env = {**os.environ, "DATABASE_URL": url}
    command = [sys.executable, "manage.py", "migrate", "--no-input", "-v0"]
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def template_use() -> None:
    """Make every test database a copy of the migrated template, made first if need be."""
    db = connections["default"].settings_dict
    if connections["default"].vendor != "postgresql" or "DATABASE_URL" not in os.environ:
        return
    base = db["TEST"].get("NAME") or f"test_{db['NAME']}"
    name = f"{base}_tpl_{_migrations_digest()}"
    with _admin(db) as admin:
        # One process makes it; any other waits here, then finds it made.
        admin.execute("SELECT pg_advisory_lock(hashtext(%s))", [base])
        found = {
            row[0]
            for row in admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{base}\\_tpl\\_%"]
            )
        }
        if name not in found:
            for stale in found:  # older migrations', or a make that did not finish
                admin.execute(f'DROP DATABASE IF EXISTS "{stale}"')
            building = f"{name}_new"
            admin.execute(f'CREATE DATABASE "{building}"')
            _migrate(building)
            admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        admin.execute("SELECT pg_advisory_unlock(hashtext(%s))", [base])
    db["TEST"]["TEMPLATE"] = name


# Connections --------------------------------------------------------------------------------


def connections_keep() -> None:
    """Connections kept from one database call of a thread to its next, as README's production
    shape keeps them (``DATABASE_CONN_MAX_AGE``). With none kept, every ``database_sync_to_async``
    call outside a test's transaction (an evaluation run's steps, a consumer's) connects anew,
    and PostgreSQL starts a process for each: about a thousand in the fast layer, 8 ms of its
    CPU apiece. Set on the settings every thread's connection is made from."""
    connections["default"].settings_dict["CONN_MAX_AGE"] = 600


def others_end() -> None:
    """End every other session on this thread's test database (threads' kept connections), so
    that dropping it does not wait five seconds for them and fail."""
    if connections["default"].vendor != "postgresql":
        return
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


# The flush ----------------------------------------------------------------------------------


def _guarded_tables(ops: DatabaseOperations) -> frozenset[str]:
    name = ops.connection.settings_dict["NAME"]
    if name not in _guarded:
        with ops.connection.cursor() as cursor:
            cursor.execute(GUARDED_TABLES)
            _guarded[name] = frozenset(row[0] for row in cursor.fetchall())
    return _guarded[name]


def _holding_rows(ops: DatabaseOperations, tables: list[str]) -> list[str]:
    exists = " UNION ALL ".join(
        f"SELECT %s WHERE EXISTS (SELECT 1 FROM {ops.quote_name(t)})" for t in tables
    )
    with ops.connection.cursor() as cursor:
        cursor.execute(exists, tables)
        return [row[0] for row in cursor.fetchall()]


def sql_flush(
    self: DatabaseOperations,
    style,
    tables: list[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    alias = self.connection.alias
    _kept[alias] = not (reset_sequences or not tables)
    if not _kept[alias]:
        return _django_sql_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    guarded = sorted(_guarded_tables(self).intersection(tables))
    sql = []
    full = _holding_rows(self, guarded) if guarded else []
    if full:
        sql.append(f"TRUNCATE {', '.join(self.quote_name(t) for t in full)} CASCADE")
    # Foreign keys are deferred, so the order of the deletes does not matter.
    sql.append("SET CONSTRAINTS ALL DEFERRED")
    kept = KEPT_TABLES.union(guarded)
    sql += [f"DELETE FROM {self.quote_name(t)}" for t in tables if t not in kept]
    return sql


def _post_flush(verbosity: int, interactive: bool, database: str, **kwargs) -> None:
    """The flush's post-migrate step, skipped after a flush that kept what it would make (the
    content types and permissions: its only receivers here, create_contenttypes and
    create_permissions, would read every app's and write nothing)."""
    if not _kept.pop(database, False):  # a flush of its own (another vendor, or sequences)
        emit_post_migrate_signal(verbosity, interactive, database, **kwargs)


def flush_install() -> None:
    DatabaseOperations.sql_flush = sql_flush
    flush_command.emit_post_migrate_signal = _post_flush
