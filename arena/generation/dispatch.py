"""Where generation runs: Celery workers (with Redis) or asyncio tasks in this process.

Called from ``transaction.on_commit`` inside services, so a task never sees an uncommitted
battle. In-process mode hands the coroutine to the event loop of the web process, since the
in-memory answer streams are read only by consumers in the same process.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Callable, Coroutine
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from django.conf import settings

from arena.core.jobs import job_send

# The task that streams a turn's answers (arena.generation.tasks), sent by name so that the
# tasks, which enqueue too, can import this module.
GENERATE_TURN = "arena.tasks.generate_turn"

_running: set[asyncio.Task] = set()


def _outer_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop that called us through ``sync_to_async``, if any."""
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    loop = getattr(local, "main_event_loop", None)
    return loop if loop is not None and loop.is_running() else None


def _start_task(make: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    task = asyncio.get_running_loop().create_task(make())
    _running.add(task)
    task.add_done_callback(_running.discard)


def in_background(make: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    """In-process mode: run the coroutine ``make()`` on the event loop of the web process that
    called (its in-memory streams are read there), or, for plain synchronous callers
    (management commands, scripts), here and now."""
    loop = _outer_loop()
    if loop is not None:
        # A fresh context: the caller's would tell asgiref that its sync thread is still busy.
        loop.call_soon_threadsafe(_start_task, make, context=contextvars.Context())
    else:
        async_to_sync(make)()


def generation_enqueue(*, answer_ids: list[int], queue: str = "") -> None:
    """Generate these answers, started together. ``queue``: their models' pool queue (the
    backend settings' "queue"), so workers can be sized per GPU pool; empty for the default
    generation queue."""
    job_send(
        task=GENERATE_TURN, args=[answer_ids], queue=queue, priority=settings.GENERATION_PRIORITY
    )
