"""The one dispatcher: a job goes to Celery once its transaction commits, or runs its task's
body in this process; the body's coroutine runs on a worker's one loop, the calling web
process's loop, or here and now."""

from __future__ import annotations

import asyncio
import base64
import json
import threading

import pytest
from celery import current_app, shared_task
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from arena.core.jobs import job_run, job_send
from arena.records.models import Answer
from tests.helpers import ready_battle

RECORD = "tests.core.record"
ran: list[tuple[str, str, asyncio.AbstractEventLoop]] = []


@shared_task(name=RECORD)
def record(word: str) -> object:
    async def body() -> str:
        ran.append((word, threading.current_thread().name, asyncio.get_running_loop()))
        return word

    return job_run(body)


@pytest.fixture
def in_process(settings):
    settings.GENERATION_MODE = "inprocess"
    ran.clear()
    yield
    ran.clear()


def test_in_process_a_job_runs_its_body_here_and_now_once_its_transaction_commits(
    transactional_db, in_process
):
    with transaction.atomic():
        job_send(task=RECORD, args=["committed"])
        assert ran == []  # nothing runs on rows that might yet roll back
    assert [word for word, _, _ in ran] == ["committed"]


def test_in_process_a_job_whose_transaction_rolls_back_never_runs(transactional_db, in_process):
    with pytest.raises(RuntimeError), transaction.atomic():
        job_send(task=RECORD, args=["rolled back"])
        raise RuntimeError
    assert ran == []


async def test_in_process_a_job_sent_from_a_web_process_runs_on_its_event_loop(
    transactional_db, in_process
):
    await database_sync_to_async(job_send)(task=RECORD, args=["on the loop"])
    for _ in range(100):
        if ran:
            break
        await asyncio.sleep(0.01)
    assert [(word, loop) for word, _, loop in ran] == [("on the loop", asyncio.get_running_loop())]


def test_on_a_worker_a_body_runs_on_the_process_one_loop_and_waits_for_it(in_process):
    # apply() runs the task as a worker does (not called directly).
    first = record.apply(args=["one"]).get()
    second = record.apply(args=["two"]).get()
    assert (first, second) == ("one", "two")
    assert {name for _, name, _ in ran} == {"arena-generation-loop"}
    assert ran[0][2] is ran[1][2]


@pytest.mark.skipif(not settings.REDIS_URL, reason="queues exist only with the Redis broker")
def test_with_celery_a_job_is_queued_on_its_queue_at_its_priority_once_committed(
    transactional_db, settings
):
    import redis

    settings.GENERATION_MODE = "celery"
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = "arena-test-jobs:3"
    client.delete(key, "arena-test-jobs")
    try:
        with transaction.atomic():
            job_send(task=RECORD, args=["queued"], queue="arena-test-jobs", priority=3)
            assert client.llen(key) == 0
        assert client.llen(key) == 1  # no worker serves this queue: it stays there
        message = json.loads(client.lindex(key, 0))
        assert message["headers"]["task"] == RECORD
        assert json.loads(base64.b64decode(message["body"]))[0] == ["queued"]
    finally:
        client.delete(key, "arena-test-jobs")


@pytest.mark.usefixtures("generation")
def test_a_battle_turn_sent_as_a_job_is_generated_by_a_worker_or_in_process(alice, two_models):
    battle = ready_battle(alice)
    statuses = Answer.objects.filter(turn__battle=battle).values_list("status", flat=True)
    assert set(statuses) == {Answer.Status.OK}


def test_every_module_celery_imports_loads_and_every_beat_entry_names_a_task():
    for module in settings.CELERY_IMPORTS:
        __import__(module)
    names = set(current_app.tasks)
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= names
