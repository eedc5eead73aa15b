"""A vote log to rank: four models of known strength, simulated votes in two languages."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, transaction
from psycopg import sql

from arena.battles.simulation import votes_simulate
from tests.helpers import make_model

STRENGTHS = {"Alpha": 1.0, "Beta": 0.2, "Gamma": 0.0, "Delta": -0.8}

# The rows ``voted`` made, per table: made once per process, then put back, the same rows and
# ids, for every test that asks for the log. Making them costs a second or more, mostly quoting
# values; putting them back (PostgreSQL's COPY, or SQLite's executemany), a few milliseconds.
_made: dict[str, object] = {}


@pytest.fixture
def voted(db) -> dict[str, float]:
    """1,600 simulated votes among the models of ``STRENGTHS`` (returned), and a model with
    none."""
    if _made:
        _put_back(_made)
        return STRENGTHS
    before = _keys()
    for name in STRENGTHS:
        make_model(name, name.lower())
    make_model("Newcomer", "new-1")  # no votes at all
    from arena.battles.prompts import prompt_create

    prompt_create(text="Anything?", category="general", language="en")
    prompt_create(text="¿Algo?", category="general", language="es")
    votes_simulate(n=1600, strengths=STRENGTHS, once=False)
    _made.update(_take_out(before))
    return STRENGTHS


def _tables() -> dict[str, str]:
    """Every table and its primary key column."""
    return {
        m._meta.db_table: m._meta.pk.column
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    }


def _keys() -> dict[str, set]:
    """The primary keys every table holds now, as the database gives them."""
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        found = {}
        for table, column in _tables().items():
            cursor.execute(f"SELECT {q(column)} FROM {q(table)}")
            found[table] = {key for (key,) in cursor.fetchall()}
        return found


def _take_out(before: dict[str, set]) -> dict[str, object]:
    """The rows made since ``before``, per table."""
    q = connection.ops.quote_name
    columns = _tables()
    made: dict[str, object] = {}
    with connection.cursor() as cursor:
        for table, keys in _keys().items():
            new = list(keys - before[table])
            if not new:
                continue
            if connection.vendor == "postgresql":
                query = sql.SQL("COPY (SELECT * FROM {} WHERE {} = ANY({})) TO STDOUT").format(
                    sql.Identifier(table), sql.Identifier(columns[table]), sql.Literal(new)
                )
                with cursor.cursor.copy(query) as copy:
                    made[table] = b"".join(bytes(block) for block in copy)
            else:
                marks = ", ".join(["%s"] * len(new))
                cursor.execute(
                    f"SELECT * FROM {q(table)} WHERE {q(columns[table])} IN ({marks})", new
                )
                made[table] = cursor.fetchall()
    return made


def _put_back(made: dict[str, object]) -> None:
    # One transaction, so the deferred foreign keys are checked once every table is in.
    q = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        for table, rows in made.items():
            if connection.vendor == "postgresql":
                statement = sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))
                with cursor.cursor.copy(statement) as copy:
                    copy.write(rows)
            else:
                marks = ", ".join(["%s"] * len(rows[0]))
                cursor.executemany(f"INSERT INTO {q(table)} VALUES ({marks})", rows)
