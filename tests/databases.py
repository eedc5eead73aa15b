"""The test databases on PostgreSQL: each cloned from one migrated template, a transactional
test's flush by ``DELETE``, and the main thread's connection kept.

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
milliseconds. Every table is locked first, as the ``TRUNCATE`` locked it, so a server or worker
still writing is waited for and no row it commits outlives the flush. Tables whose rows may not
be deleted (the append-only logs' triggers refuse it) are truncated, when any of them holds a
row. Content types and permissions stay: they are what migrate made, and what the flush's
post-migrate step would make again as they were, so that step is left out while its only
receivers are Django's two that make them. What a test sees after the flush is what it saw
after Django's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import warnings
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.apps import apps
from django.core.management.color import Style
from django.core.management.commands import flush as flush_command
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.operations import DatabaseOperations
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate
from django.db.utils import OperationalError
from pytest_django.plugin import blocking_manager_key

ROOT = Path(__file__).resolve().parent.parent
MIGRATE_LIMIT_S = 600
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})
# What the flush's post-migrate step would do: make content types and permissions.
POST_MIGRATE_RECEIVERS = frozenset({"create_contenttypes", "create_permissions"})
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


def _migrate(name: str) -> None:
    """``manage.py migrate`` into the database ``name``, in a process of its own (this one's
    connections stay on the test database)."""
    url = urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}").geturl()
    env = {**os.environ, "DATABASE_URL": url}
    command = [sys.executable, "manage.py", "migrate", "--no-input", "-v0"]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=MIGRATE_LIMIT_S)


def template_use(config: pytest.Config) -> None:
    """Make every test database a copy of the migrated template, made first if need be."""
    connection = connections["default"]
    if connection.vendor != "postgresql" or "DATABASE_URL" not in os.environ:
        return
    db = connection.settings_dict
    base = db["TEST"].get("NAME") or f"test_{db['NAME']}"
    name = f"{base}_tpl_{_migrations_digest()}"
    if len(f"{name}_new") > connection.ops.max_name_length():
        return  # PostgreSQL would cut the name: the tests' databases are migrated as Django's
    try:
        with config.stash[blocking_manager_key].unblock():
            _template_make(name, base)
    except OperationalError as exc:  # PostgreSQL not there: each database migrated as Django's
        warnings.warn(f"no template for the test databases: {exc}", stacklevel=1)
        return
    db["TEST"]["TEMPLATE"] = name


def _template_make(name: str, base: str) -> None:
    """The template ``name``, migrated, unless it is there; older ones of ``base`` dropped."""
    connection = connections["default"]
    quote = connection.ops.quote_name
    pattern = base.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "\\_tpl\\_%"
    with connection._nodb_cursor() as cursor:
        # One process makes it; any other waits here (not forever), then finds it made.
        cursor.execute(f"SET lock_timeout = '{MIGRATE_LIMIT_S}s'")
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [base])
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [pattern])
        found = {row[0] for row in cursor.fetchall()}
        if name not in found:
            for stale in found:  # older migrations', or a make that did not finish
                try:
                    cursor.execute(f"DROP DATABASE IF EXISTS {quote(stale)}")
                except OperationalError:  # in use (another checkout's run): left for later
                    pass
            building = f"{name}_new"
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(building)}")
            cursor.execute(f"CREATE DATABASE {quote(building)}")
            _migrate(building)
            cursor.execute(f"ALTER DATABASE {quote(building)} RENAME TO {quote(name)}")
        cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [base])


# Connections --------------------------------------------------------------------------------


def _main_thread_keeps(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if threading.current_thread() is threading.main_thread():
        connection.close_at = None


def main_connection_keep() -> None:
    """The main thread's connection kept from one of its calls to the next. A test that runs
    async code from sync code (an evaluation run's command, the demo) has each
    ``database_sync_to_async`` call run on the main thread, which with ``CONN_MAX_AGE`` 0 closes
    the connection after it: the next call connects anew, and PostgreSQL starts a process for
    it (about a thousand in the fast layer, 8 ms of its CPU apiece). Other threads' connections
    close as before: a kept one would outlive its thread."""
    connection_created.connect(_main_thread_keeps, dispatch_uid="tests-main-connection-kept")


def others_end() -> None:
    """End every other session on this thread's test database (what a server or a thread left
    open), so that dropping it does not wait five seconds for them and fail."""
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


def _post_migrate_only_makes_kept_tables() -> bool:
    found = (
        e[1]() if isinstance(e[1], weakref.ReferenceType) else e[1] for e in post_migrate.receivers
    )
    return {getattr(f, "__name__", "") for f in found if f is not None} <= POST_MIGRATE_RECEIVERS


def sql_flush(
    self: DatabaseOperations,
    style: Style,
    tables: list[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    alias = self.connection.alias
    _kept[alias] = bool(tables) and not reset_sequences and _post_migrate_only_makes_kept_tables()
    if not _kept[alias]:
        return _django_sql_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    quote = self.quote_name
    guarded = sorted(_guarded_tables(self).intersection(tables))
    # All in one transaction (execute_sql_flush), after the locks: writers still at work are
    # waited for, and new ones wait for the flush.
    sql = [f"LOCK TABLE {', '.join(quote(t) for t in tables)} IN SHARE ROW EXCLUSIVE MODE"]
    if guarded:
        held = " OR ".join(f"EXISTS (SELECT 1 FROM {quote(t)})" for t in guarded)
        names = ", ".join(quote(t) for t in guarded)
        sql.append(f"DO $$ BEGIN IF {held} THEN TRUNCATE {names} CASCADE; END IF; END $$")
    # Foreign keys are deferred, so the order of the deletes does not matter.
    sql.append("SET CONSTRAINTS ALL DEFERRED")
    kept = KEPT_TABLES.union(guarded)
    sql += [f"DELETE FROM {quote(t)}" for t in tables if t not in kept]
    return sql


def _post_flush(verbosity: int, interactive: bool, database: str, **kwargs: Any) -> None:
    """The flush's post-migrate step, left out after a flush that kept what it would make."""
    if not _kept.pop(database, False):  # a flush of its own (another vendor, or sequences)
        emit_post_migrate_signal(verbosity, interactive, database, **kwargs)


def flush_install() -> None:
    DatabaseOperations.sql_flush = sql_flush
    flush_command.emit_post_migrate_signal = _post_flush
