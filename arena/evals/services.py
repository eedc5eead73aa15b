"""Evaluation runs: checked and created from a prompt set, sent to the workers (a piece on
each pool queue, as battles are routed), and handed to another worker when one goes quiet.
Running them is ``arena.evals.running``."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from decimal import Decimal

from asgiref.sync import async_to_sync
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from arena.battles.models import Prompt
from arena.catalog.models import ModelEntry
from arena.core.errors import ServiceError
from arena.evals import running
from arena.evals.models import EvalPrompt, EvalRun, EvalWork

EVAL_TASK = "arena.evals.run"  # arena.evals.tasks, sent by name


def eval_enqueue(*, run_id: int) -> None:
    """Run it on the workers, at the lowest priority (EVALS_PRIORITY: after arena traffic and
    compare runs): one piece on each pool queue its models are served on, as battles are
    routed, the judge's queue doing the verdicts. In-process mode (no Redis), here and now."""
    if settings.GENERATION_MODE != "celery":
        async_to_sync(running.eval_execute)(run_id)
        return
    run = EvalRun.objects.select_related("baseline", "judge").get(pk=run_id)
    queues = {running.queue_of(m) for m in [run.baseline, run.judge, *run.contestants.all()]}
    now = timezone.now()
    for queue in sorted(queues):
        # Beating from now, so a task lost on its way is sent again by the sweep.
        EvalWork.objects.update_or_create(
            run=run, queue=queue, defaults={"heartbeat_at": now, "finished_at": None}
        )
        current_app.send_task(
            EVAL_TASK, args=[run_id, queue], queue=queue, priority=settings.EVALS_PRIORITY
        )


def evals_resume_stale(*, now=None) -> list[int]:
    """Pieces of running runs whose worker went quiet (killed): sent again, to carry on where
    they were (a whole run that stopped beating, to the workers). The runs sent."""
    now = now or timezone.now()
    quiet = timedelta(seconds=settings.EVALS_STALE_S)
    stale = EvalWork.objects.filter(
        run__status=EvalRun.Status.RUNNING, finished_at=None, heartbeat_at__lt=now - quiet
    )
    sent = []
    for work in stale:
        if work.queue == running.ALL:
            work.delete()
            eval_enqueue(run_id=work.run_id)
        else:
            # Marked as beating now, so the next sweep gives the new worker time to start.
            work.heartbeat_at = now
            work.save(update_fields=["heartbeat_at"])
            current_app.send_task(
                EVAL_TASK, args=[work.run_id, work.queue], queue=work.queue,
                priority=settings.EVALS_PRIORITY,
            )  # fmt: skip
        sent.append(work.run_id)
    return sorted(set(sent))


def prompts_select(*, category: str = "", language: str = "", limit: int = 0) -> list[Prompt]:
    """Curated, active prompts chosen by category and language (empty: any), oldest first."""
    chosen = Prompt.objects.filter(active=True, source=Prompt.Source.CURATED)
    if category:
        chosen = chosen.filter(category=category)
    if language:
        chosen = chosen.filter(language=language)
    chosen = chosen.order_by("pk")
    return list(chosen[:limit] if limit else chosen)


def prompts_from_jsonl(data: bytes) -> list[tuple[str, str]]:
    """(text, category) pairs from JSONL, one {"text": ..., "category": ...} a line; every bad
    line is named, and nothing is taken unless all are good."""
    rows, problems = [], []
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise ServiceError("bad_prompts", "The prompt file is not UTF-8 text.") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg})")
            continue
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            problems.append(f'line {number}: needs a "text" string')
            continue
        category = row.get("category") or ""
        if not isinstance(category, str) or len(category) > 64:
            problems.append(f"line {number}: category must be a string of at most 64 characters")
            continue
        rows.append((text, category))
    if problems:
        raise ServiceError("bad_prompts", "; ".join(problems[:10]))
    return rows


def eval_check(
    *,
    prompts: list[tuple[str, str]],
    model_ids: list[int],
    baseline_id: int,
    judge_id: int,
    params: dict,
) -> dict[int, ModelEntry]:
    """Why such a run cannot be made (a ServiceError), or the models it names, by id."""
    if not prompts:
        raise ServiceError("no_prompts", "No prompts match: an evaluation needs at least one.")
    found = ModelEntry.objects.in_bulk([*model_ids, baseline_id, judge_id])
    for pk in [*model_ids, baseline_id, judge_id]:
        if pk not in found:
            raise ServiceError("unknown_model", f"No model with id {pk}.")
    if baseline_id in model_ids:
        raise ServiceError("baseline_in_models", "The baseline is compared with; not a contestant.")
    if not model_ids:
        raise ServiceError("no_models", "Name at least one model to evaluate.")
    for model in (found[pk] for pk in [*model_ids, baseline_id]):
        for param in model.params_unsupported(params):
            raise ServiceError(
                "param_unsupported", f"{model.public_name} does not support {param!r}."
            )
    return found


@transaction.atomic
def eval_create(
    *,
    user: User,
    name: str,
    prompts: list[tuple[str, str]],
    model_ids: list[int],
    baseline_id: int,
    judge_id: int,
    params: dict | None = None,
    budget: Decimal | None = None,
    max_judge_calls: int | None = None,
    seed: int = 0,
    public: bool = False,
) -> EvalRun:
    """A run of ``prompts`` ((text, category) pairs, copied in) for these models against the
    baseline; nothing is generated yet (``eval_execute`` does it)."""
    params = {k: v for k, v in (params or {}).items() if v is not None}
    found = eval_check(
        prompts=prompts, model_ids=model_ids, baseline_id=baseline_id, judge_id=judge_id,
        params=params,
    )  # fmt: skip
    run = EvalRun.objects.create(
        name=name,
        created_by=user,
        baseline=found[baseline_id],
        judge=found[judge_id],
        params=params,
        seed=seed,
        budget=budget,
        max_judge_calls=max_judge_calls,
        public=public,
    )
    run.contestants.set(model_ids)
    EvalPrompt.objects.bulk_create(
        EvalPrompt(run=run, index=i, text=text, category=category)
        for i, (text, category) in enumerate(prompts)
    )
    return run


def seed_from(value: int | None) -> int:
    return value if value is not None else random.SystemRandom().randrange(2**31)
