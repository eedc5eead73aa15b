"""Reads of compare mode for its pages: a run for its owner, the form's choices and values,
a run's progress, the history."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from accounts.models import User
from arena.catalog.costs import cost_display
from arena.catalog.models import ModelEntry
from arena.compare.access import judges_allowed, sees_every_run
from arena.compare.models import CompareRun
from arena.compare.services import MAX_MODELS, PARAMS, default_judge
from arena.compare.spend import spend_summary

ENDED = {CompareRun.Status.DONE, CompareRun.Status.FAILED, CompareRun.Status.CANCELLED}


def run_for(*, run_id: object, user: User) -> CompareRun | None:
    """The run, if this user may see it: their own, or any with the view_comparerun
    permission."""
    runs = CompareRun.objects.select_related("judge", "previous")
    if not sees_every_run(user=user):
        runs = runs.filter(user=user)
    try:
        return runs.filter(pk=run_id).first()
    except (ValidationError, ValueError):  # not a run id at all
        return None


def run_fresh(run_id: object) -> CompareRun:
    return CompareRun.objects.select_related("judge").get(pk=run_id)


def run_progress(*, run_id: object) -> tuple[str, list[dict]]:
    """The run's status and each answer as saved so far, for the live page."""
    run = CompareRun.objects.get(pk=run_id)
    answers = []
    for a in run.answers.select_related("model"):
        answers.append(
            {
                "slot": a.slot,
                "status": a.status,
                "text": a.text,
                "ttft_ms": a.ttft_ms,
                "total_ms": a.total_ms,
                "output_tokens": a.output_tokens,
                "tokens_estimated": a.tokens_estimated,
                "cost": cost_display(model=a.model, cost=a.cost, cost_status=a.cost_status),
                "finish_reason": a.finish_reason,
                "error": a.error_message,
            }
        )
    return run.status, answers


def form_choices(*, user: User) -> dict:
    return {
        "models": ModelEntry.objects.filter(active=True).order_by("public_name"),
        "judges": judges_allowed().order_by("public_name"),
        "max_models": MAX_MODELS,
        "param_names": PARAMS,
        "spend": spend_summary(user=user),
    }


def _blank() -> dict:
    judge = default_judge()
    return {
        "prompt": "",
        "system_prompt": "",
        "model_ids": [],
        "params": {},
        "judge_id": judge.pk if judge else None,
        "seed": None,
        "previous": "",
    }


def form_defaults(*, previous_id: object, user: User) -> dict:
    """An empty form, or the one of an earlier run (to swap a model and run again)."""
    form = _blank()
    previous = run_for(run_id=previous_id, user=user) if previous_id else None
    if previous is not None:
        form.update(
            prompt=previous.prompt,
            system_prompt=previous.system_prompt,
            model_ids=list(previous.answers.order_by("slot").values_list("model_id", flat=True)),
            params=previous.params,
            judge_id=previous.judge_id,
            # Someone else's run (seen with view_comparerun) fills the form but is not linked:
            # a run's "previous" is one of its owner's own.
            previous=str(previous.pk) if previous.user_id == user.pk else "",
        )
    return form


def form_from_post(post) -> tuple[dict, str]:
    """The form as typed, to show again on a refusal (the seed as typed, ids as numbers), and
    the first field that could not be read ("" when none): the view refuses that itself,
    rather than quietly dropping a model or the judge."""
    problem = ""
    model_ids = []
    for raw in post.getlist("models"):
        try:
            model_ids.append(int(raw))
        except ValueError:
            problem = problem or "A model picked is not one of the listed: pick from the list."
    judge_id = None
    if judge_raw := post.get("judge", "").strip():
        try:
            judge_id = int(judge_raw)
        except ValueError:
            problem = problem or "The judge is not one of the listed: pick one, or No judge."
    seed = post.get("seed", "").strip()
    if seed:
        try:
            int(seed)
        except ValueError:
            problem = problem or "The seed must be a whole number, or empty for a random one."
    form = {
        "prompt": post.get("prompt", ""),
        "system_prompt": post.get("system_prompt", ""),
        "model_ids": model_ids,
        "params": {name: post.get(name, "") for name in PARAMS},
        "judge_id": judge_id,
        "seed": seed,
        "previous": post.get("previous", ""),
    }
    return form, problem


def history(*, user: User) -> list[dict]:
    rows = []
    runs = CompareRun.objects.filter(user=user).prefetch_related("answers__model")
    for run in runs.order_by("-created_at")[:200]:
        answers = list(run.answers.all())
        names = {a.label: a.model.public_name for a in answers}
        winner = (run.verdict or {}).get("winner", "")
        rows.append(
            {
                "run": run,
                "models": [a.model.public_name for a in sorted(answers, key=lambda a: a.slot)],
                "winner": names.get(winner, "tie" if winner == "tie" else ""),
            }
        )
    return rows
