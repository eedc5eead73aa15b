"""Evaluation runs: checked and created from a prompt set, sent to the workers (a piece on
each pool queue, as battles are routed), and handed to another worker when one goes quiet.
Running them is ``arena.evals.running``."""

from __future__ import annotations

import random
from decimal import Decimal

from django.conf import settings
from django.db import transaction

from accounts.models import User
from arena.battles.prompt_files import parse_prompts
from arena.catalog.models import ModelEntry
from arena.catalog.services import images_check, params_check, params_valid
from arena.core.errors import ServiceError
from arena.core.jobs import job_send
from arena.evals import running, works
from arena.evals.models import EvalPrompt, EvalRun
from arena.images.selectors import image_records, images_for_turn
from arena.judges.rules import family_barred
from arena.records.models import Prompt

BUDGET_MAX = Decimal("100000000")  # what EvalRun.budget holds (12 digits, 4 after the point)


def _send(run_id: int, queue: str) -> None:
    job_send(
        task=running.EVAL_TASK,
        args=[run_id, queue],
        queue="" if queue == works.ALL else queue,
        priority=settings.EVALS_PRIORITY,
    )


def eval_enqueue(*, run_id: int) -> None:
    """Run it on the workers, at the lowest priority (EVALS_PRIORITY: after arena traffic and
    compare runs): one piece on each pool queue its models are served on, as battles are
    routed, the judge's queue doing the verdicts. In-process mode (no Redis): the whole run
    as one piece, since no worker per pool would make the answers the judge's piece waits for."""
    if settings.GENERATION_MODE != "celery":
        _send(run_id, works.ALL)
        return
    run = EvalRun.objects.select_related("baseline", "judge").get(pk=run_id)
    for queue in works.pieces_open(run=run):
        _send(run_id, queue)


def evals_resume_stale(*, now=None) -> list[int]:
    """Pieces of live runs whose worker went quiet (killed), or whose task never started:
    sent again, to carry on where they were (a whole run that stopped beating goes to the
    workers, a piece a queue). The runs sent."""
    sent = set()
    for work in works.pieces_stale(now=now):
        if work.queue == works.ALL:
            work.delete()
            eval_enqueue(run_id=work.run_id)
        else:
            _send(work.run_id, work.queue)
        sent.add(work.run_id)
    return sorted(sent)


def prompts_select(*, category: str = "", language: str = "", limit: int = 0) -> list[Prompt]:
    """Curated, active prompts chosen by category and language (empty: any), oldest first."""
    chosen = Prompt.objects.filter(active=True, source=Prompt.Source.CURATED)
    if category:
        chosen = chosen.filter(category=category)
    if language:
        chosen = chosen.filter(language=language)
    chosen = chosen.order_by("pk")
    return list(chosen[:limit] if limit else chosen)


def prompts_from_file(data: bytes, *, filename: str = "prompts.jsonl") -> list[tuple[str, str]]:
    """(text, category) pairs from a prompt file, read as curated imports are (JSONL, or CSV
    by its name: ``battles.prompt_files``); every bad line is named, and nothing is taken
    unless all are good."""
    rows, rejected = parse_prompts(data, filename=filename)
    if rejected:
        problems = "; ".join(f"line {number}: {why}" for number, why in rejected[:10])
        raise ServiceError("bad_prompts", problems)
    return [(row["text"], row["category"]) for _, row in rows]


def eval_check(*, run: EvalRun, prompts: list[tuple[str, str]], model_ids: list[int]) -> None:
    """Why ``run``, not saved yet, cannot be made with these prompts and contestants (a
    ServiceError): its baseline, judge, parameters, limits, and images (which every model and
    the judge must read) are read from the run itself."""
    baseline_id, judge_id = run.baseline_id, run.judge_id
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
    judged = [found[pk] for pk in [*model_ids, baseline_id]]
    params_check(models=judged, params=run.params)
    if run.images:
        images_check(models=judged, judge=found[judge_id])
    for model in judged:
        if family_barred(found[judge_id], model):
            raise ServiceError(
                "judge_family",
                f"{model.public_name} is of the judge's own family, which it may not judge "
                "(COMPARE_JUDGE_SAME_FAMILY): choose another judge.",
            )
    budget = run.budget
    if budget is not None and (not budget.is_finite() or not 0 <= budget < BUDGET_MAX):
        raise ServiceError("bad_budget", f"A budget is a number of USD from 0 to {BUDGET_MAX}.")
    if run.max_judge_calls is not None and run.max_judge_calls < 1:
        raise ServiceError("bad_budget", "The judge calls allowed must be 1 or more.")


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
    images: object = None,
) -> EvalRun:
    """A run of ``prompts`` ((text, category) pairs, copied in) for these models against the
    baseline; nothing is generated yet (``eval_execute`` does it)."""
    # The run as it will be saved, checked before it is.
    run = EvalRun(
        name=name,
        created_by=user,
        baseline_id=baseline_id,
        judge_id=judge_id,
        params=params_valid(params=params or {}),
        seed=seed,
        budget=budget,
        max_judge_calls=max_judge_calls,
        public=public,
        images=image_records(images_for_turn(user=user, hashes=images)),
    )
    eval_check(run=run, prompts=prompts, model_ids=model_ids)
    run.save()
    run.contestants.set(model_ids)
    EvalPrompt.objects.bulk_create(
        EvalPrompt(run=run, index=i, text=text, category=category)
        for i, (text, category) in enumerate(prompts)
    )
    return run


def seed_from(value: int | None) -> int:
    return value if value is not None else random.SystemRandom().randrange(2**31)
