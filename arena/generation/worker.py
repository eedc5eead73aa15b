"""One answer end to end, as the Celery task and the in-process runner both run it.

The database is touched once before the stream (claim) and once after it (finish), never per
token; the text goes to the answer's stream (``streams``), coalesced, then its terminal entry.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Coroutine
from dataclasses import replace
from functools import partial
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from arena.generation import services
from arena.generation.runner import Coalescer, stream_answer
from arena.generation.streams import answer_streams, stream_key

log = logging.getLogger(__name__)

# Claim and finish run on the loop's thread pool, not on asgiref's one thread-sensitive thread:
# they touch only their own answer, and many answers stream in one loop at once.
_claim = database_sync_to_async(services.answer_claim, thread_sensitive=False)
_finish = database_sync_to_async(services.answer_finish, thread_sensitive=False)


async def answer_generate(answer_id: int) -> None:
    """Generate one answer. Safe to call twice: a finished answer is left alone."""
    job = await _claim(answer_id=answer_id)
    if job is None:
        return
    streams = answer_streams()
    key = stream_key(battle_id=job.battle_id, answer_id=answer_id)
    if job.abandoned:
        await streams.finish(key, job.abandoned)
        return

    coalescer = Coalescer(partial(streams.append, key))
    conf = settings.ARENA
    result = await stream_answer(
        job.backend,
        job.request,
        on_delta=coalescer.add,
        max_chars=conf["ANSWER_MAX_CHARS"],
        timeout_s=conf["TURN_DEADLINE_S"],
    )
    try:
        await coalescer.flush()
    except Exception:
        # Text the rater never got cannot make a complete answer: it fails, and so the battle.
        log.exception("writing answer %s's stream failed", answer_id)
        result = replace(
            result,
            status="partial" if result.text else "error",
            error_kind="server",
            error_message="The answer could not be passed on to the rater.",
        )
    status = await _finish(answer_id=answer_id, result=result)
    try:
        await streams.finish(key, status)
    except Exception:  # the battle is decided in the database; a viewer's deadline ends it
        log.exception("writing answer %s's final entry failed", answer_id)


async def answers_generate(answer_ids: list[int]) -> None:
    """Generate several answers at once, each as ``answer_generate`` does; all of them end
    before this returns, and the first failure is raised then."""
    results = await asyncio.gather(
        *(answer_generate(pk) for pk in answer_ids), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result


# One event loop per worker process streams every answer the process is given: one Redis
# connection pool and one pooled HTTP client (keep-alive to each replica) for all of them,
# instead of a loop, a Redis connection and a client per task.
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


def run_in_worker_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on this process's generation loop and wait for it, from any thread."""
    return asyncio.run_coroutine_threadsafe(coro, _worker_loop()).result()
