"""A vote log to rank: four models of known strength, simulated votes in two languages."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, transaction
from psycopg import sql

from arena.battles.simulation import votes_simulate
from tests.helpers import make_model

STRENGTHS = {"Alpha": 1.0, "Beta": 0.2, "Gamma": 0.0, "Delta": -0.8}

# The rows ``voted`` made, per table, as PostgreSQL's COPY wrote them: made once per process,
# then copied back in, the same rows and ids, for every test that asks for the log. Making them
# costs a second, mostly quoting values; copying them in, a few milliseconds.
_made: dict[str, bytes] = {}


@pytest.fixture
def voted(db) -> dict[str, float]:
    """1,600 simulated votes among the models of ``STRENGTHS`` (returned), and a model with
    none."""
    if connection.vendor == "postgresql" and _made:
        _copy_in(_made)
        return STRENGTHS
    before = _keys() if connection.vendor == "postgresql" else None
    for name in STRENGTHS:
        make_model(name, name.lower())
    make_model("Newcomer", "new-1")  # no votes at all
    from arena.battles.prompts import prompt_create

    prompt_create(text="Anything?", category="general", language="en")
    prompt_create(text="¿Algo?", category="general", language="es")
    votes_simulate(n=1600, strengths=STRENGTHS, once=False)
    if before is not None:
        _made.update(_copy_out(before))
    return STRENGTHS


def _keys() -> dict[str, tuple[str, set]]:
    """Every table's primary key column and the keys it holds now."""
    found = {}
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if meta.managed and not meta.proxy:
            keys = set(model._base_manager.values_list("pk", flat=True))
            found[meta.db_table] = (meta.pk.column, keys)
    return found


def _copy_out(before: dict[str, tuple[str, set]]) -> dict[str, bytes]:
    made = {}
    with connection.cursor() as cursor:
        for table, (column, keys) in _keys().items():
            new = keys - before[table][1]
            if new:
                query = sql.SQL("COPY (SELECT * FROM {} WHERE {} = ANY({})) TO STDOUT").format(
                    sql.Identifier(table), sql.Identifier(column), sql.Literal(list(new))
                )
                with cursor.cursor.copy(query) as copy:
                    made[table] = b"".join(bytes(block) for block in copy)
    return made


def _copy_in(made: dict[str, bytes]) -> None:
    # One transaction, so the deferred foreign keys are checked once every table is in.
    with transaction.atomic(), connection.cursor() as cursor:
        for table, rows in made.items():
            with cursor.cursor.copy(
                sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))
            ) as copy:
                copy.write(rows)
