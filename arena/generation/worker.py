"""One answer end to end, as the Celery task and the in-process runner both run it.

The database is touched once before the stream (claim) and once after it (finish), never per
token; deltas travel on the battle's channel group, coalesced, each with a ``seq`` number.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from arena.generation import services
from arena.generation.runner import Coalescer, stream_answer


def battle_group(battle_id: object) -> str:
    """The channel group a battle's answers are published on."""
    return f"battle.{battle_id}"


async def answer_generate(answer_id: int) -> None:
    """Generate one answer. Safe to call twice: a finished answer is left alone."""
    job = await database_sync_to_async(services.answer_claim)(answer_id=answer_id)
    layer = get_channel_layer()
    if job is None:
        return
    group = battle_group(job.battle_id)
    if job.abandoned is not None:
        await layer.group_send(group, job.abandoned)
        return

    seq = 0

    async def publish(text: str) -> None:
        nonlocal seq
        seq += 1
        await layer.group_send(
            group, {"type": "answer.delta", "answer": answer_id, "seq": seq, "text": text}
        )

    coalescer = Coalescer(publish)
    conf = settings.ARENA
    result = await stream_answer(
        job.backend,
        job.request,
        on_delta=coalescer.add,
        max_chars=conf["ANSWER_MAX_CHARS"],
        timeout_s=conf["TURN_DEADLINE_S"],
    )
    await coalescer.flush()
    done = await database_sync_to_async(services.answer_finish)(answer_id=answer_id, result=result)
    await layer.group_send(group, done)
