from __future__ import annotations

from celery import shared_task

from arena.compare import services
from arena.core.jobs import job_run


@shared_task(name=services.COMPARE_TASK, acks_late=True, ignore_result=True)
def compare_run(run_id: str, slots: list[int] | None = None) -> None:
    """Stream a compare run's slots of one pool queue on the worker process's generation loop
    (beside the battles'); the last to end judges. Running it twice leaves it alone."""
    job_run(lambda: services.compare_execute(run_id, slots))


@shared_task(name="arena.compare.sweep", ignore_result=True)
def compare_sweep() -> None:
    """Every minute (Celery beat): runs whose worker died are failed with what had arrived."""
    services.compare_runs_fail_stale()
