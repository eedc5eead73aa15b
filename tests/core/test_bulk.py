"""rows_add: the rows bulk_create would write, by COPY on PostgreSQL."""

from __future__ import annotations

from django.forms.models import model_to_dict

from arena.battles.models import Battle, Prompt, Turn
from arena.battles.prompts import prompt_create
from arena.core.bulk import rows_add
from tests.helpers import make_two_models, make_user


def _battles(rater, prompt: Prompt, models, n: int) -> list[Battle]:
    return [
        Battle.between(models, rater=rater, prompt=prompt, params={"temperature": i / 10})
        for i in range(n)
    ]


def test_rows_are_what_bulk_create_writes(db):
    rater, models = make_user("bulk@example.com"), make_two_models()
    prompt, _ = prompt_create(text="Compare two sorting algorithms.")
    ours, django = _battles(rater, prompt, models, 3), _battles(rater, prompt, models, 3)

    rows_add(ours)
    Battle.objects.bulk_create(django)

    def stored(battles: list[Battle]) -> list[dict]:
        rows = Battle.objects.in_bulk([b.pk for b in battles])
        return [model_to_dict(rows[b.pk], exclude=["id"]) for b in battles]

    assert stored(ours) == stored(django)
    assert all(not b._state.adding for b in ours)


def test_ids_given_first_are_the_rows_ids(db):
    rater, models = make_user("bulk@example.com"), make_two_models()
    prompt, _ = prompt_create(text="Compare two sorting algorithms.")
    battles = _battles(rater, prompt, models, 2)
    rows_add(battles)
    turns = [Turn(battle=b, index=0, text=f"turn {i}") for i, b in enumerate(battles)]

    rows_add(turns, ids=True)

    assert all(t.pk for t in turns) and len({t.pk for t in turns}) == 2
    assert {t.pk: t.text for t in turns} == dict(Turn.objects.values_list("pk", "text"))


def test_nothing_to_add_writes_nothing(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        rows_add([])
