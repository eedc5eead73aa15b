"""A battle start's writes: the battle, its prompt's use counted, its first turn and both
answers. On PostgreSQL in one statement (data-modifying WITH clauses), where the ORM makes
four: a crowd's starts each wait for the database once instead of four times, and on a web
process whose threads take turns at the interpreter, each wait is a turn to wait for again."""

from __future__ import annotations

from django.db import connections, router
from django.db.models import F, Model
from django.db.models.expressions import RawSQL

from arena.core.statements import insert_sql, writes_in_with
from arena.records.models import Answer, Battle, Prompt, Turn

SIDES = (Answer.Side.A, Answer.Side.B)


def start_write(*, battle: Battle, text: str, count_prompt: bool) -> tuple[Turn, list[Answer]]:
    """Write ``battle`` (not yet saved), count a use of its prompt with ``count_prompt``, and
    write its first turn of ``text`` with an answer per side: the turn and its answers, saved."""
    db = router.db_for_write(Battle)
    if not writes_in_with(db):  # elsewhere, the ORM's four statements
        battle.save(force_insert=True, using=db)
        if count_prompt:
            Prompt.objects.filter(pk=battle.prompt_id).update(usage_count=F("usage_count") + 1)
        turn = Turn.objects.create(battle=battle, index=0, text=text)
        answers = Answer.objects.bulk_create(
            Answer(turn=turn, side=side, model=battle.model_for(side)) for side in SIDES
        )
        return turn, answers
    connection = connections[db]
    qn = connection.ops.quote_name
    turn = Turn(battle=battle, index=0, text=text)
    # The answers' turn is the one the statement's turn clause returns.
    of_turn = RawSQL(f"(SELECT {qn('id')} FROM t)", ())
    answers = [Answer(turn_id=of_turn, side=side, model=battle.model_for(side)) for side in SIDES]
    battle_sql, battle_params = insert_sql(battle, db)
    parts, params = [f"b AS ({battle_sql})"], list(battle_params)
    if count_prompt:
        table, count = qn(Prompt._meta.db_table), qn("usage_count")
        parts.append(f"p AS (UPDATE {table} SET {count} = {count} + 1 WHERE {qn('id')} = %s)")
        params.append(battle.prompt_id)
    turn_sql, turn_params = insert_sql(turn, db)
    parts.append(f"t AS ({turn_sql} RETURNING {qn('id')})")
    params += turn_params
    answers_sql, answers_params = insert_sql(answers, db)
    params += answers_params
    sql = (
        f"WITH {', '.join(parts)} {answers_sql} RETURNING {qn('id')}, {qn('side')}, {qn('turn_id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    _saved(battle, db)
    turn.pk = rows[0][2]
    _saved(turn, db)
    ids = {side: pk for pk, side, _ in rows}
    for answer in answers:
        answer.pk, answer.turn = ids[answer.side], turn
        _saved(answer, db)
    return turn, answers


def _saved(obj: Model, db: str) -> None:
    obj._state.adding, obj._state.db = False, db
