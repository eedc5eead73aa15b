"""The pieces of an evaluation run, as leases: one ``EvalWork`` row a pool queue (``ALL``: the
whole run in one place). A worker takes a piece only if no live worker holds it, beats while it
works, and stops the moment another has taken it over; so a task delivered twice, or sent again
by the sweep while its first copy still runs, never makes anything twice."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from arena.catalog.models import ModelEntry
from arena.evals import budget
from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict, EvalWork

ALL = "*"  # the whole run in one place (the CLI, in-process mode)
MAX_TAKES = 3  # a piece whose worker stopped this many times fails the run


def queue_of(model: ModelEntry) -> str:
    """The queue a model's answers go to: its pool's (backend settings' "queue"), as battles."""
    return model.pool_queue or settings.GENERATION_QUEUE


def pieces_open(*, run: EvalRun) -> list[str]:
    """A piece for each queue the run's models are served on, all made before any is sent
    (the judge's piece must see the others), beating from now so a task lost on its way is
    sent again by the sweep. The queues."""
    everyone = [run.baseline, run.judge, *run.contestants.all()]
    queues = sorted({queue_of(m) for m in everyone})
    now = timezone.now()
    with transaction.atomic():
        for queue in queues:
            EvalWork.objects.get_or_create(run=run, queue=queue, defaults={"heartbeat_at": now})
    return queues


def _stale(now) -> object:
    return now - timedelta(seconds=settings.EVALS_STALE_S)


def _live(work: EvalWork, stale) -> bool:
    return bool(work.owner) and work.finished_at is None and work.heartbeat_at >= stale


def piece_take(
    *, run_id: int, queue: str, token: str
) -> tuple[EvalRun, list[ModelEntry], bool] | None:
    """Take this piece for ``token`` and make it ready to resume: rows a killed worker left
    half done go back to be done. None when another worker holds it (or a whole-run piece
    overlaps it), it is finished, or the run has failed; else the run, the models whose
    answers the piece makes, and whether it judges."""
    now = timezone.now()
    stale = _stale(now)
    with transaction.atomic():
        run = (
            EvalRun.objects.select_for_update(of=("self",))
            .select_related("baseline", "judge")
            .get(pk=run_id)
        )
        if run.status not in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING):
            return None
        works = {w.queue: w for w in EvalWork.objects.select_for_update().filter(run=run)}
        mine = works.get(queue)
        if mine is not None and (mine.finished_at is not None or _live(mine, stale)):
            return None
        overlapping = [w for q, w in works.items() if q != queue and (ALL in (q, queue))]
        if any(_live(w, stale) for w in overlapping):
            return None
        takes = (mine.takes if mine else 0) + 1
        if takes > MAX_TAKES:
            run.status = EvalRun.Status.FAILED
            run.note = f"Failed: its piece on queue {queue} stopped {MAX_TAKES} times."
            run.finished_at = now
            run.save(update_fields=["status", "note", "finished_at"])
            return None
        EvalWork.objects.update_or_create(
            run=run, queue=queue,
            defaults={"owner": token, "heartbeat_at": now, "finished_at": None, "takes": takes},
        )  # fmt: skip
        everyone = [run.baseline, *run.contestants.all()]
        models = everyone if queue == ALL else [m for m in everyone if queue_of(m) == queue]
        judges = queue in (ALL, queue_of(run.judge))
        half_done = EvalAnswer.objects.filter(prompt__run=run, status=EvalAnswer.Status.RUNNING)
        half_done.filter(model__in=models).delete()
        if judges:
            EvalVerdict.objects.filter(prompt__run=run, done=False).delete()
        run.status = EvalRun.Status.RUNNING
        run.started_at = run.started_at or now
        run.save(update_fields=["status", "started_at"])
    return run, models, judges


def piece_beat(*, run_id: int, queue: str, token: str) -> bool:
    """Beat, renewing the holds of the piece's units in flight (``budget.holds_renew``); False
    when another worker has taken the piece over (this one must stop, its holds left to
    lapse)."""
    held = EvalWork.objects.filter(run_id=run_id, queue=queue, owner=token)
    if not held.update(heartbeat_at=timezone.now()):
        return False
    budget.holds_renew(run_id=run_id, owner=token)
    return True


def piece_release(*, run_id: int, queue: str, token: str) -> None:
    """Give the piece up unfinished (a worker shutting down), for the next to take at once."""
    EvalWork.objects.filter(run_id=run_id, queue=queue, owner=token).update(
        owner="", takes=F("takes") - 1
    )


def piece_finish(*, run_id: int, queue: str, token: str) -> None:
    EvalWork.objects.filter(run_id=run_id, queue=queue, owner=token).update(
        finished_at=timezone.now()
    )


def pieces_others_working(*, run_id: int, queue: str) -> bool:
    """Whether a piece on another queue may still make answers."""
    return EvalWork.objects.filter(run_id=run_id, finished_at=None).exclude(queue=queue).exists()


def pieces_stale(*, now=None) -> list[EvalWork]:
    """Unfinished pieces of live runs whose worker went quiet (or whose task never started),
    not sent again in the last EVALS_STALE_S: they are marked as sent now."""
    now = now or timezone.now()
    stale = _stale(now)
    with transaction.atomic():
        found = list(
            EvalWork.objects.select_for_update(skip_locked=True)
            .filter(
                run__status__in=(EvalRun.Status.QUEUED, EvalRun.Status.RUNNING),
                finished_at=None,
                heartbeat_at__lt=stale,
            )
            .filter(Q(resent_at=None) | Q(resent_at__lt=stale))
        )
        EvalWork.objects.filter(pk__in=[w.pk for w in found]).update(resent_at=now)
    return found
