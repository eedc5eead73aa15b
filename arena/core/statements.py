"""Statements built once per process: for a queryset made again and again with only a value or
two changing (a start's reads, made for every battle), building and compiling it costs several
times the CPU of running it. It is compiled once per process and database, twice with
different marks for its values so the parameters that are those values are known, and each
use binds its own values to the same SQL."""

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


def statement(
    name: str, build: Callable[..., QuerySet], marks: dict[str, tuple[Any, Any]]
) -> Statement:
    """The statement ``build(**values)`` compiles to, with the parameters that are ``values``
    known by name. ``marks`` gives two different values of each name's type, none equal to
    another's or to any constant the statement holds (-1 and -2 for a primary key): the
    statement is built with the firsts and with the seconds, and must compile to one SQL with
    exactly the named parameters differing. ``name`` says which statement it is, per process,
    on the current connection's database."""
    key = (name, connection.alias, connection.vendor)
    built = _built.get(key)
    if built is not None:
        return built
    first = {k: pair[0] for k, pair in marks.items()}
    second = {k: pair[1] for k, pair in marks.items()}
    (sql, params), (other_sql, other) = (
        build(**values).query.sql_with_params() for values in (first, second)
    )
    slots: dict[int, str] = {}
    for i, (value, changed) in enumerate(zip(params, other, strict=True)):
        if value != changed:
            names = [k for k, mark in first.items() if mark == value and second[k] == changed]
            if len(names) != 1:
                raise RuntimeError(f"statement {name!r}: parameter {i} is no one value's")
            slots[i] = names[0]
    if sql != other_sql or set(slots.values()) != set(marks):
        raise RuntimeError(f"statement {name!r} did not compile to one shape: {sql}")
    built = Statement(sql=sql, params=tuple(params), slots=slots)
    with _lock:
        _built[key] = built
    return built
