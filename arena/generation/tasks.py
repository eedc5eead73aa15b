from __future__ import annotations

from celery import shared_task

from arena.core.jobs import job_run
from arena.generation import services
from arena.generation.dispatch import GENERATE_TURN, generation_enqueue
from arena.generation.worker import answers_generate


@shared_task(
    name=GENERATE_TURN,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def generate_turn(answer_ids: list[int]) -> None:
    """Stream a turn's answers (those on one queue) side by side, started together, so the
    pacer's two panes do not wait on a gap between two tasks' starts. Idempotent, so a
    redelivery cannot write an answer twice."""
    job_run(lambda: answers_generate(answer_ids))


@shared_task(name="arena.tasks.battles_sweep", ignore_result=True)
def battles_sweep() -> None:
    """Every few seconds (Celery beat): answers whose worker stopped are handed to another
    worker or end their battle, no battle stays generating past its deadline, and one waiting
    for its rater ends once nobody can be shown it again."""
    for answer_id, queue in services.answers_recover_stalled():
        generation_enqueue(answer_ids=[answer_id], queue=queue)
    services.battles_void_stuck()
    services.battles_end_unwatched()
