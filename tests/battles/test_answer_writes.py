"""A worker's database work per answer: a claim is one statement, and so is a complete
answer's finish; they ask and write what the locked path would."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from arena.battles.answers import answer_claim, answer_conversation, answer_finish
from arena.battles.services import battle_start
from arena.generation.runner import StreamResult
from arena.records.models import Answer, Battle, Turn
from tests.helpers import make_model, run_together


def complete(text: str = "A complete answer.") -> StreamResult:
    return StreamResult(
        status=Answer.Status.OK, text=text, finish_reason="stop", input_tokens=9, output_tokens=4
    )


def pending_battle(rater) -> tuple[Battle, list[Answer]]:
    """A battle whose answers wait to be claimed: in a test transaction, its task is never
    sent (that happens on commit)."""
    battle = battle_start(rater=rater, text="What is a monad?")
    return battle, list(Answer.objects.filter(turn__battle=battle).order_by("side"))


@pytest.fixture
def one_statement(django_assert_num_queries, django_assert_max_num_queries):
    """One statement on PostgreSQL; the ORM's few where the database runs no data-modifying
    WITH clause (SQLite, the embedded default)."""
    if connection.vendor == "postgresql":
        return lambda: django_assert_num_queries(1)
    return lambda: django_assert_max_num_queries(6)


def test_a_claim_is_one_statement_and_so_is_a_complete_answers_finish(
    alice, two_models, one_statement
):
    battle, answers = pending_battle(alice)
    jobs = []
    for answer in answers:
        with one_statement():
            jobs.append(answer_claim(answer_id=answer.pk))
        answer.refresh_from_db()
        assert answer.status == Answer.Status.RUNNING and answer.started_at is not None
    for answer, job in zip(answers, jobs, strict=True):
        with one_statement():
            status = answer_finish(answer_id=answer.pk, result=complete(), memo=job.memo)
        assert status == Answer.Status.OK
        battle.refresh_from_db()
        # The second answer completes the turn: nobody has watched it yet.
        expected = Battle.Status.WAITING if answer is answers[-1] else Battle.Status.GENERATING
        assert battle.status == expected
    answer = Answer.objects.get(pk=answers[0].pk)
    assert (answer.text, answer.input_tokens, answer.output_tokens) == ("A complete answer.", 9, 4)
    assert answer.cost_status == "example" and answer.finished_at is not None
    # Written once: a finish again changes nothing.
    assert answer_finish(answer_id=answer.pk, result=complete("Other.")) == Answer.Status.OK
    assert Answer.objects.get(pk=answer.pk).text == "A complete answer."


def test_a_claim_asks_what_answer_conversation_says_in_a_follow_up(alice, two_models):
    battle, first = pending_battle(alice)
    Battle.objects.filter(pk=battle.pk).update(system_prompt="Be brief.")
    Answer.objects.filter(pk__in=[a.pk for a in first]).update(
        status=Answer.Status.OK, text="A monad is a monoid."
    )
    turn = Turn.objects.create(battle=battle, index=1, text="And a functor?")
    later = [Answer.objects.create(turn=turn, side=a.side, model_id=a.model_id) for a in first]
    job = answer_claim(answer_id=later[0].pk)
    stored = Answer.objects.select_related("turn__battle", "model").get(pk=later[0].pk)
    assert job.request == answer_conversation(stored)
    assert [m.role for m in job.request.messages] == ["system", "user", "assistant", "user"]
    assert job.request.model_id == stored.model.model_id


def test_a_claim_of_an_answer_in_a_void_battle_abandons_it(alice, two_models):
    battle, answers = pending_battle(alice)
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.VOID)
    job = answer_claim(answer_id=answers[0].pk)
    assert job.abandoned == Answer.Status.ERROR
    assert Answer.objects.get(pk=answers[0].pk).error_kind == "abandoned"
    assert answer_claim(answer_id=answers[0].pk) is None  # finished: left alone


@pytest.mark.skipif(not settings.REDIS_URL, reason="held back only by a queue no worker serves")
def test_both_sides_finishing_at_once_leave_the_battle_waiting(transactional_db, alice):
    # Committed, so that each finish runs on its own connection; the models' queue has no
    # worker, so their answers stay pending for this test to claim and finish.
    import redis

    for name in ("Race One", "Race Two"):
        make_model(name, name.lower().replace(" ", "-"), queue="arena-test-race")
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        for _ in range(5):
            battle, answers = pending_battle(alice)
            jobs = [answer_claim(answer_id=a.pk) for a in answers]
            run_together(
                *(
                    lambda a=a, job=job: answer_finish(
                        answer_id=a.pk, result=complete(), memo=job.memo
                    )
                    for a, job in zip(answers, jobs, strict=True)
                )
            )
            assert Battle.objects.get(pk=battle.pk).status == Battle.Status.WAITING
    finally:
        client.delete(f"arena-test-race:{settings.GENERATION_PRIORITY}", "arena-test-race")
