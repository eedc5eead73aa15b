"""The one dispatcher: work sent by task name to Celery workers once the transaction that made
it commits, or, in the embedded default (no Redis), run in this process.

A task's body calls ``job_run`` with the coroutine it runs, so one body serves both: on a
worker it runs on the process's one generation loop; in process, on the event loop of the web
process that sent it (whose in-memory answer streams its consumers read), or here and now for
a plain synchronous caller (management commands, scripts, tests).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from celery import current_app, current_task
from django.conf import settings
from django.db import transaction

Make = Callable[[], Coroutine[Any, Any, Any]]


def job_send(*, task: str, args: list, queue: str = "", priority: int | None = None) -> None:
    """Run the task named ``task`` with ``args`` once the current transaction commits (at once
    outside one), so it never sees uncommitted rows. With Celery, on ``queue`` (a pool's own
    queue; empty for GENERATION_QUEUE) at ``priority`` (0 first, 9 last; None: the broker's
    default); embedded, its body in this process."""
    if settings.GENERATION_MODE == "celery":
        options: dict[str, Any] = {"queue": queue or settings.GENERATION_QUEUE}
        if priority is not None:
            options["priority"] = priority
        transaction.on_commit(lambda: current_app.send_task(task, args=args, **options))
        return
    transaction.on_commit(lambda: _task(task)(*args))


def _task(name: str) -> Any:
    """The registered task of that name; a web process imports the task modules (CELERY_IMPORTS)
    when it first runs one, as a worker does when it starts."""
    tasks = current_app.tasks
    if name not in tasks:
        for module in current_app.conf.imports:
            importlib.import_module(module)
    return tasks[name]


def job_run(make: Make) -> Any:
    """What a task's body calls to run the coroutine ``make()``: on a worker, on the process's
    one generation loop, waiting for it (its result); in process, as ``job_send`` says (None
    when it runs on the web process's loop, which does not wait)."""
    request = getattr(current_task, "request", None)
    if request is not None and not request.called_directly:  # a worker runs this task
        return asyncio.run_coroutine_threadsafe(make(), _worker_loop()).result()
    loop = _outer_loop()
    if loop is not None:
        # A fresh context: the caller's would tell asgiref that its sync thread is still busy.
        loop.call_soon_threadsafe(_start_task, make, context=contextvars.Context())
        return None
    return async_to_sync(_awaited)(make)


async def _awaited(make: Make) -> Any:
    return await make()


# One event loop per worker process runs every job the process is given: one Redis connection
# pool and one pooled HTTP client (keep-alive to each replica) for all of them, instead of a
# loop, a Redis connection and a client per task.
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0
_loop_lock = threading.Lock()


def _worker_loop() -> asyncio.AbstractEventLoop:
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid():  # a forked child starts its own
            _loop = asyncio.new_event_loop()
            _loop_pid = os.getpid()
            threading.Thread(
                target=_loop.run_forever, name="arena-generation-loop", daemon=True
            ).start()
        return _loop


_running: set[asyncio.Task] = set()


def _outer_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop that called us through ``sync_to_async``, if any."""
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    loop = getattr(local, "main_event_loop", None)
    return loop if loop is not None and loop.is_running() else None


def _start_task(make: Make) -> None:
    task = asyncio.get_running_loop().create_task(make())
    _running.add(task)
    task.add_done_callback(_running.discard)
