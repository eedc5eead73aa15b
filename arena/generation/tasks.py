from __future__ import annotations

from asgiref.sync import async_to_sync
from celery import shared_task

from arena.backends.http import close_shared_client
from arena.generation.worker import answer_generate


async def _generate(answer_id: int) -> None:
    try:
        await answer_generate(answer_id)
    finally:
        await close_shared_client()  # this task's event loop ends with it


# The name predates the generation package; queued tasks and routes refer to it.
@shared_task(
    name="arena.tasks.generate", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def generate(answer_id: int) -> None:
    """Stream one answer; idempotent, so a redelivery cannot write it twice."""
    async_to_sync(_generate)(answer_id)
