"""Reads of compare mode for its pages: a run for its owner, the form's choices and values,
a run's progress, the run page's comparison (ranks, the judge's reasons per answer), the
history."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import User
from arena.catalog.costs import cost_display
from arena.catalog.models import ModelEntry
from arena.compare import exports
from arena.compare.access import judges_allowed, sees_every_run
from arena.compare.models import CompareAnswer, CompareRun
from arena.compare.services import MAX_MODELS, PARAMS, default_judge, stream_key
from arena.compare.spend import spend_summary
from arena.generation.streams import answer_streams
from arena.judges.rubric import TIE_MARGIN

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


UNENDED = (CompareAnswer.Status.PENDING, CompareAnswer.Status.RUNNING)
SCORE_SCALE = (
    "The judge scores each answer 1-5 on every criterion; the overall score weights them by the "
    "rubric into 0 (all 1s) to 1 (all 5s). Rank follows the overall score; when the top two are "
    "within {margin}, a head-to-head in both orders decides."
)


def _ranks(overall: dict[str, float], winner: str, head_to_head: list[str]) -> dict[str, int]:
    """Rank by overall score (equal scores share a rank); the judge's winner first, and a
    head-to-head that ended in a tie puts its two at rank 1 together."""
    order = sorted(overall, key=lambda label: (label != winner, -overall[label], label))
    tied_top = set(order[:2]) if winner == "tie" and head_to_head else set()
    ranks: dict[str, int] = {}
    for i, label in enumerate(order):
        if label in tied_top:
            ranks[label] = 1
        elif i and label != winner and overall[label] == overall[order[i - 1]]:
            ranks[label] = ranks[order[i - 1]]
        else:
            ranks[label] = i + 1
    return ranks


def _criteria(rubric: list[dict], judged: dict) -> list[dict]:
    """Each criterion of the rubric with the judge's 1-5 score and reason for one answer
    (None and "" where that criterion could not be scored)."""
    out = []
    for criterion in rubric:
        got = judged.get(criterion["name"]) or {}
        out.append(
            {
                "name": criterion["name"],
                "weight_pct": round(float(criterion["weight"]) * 100),
                "score": got.get("score"),
                "reason": got.get("reason", ""),
            }
        )
    return out


def total_shown(total: dict, *, part: bool = False) -> str:
    """A total (``totals.Total.as_data``) as the page says it: the amount and its status, an
    unknown part making the amount a lower bound; ``part``: a short form beside the run's."""
    status = total.get("cost_status") or ""
    if not status:
        return "none"
    if status == "example":
        return "mock prices" if part else "example pricing (mock): not a real cost"
    if status == "unknown":
        missing = (total.get("counts") or {}).get("unknown", 0)
        return f"at least {total.get('cost')} (unknown: {missing} without a price)"
    return f"{total.get('cost')} ({status})"


def _totals_shown(totals: dict | None, *, ended: bool) -> dict | None:
    """The run's total, and its answers' and judge's, once the run has ended (answers still
    streaming have no cost yet)."""
    if not totals or not ended:
        return None
    judge = totals.get("judge") or {}
    calls = judge.get("calls") or 0
    tokens = ""
    if calls and judge.get("input_tokens") is not None:
        estimated = ", estimated" if judge.get("tokens_estimated") else ""
        tokens = f", {judge['input_tokens']} in / {judge.get('output_tokens')} out tokens"
        tokens += estimated
    plural = "" if calls == 1 else "s"
    return {
        "run": total_shown(totals.get("run") or {}),
        "answers": total_shown(totals.get("answers") or {}, part=True),
        "judge": f"{total_shown(judge, part=True)} ({calls} call{plural}{tokens})",
    }


def run_page(*, run: CompareRun) -> dict:
    """What the run page shows: the saved run (``exports.run_data``, what the exports carry),
    each answer's rank, the winner's mark and the judge's score and reason per criterion. An
    answer still streaming shows the text that has arrived (a page opened, or reloaded after
    Cancel, before its worker has saved it)."""
    data = exports.run_data(run)
    verdict = data["verdict"]
    overall = verdict.get("overall") or {}
    winner = verdict.get("winner", "")
    ranks = _ranks(overall, winner, verdict.get("head_to_head") or [])
    streams = None
    for answer in data["answers"]:
        answer["rank"] = ranks.get(answer["label"])
        answer["winner"] = bool(winner) and answer["label"] == winner
        answer["criteria"] = _criteria(data["rubric"], answer["judged"] or {})
        answer["live"] = answer["status"] in UNENDED
        if answer["live"] and not answer["text"]:
            streams = streams or answer_streams()
            try:
                answer["text"] = streams.text(stream_key(run_id=run.pk, slot=answer["slot"]))
            except Exception:  # the streams are away: the saved text comes at the end
                pass
    live = run.status not in ENDED
    data["totals_shown"] = _totals_shown(data.get("totals"), ended=not live)
    data["scale"] = SCORE_SCALE.format(margin=TIE_MARGIN)
    # The run's clock for the live page: how long it has been going, by the server's time.
    data["elapsed_ms"] = (timezone.now() - run.created_at).total_seconds() * 1000 if live else None
    data["columns"] = min(len(data["answers"]), 4) or 1
    return data


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
        "images": [],
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
            images=[i["sha256"] for i in previous.images],
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
        "images": post.getlist("image_hashes"),
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
