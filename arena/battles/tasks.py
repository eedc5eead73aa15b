from __future__ import annotations

from celery import shared_task

from arena.battles import answers, sweep
from arena.core.jobs import job_run


@shared_task(
    name=answers.GENERATE_TURN,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def generate_turn(answer_ids: list[int]) -> None:
    """Stream a turn's answers (those on one queue) side by side, started together, so the
    pacer's two panes do not wait on a gap between two tasks' starts. Idempotent, so a
    redelivery cannot write an answer twice."""
    job_run(lambda: answers.answers_generate(answer_ids))


# The name predates the battles package; beat's schedule (settings) refers to it.
@shared_task(name="arena.tasks.battles_sweep", ignore_result=True)
def battles_sweep() -> None:
    """Every few seconds (Celery beat): see sweep.battles_sweep."""
    sweep.battles_sweep()
