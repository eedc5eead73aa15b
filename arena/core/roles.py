"""Running the app as a database role that does not own its tables.

The role that owns a table can disable its triggers, truncate it or drop it, whatever grants
say: so the append-only vote log is only as safe as the role the app connects as. Migrations run
as the owner; the app runs as a role granted only what it needs: rows of every table to read and
write, but of the append-only logs only to read and add, and no TRUNCATE, ALTER or DROP at all.
"""

from __future__ import annotations

from django.apps import apps
from django.db import connection

from arena.core.errors import ServiceError
from arena.core.models import AppendOnlyModel


def _tables() -> tuple[list[str], list[str]]:
    """(ordinary tables, append-only tables) of every installed model."""
    ordinary, append_only = [], []
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or not model._meta.managed:
            continue
        target = append_only if issubclass(model, AppendOnlyModel) else ordinary
        target.append(model._meta.db_table)
    return sorted(set(ordinary)), sorted(set(append_only))


def app_role_grant(*, role: str) -> list[str]:
    """Grant ``role`` what the app needs on every table, as the tables' owner; the statements
    run. Run again after each ``migrate`` (new tables get no grants until then)."""
    if connection.vendor != "postgresql":
        raise ServiceError("not_postgresql", "Database roles are a PostgreSQL matter.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone() is None:
            raise ServiceError(
                "no_such_role", f"There is no role {role!r}: create it first (CREATE ROLE ...)."
            )
        cursor.execute("SELECT current_schema()")
        (schema,) = cursor.fetchone()
    quote = connection.ops.quote_name
    who, where = quote(role), quote(schema)
    ordinary, append_only = _tables()
    statements = [f"GRANT USAGE ON SCHEMA {where} TO {who}"]
    for table in ordinary:
        statements += [
            f"REVOKE ALL ON {quote(table)} FROM {who}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {quote(table)} TO {who}",
        ]
    for table in append_only:
        statements += [
            f"REVOKE ALL ON {quote(table)} FROM {who}",
            f"GRANT SELECT, INSERT ON {quote(table)} TO {who}",
        ]
    statements.append(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {where} TO {who}")
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    return statements
