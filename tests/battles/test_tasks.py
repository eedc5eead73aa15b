"""A turn's generation task is idempotent: a redelivered task never writes an answer twice."""

from __future__ import annotations

import base64
import json

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

from arena.battles.answers import answer_generate
from arena.battles.services import battle_start, vote_cast
from arena.battles.tasks import generate_turn
from arena.core.errors import ServiceError
from arena.records.models import Answer, Battle
from tests.helpers import make_model, ready_battle

needs_generation = pytest.mark.usefixtures("generation")


@needs_generation
def test_running_a_finished_answer_again_changes_nothing(alice, two_models):
    battle = ready_battle(alice)
    answer = Answer.objects.filter(turn__battle=battle).first()
    before = (answer.text, answer.finished_at, answer.status)
    generate_turn.run([answer.pk])  # the task body, as a worker would run it on redelivery
    answer.refresh_from_db()
    assert (answer.text, answer.finished_at, answer.status) == before


@needs_generation
def test_a_task_redelivered_after_a_worker_died_fails_the_answer_visibly(alice, two_models):
    battle = ready_battle(alice)
    answer = Answer.objects.filter(turn__battle=battle).first()
    # What a worker that died mid-stream leaves behind: an answer still marked running.
    Answer.objects.filter(pk=answer.pk).update(status=Answer.Status.RUNNING, finished_at=None)
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.GENERATING)
    async_to_sync(answer_generate)(answer.pk)
    answer.refresh_from_db()
    assert answer.status in {Answer.Status.PARTIAL, Answer.Status.ERROR}
    assert "stopped" in answer.error_message
    assert Battle.objects.get(pk=battle.pk).status == Battle.Status.VOID
    with pytest.raises(ServiceError):
        vote_cast(battle_id=battle.pk, rater=alice, choice="a")


def test_an_unknown_answer_id_is_ignored(transactional_db):
    # Committed data: the task body reaches the database through database_sync_to_async, which
    # closes the connection a test transaction would hold.
    generate_turn.run([999_999])


@pytest.mark.skipif(not settings.REDIS_URL, reason="queues exist only with the Redis broker")
def test_generation_goes_to_the_models_pool_queue_at_arena_priority(transactional_db, alice):
    # Committed, so the dispatch runs on commit; no worker serves this queue, so its answers
    # stay pending (the generation fixture would wait for them in vain).
    import redis

    for name in ("Pool One", "Pool Two"):
        make_model(name, name.lower().replace(" ", "-"), queue="arena-test-pool")
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = f"arena-test-pool:{settings.GENERATION_PRIORITY}"
    client.delete(key, "arena-test-pool")
    battle = battle_start(rater=alice, text="Which queue?")
    try:
        # One task for both sides, started together, waiting for that pool's workers.
        assert client.llen(key) == 1
        body = json.loads(base64.b64decode(json.loads(client.lindex(key, 0))["body"]))
        answers = Answer.objects.filter(turn__battle=battle).values_list("pk", flat=True)
        assert sorted(body[0][0]) == sorted(answers)
    finally:
        client.delete(key, "arena-test-pool")


@needs_generation
def test_an_answer_whose_battle_ended_before_it_began_is_never_generated(alice, two_models):
    battle = ready_battle(alice)
    answer = Answer.objects.filter(turn__battle=battle).first()
    Answer.objects.filter(pk=answer.pk).update(status=Answer.Status.PENDING, text="")
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.VOID, void_reason="abandoned")
    async_to_sync(answer_generate)(answer.pk)
    answer.refresh_from_db()
    assert (answer.status, answer.error_kind, answer.text) == (Answer.Status.ERROR, "abandoned", "")
    assert Battle.objects.get(pk=battle.pk).void_reason == "abandoned"
