"""Reads of the catalog."""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from arena.catalog.models import ModelEntry


def models_active() -> QuerySet[ModelEntry]:
    """The models raters can meet now, by name."""
    return ModelEntry.objects.filter(active=True).order_by("public_name")


def model_by_name(name: str) -> ModelEntry | None:
    """The model of this public name (active or not); None for "" or a name nobody has."""
    return ModelEntry.objects.filter(public_name=name).first() if name else None


def models_stamp() -> RawSQL:
    """An expression for a query's select list: a digest of every column of every model's row,
    so any change to the catalog (an admin's edit, a retirement, a queryset update, a model
    added or deleted, from any process) gives another value, and a change undone the same one.
    Read in a statement a caller makes anyway, it costs no round trip: a per-process cache of
    what is built from the models (battles.draw_cache) is keyed by it."""
    table = connection.ops.quote_name(ModelEntry._meta.db_table)
    pk = connection.ops.quote_name(ModelEntry._meta.pk.column)
    if connection.vendor == "postgresql":
        # The row as text holds every column; md5 keeps the value short.
        return RawSQL(f"SELECT md5(string_agg(m::text, ',' ORDER BY m.{pk})) FROM {table} m", ())
    # SQLite (the embedded default): every column quoted, the rows in order, unhashed.
    row = " || ',' || ".join(
        f"quote({connection.ops.quote_name(f.column)})" for f in ModelEntry._meta.concrete_fields
    )
    return RawSQL(
        f"SELECT group_concat(r, ';') FROM (SELECT {row} AS r FROM {table} ORDER BY {pk})", ()
    )
