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

from django.db import connection
from django.db.models import QuerySet


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
