from __future__ import annotations

from celery import shared_task

from arena.core.jobs import job_run
from arena.evals import battle_judging, running, services


@shared_task(name=running.EVAL_TASK, acks_late=True, ignore_result=True)
def eval_run(run_id: int, queue: str = running.ALL) -> None:
    """Run (or carry on with) this queue's piece of an evaluation run on the worker's
    generation loop; what is done already is never done again."""
    job_run(lambda: running.eval_execute(run_id, queue=queue))


@shared_task(name=battle_judging.CALIBRATE_TASK, acks_late=True, ignore_result=True)
def calibrate(verdict_ids: list[int]) -> None:
    """The judge on a claimed batch of voted battles; a verdict written already is skipped."""
    job_run(lambda: battle_judging.verdicts_judge(verdict_ids=verdict_ids))


@shared_task(name="arena.evals.sweep", ignore_result=True)
def evals_sweep() -> None:
    """Every 10 s (Celery beat): a run whose worker went quiet is sent to another; with
    calibration on, newly voted battles are sent to the judge."""
    services.evals_resume_stale()
    battle_judging.calibration_sweep()
