"""The judge on one compare run: which answers it may judge, its rubric scores (the judges
room's ``rubric`` strategy), every call recorded for audit as it ends (JudgeCall: what the
daily budget counts), and the verdict."""

from __future__ import annotations

from dataclasses import asdict, fields

from channels.db import database_sync_to_async
from django.conf import settings

from arena.catalog.models import ModelEntry
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall
from arena.images.selectors import images_sent
from arena.judges import rubric, rules
from arena.judges.calls import Call
from arena.judges.registry import judge_answers

MOCK_JUDGE_NOTE = "mock scores (deterministic, not a real judge)"
FAILED_NOTE = "not judged: the answer failed"
PARTIAL_NOTE = "not judged: the answer is partial"
FAMILY_NOTE = "not judged: same family as judge"
TRUNCATED_NOTE = "not judged: the answer stopped at the length limit (COMPARE_JUDGE_TRUNCATED)"


# A Call's fields a JudgeCall row does not take as they are: its cost at list price (the row's
# cost is the usage's, what the call was counted at) and the usage, whose fields are Spend's.
_NOT_KEPT = ("cost", "usage")


def _record(run: CompareRun, call: Call) -> None:
    kept = {f.name: getattr(call, f.name) for f in fields(call) if f.name not in _NOT_KEPT}
    JudgeCall.objects.create(run=run, **kept, **asdict(call.usage))


def scope_line(answers: list[CompareAnswer]) -> str:
    """Which answers the judge scored, which of them were cut at the length limit, and which
    it did not score and why: one line for the page and the exports."""
    judged = [a.label for a in answers if not a.not_judged]
    cut = [a.label for a in answers if not a.not_judged and a.truncated]
    line = f"Judged {len(judged)} of {len(answers)} answers"
    line += f": {', '.join(sorted(judged))}" if judged else ""
    if cut:
        line += f" ({', '.join(sorted(cut))} truncated at the length limit, judged as it stands)"
    skipped = sorted((a.label, a.not_judged.removeprefix("not judged: ")) for a in answers
                     if a.not_judged)  # fmt: skip
    if skipped:
        line += "; not judged: " + "; ".join(f"{label} ({why})" for label, why in skipped)
    return line + "."


async def judge_run(run: CompareRun, answers: list[CompareAnswer]) -> dict:
    """Judge the run's answers once every stream has ended; the verdict to save."""
    terms = await database_sync_to_async(rules.mask_terms)()
    judged: dict[str, str] = {}
    for answer in answers:
        if answer.status == CompareAnswer.Status.ERROR:
            answer.not_judged = FAILED_NOTE
        elif answer.status != CompareAnswer.Status.OK:
            answer.not_judged = PARTIAL_NOTE
        elif rules.family_barred(run.judge, answer.model):
            answer.not_judged = FAMILY_NOTE
        elif answer.truncated and not settings.COMPARE["JUDGE_TRUNCATED"]:
            answer.not_judged = TRUNCATED_NOTE
        else:
            judged[answer.label] = answer.text
    found = await judge_answers(
        "rubric", judge=run.judge, prompt=run.prompt, answers=judged, terms=terms,
        on_call=lambda call: database_sync_to_async(_record)(run, call),
        rubric=rubric.rubric_from(run.rubric), seed=run.seed,
        images=await database_sync_to_async(images_sent)(run.images),
    )  # fmt: skip
    outcome = found.outcome
    for answer in answers:
        answer.judged = outcome.reasons.get(answer.label, {})
    await database_sync_to_async(
        lambda: CompareAnswer.objects.bulk_update(answers, ["judged", "not_judged"])
    )()
    return {
        "overall": outcome.overall,
        "missing": outcome.missing,
        "head_to_head": outcome.head_to_head,
        "winner": outcome.winner,
        "scope": scope_line(answers),
        "truncated": sorted(a.label for a in answers if a.truncated),
        "temperature_dropped": found.temperature_dropped,
        "mock": MOCK_JUDGE_NOTE if run.judge.backend == ModelEntry.Backend.MOCK else "",
    }
