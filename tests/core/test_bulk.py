"""rows_add: the rows bulk_create would write, by COPY on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from arena.battles.prompts import prompt_create
from arena.core.bulk import rows_add
from arena.records.models import Battle, Prompt, Turn
from tests.helpers import make_two_models, make_user


def _battles(rater, prompt: Prompt, models, n: int) -> list[Battle]:
    return [
        Battle.between(models, rater=rater, prompt=prompt, params={"temperature": i / 10})
        for i in range(n)
    ]


def _setting():
    rater, models = make_user("bulk@example.com"), make_two_models()
    prompt, _ = prompt_create(text="Compare two sorting algorithms.")
    return rater, prompt, models


def test_rows_are_what_bulk_create_writes(db):
    rater, prompt, models = _setting()
    ours, django = _battles(rater, prompt, models, 3), _battles(rater, prompt, models, 3)

    rows_add(ours)
    Battle.objects.bulk_create(django)

    def stored(battles: list[Battle]) -> list[dict]:
        rows = {r["id"]: r for r in Battle.objects.filter(pk__in=[b.pk for b in battles]).values()}
        return [rows[b.pk] for b in battles]

    made = stored(ours)
    assert all(row["created_at"] is not None for row in made)
    ignore = {"id", "created_at"}
    assert [{k: v for k, v in r.items() if k not in ignore} for r in made] == [
        {k: v for k, v in r.items() if k not in ignore} for r in stored(django)
    ]
    assert all(not b._state.adding for b in ours)


def test_ids_given_first_are_the_rows_ids(db):
    rater, prompt, models = _setting()
    battles = _battles(rater, prompt, models, 2)
    rows_add(battles)
    turns = [Turn(battle=b, index=0, text=f"turn {i}") for i, b in enumerate(battles)]

    rows_add(turns, ids=True)

    assert all(t.pk for t in turns) and len({t.pk for t in turns}) == 2
    assert {t.pk: t.text for t in turns} == dict(Turn.objects.values_list("pk", "text"))


def test_a_row_the_database_refuses_is_djangos_integrity_error(db):
    rater, prompt, models = _setting()
    (battle,) = _battles(rater, prompt, models, 1)
    rows_add([battle])

    with pytest.raises(IntegrityError):
        rows_add(_battles(rater, prompt, models, 1) + [battle])  # the same id again


def test_nothing_to_add_writes_nothing(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        rows_add([])
