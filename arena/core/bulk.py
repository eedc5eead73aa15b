"""Many new rows at once: ``COPY`` on PostgreSQL, ``bulk_create`` elsewhere.

``bulk_create`` prepares every value of every row through the ORM and, on PostgreSQL, sends
each column as an array it escapes in Python: thousands of rows (the demo's simulated votes,
five rows each) cost seconds of CPU. ``COPY`` streams the same values, prepared by each field
as ``bulk_create`` prepares them, in psycopg's own format, for a fraction of that.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model


def rows_add(objs: Sequence[Model], *, ids: bool = False) -> None:
    """Insert ``objs``, all of one model, whose related objects are saved already, with the
    values ``bulk_create`` would write. ``ids``: each is given its primary key first, from the
    table's sequence, for rows others refer to; without it, on PostgreSQL, an auto-numbered key
    is left unset on the objects (the rows have theirs)."""
    if not objs:
        return
    model = type(objs[0])
    # The connection itself, not django.db.connection: that proxy costs a lookup per value.
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs, batch_size=1000)
        return
    meta, quote = model._meta, connection.ops.quote_name
    fields = [
        f
        for f in meta.concrete_fields
        if not f.generated and (ids or not f.primary_key or not f.db_returning)
    ]
    table = quote(meta.db_table)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        if ids and meta.pk.db_returning:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [table, meta.pk.column, len(objs)],
            )
            for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
                obj.pk = pk
        columns = ", ".join(quote(f.column) for f in fields)
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for obj in objs:
                copy.write_row(
                    [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
                )
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
