"""Statements built once per process: for a queryset made again and again with only a value or
two changing (a start's reads, made for every battle), building and compiling it costs several
times the CPU of running it. It is compiled once per process and database, with marks for its
values changed one at a time so the parameters that are those values are known, and each use
binds its own values to the same SQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections
from django.db.models import Model, QuerySet
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery


@dataclass(frozen=True)
class Statement:
    sql: str
    params: tuple
    slots: dict[int, str]  # parameter index -> the name of the value bound there

    def bind(self, **values: object) -> list:
        """The parameters with these values in their slots (every name, each once or more)."""
        if set(values) != set(self.slots.values()):
            raise TypeError(f"bind takes {sorted(set(self.slots.values()))}, not {sorted(values)}")
        return [values[self.slots[i]] if i in self.slots else p for i, p in enumerate(self.params)]


_built: dict[tuple[str, str, str], Statement] = {}
_lock = threading.Lock()


def statement(name: str, build: Callable[..., Any], marks: dict[str, tuple[Any, Any]]) -> Statement:
    """The statement ``build(**values)`` compiles to (a QuerySet's, or a Query's such as an
    UpdateQuery), with the parameters that are ``values`` known by name. ``marks`` gives two
    different values for each name: the statement is built with the firsts, then once per name
    with that name's second, and each build must compile to the same SQL, differing from the
    first only in that name's parameters. ``name`` says which statement it is, per process, on
    the current connection's database. Bind values as the driver takes them (a field's
    get_db_prep_value) where the ORM would convert them."""
    key = (name, connection.alias, connection.vendor)
    built = _built.get(key)
    if built is not None:
        return built
    first = {k: pair[0] for k, pair in marks.items()}
    sql, params = _compiled(build(**first))
    slots: dict[int, str] = {}
    for k, (_, second) in marks.items():
        other_sql, other = _compiled(build(**{**first, k: second}))
        changed = [i for i, (a, b) in enumerate(zip(params, other, strict=True)) if a != b]
        if other_sql != sql or not changed or any(i in slots for i in changed):
            raise RuntimeError(f"statement {name!r} did not compile to one shape: {sql}")
        slots.update(dict.fromkeys(changed, k))
    built = Statement(sql=sql, params=tuple(params), slots=slots)
    with _lock:
        _built[key] = built
    return built


def _compiled(built: Any) -> tuple[str, tuple]:
    query = built.query if isinstance(built, QuerySet) else built
    return query.sql_with_params()


# The databases that run data-modifying WITH clauses (not SQLite, the embedded default): there,
# a few writes go as one statement.
ONE_STATEMENT = {"postgresql"}


def writes_in_with(db: str) -> bool:
    """Whether database ``db`` runs data-modifying WITH clauses (ONE_STATEMENT)."""
    return connections[db].vendor in ONE_STATEMENT


def insert_sql(
    objs: Model | list[Model],
    db: str,
    *,
    ignore_conflicts: bool = False,
    returning_pk: bool = False,
) -> tuple[str, tuple]:
    """The ORM's own INSERT of these rows (one model's), as Model.save would write them (a
    primary key the database assigns left out); with ``ignore_conflicts``, ON CONFLICT DO
    NOTHING; with ``returning_pk``, RETURNING the primary key."""
    rows = objs if isinstance(objs, list) else [objs]
    meta = rows[0]._meta
    fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
    query = InsertQuery(type(rows[0]), on_conflict=OnConflict.IGNORE if ignore_conflicts else None)
    query.insert_values(fields, rows)
    compiler = query.get_compiler(using=db)
    if returning_pk:
        compiler.returning_fields = [meta.pk]
    [(sql, params)] = compiler.as_sql()
    return sql, params
