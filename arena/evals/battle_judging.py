"""Calibration's judging: the judge on arena battles after their human vote, both orders, kept
apart from the votes (``BattleVerdict``). Off unless CALIBRATION["JUDGE"] names a model; the
evaluation sweep then claims a batch of newly voted battles and sends it to a worker, at
evaluation priority. ``manage.py calibrate`` does the same for any judge, here and now."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Q
from django.utils import timezone

from arena.backends.base import Image
from arena.catalog.models import ModelEntry
from arena.catalog.selectors import model_by_name
from arena.core.errors import ServiceError
from arena.core.jobs import job_send
from arena.core.models import model_update
from arena.evals import works
from arena.evals.models import BattleVerdict
from arena.images.selectors import images_sent
from arena.integrity.selectors import counted_votes
from arena.judges import pairwise, rules
from arena.judges.registry import judge_answers
from arena.records.models import Answer, Turn

CALIBRATE_TASK = "arena.evals.calibrate"  # the task (arena.evals.tasks) that runs verdicts_judge
CONCURRENCY = 16


def calibration_judge() -> ModelEntry | None:
    """The judge CALIBRATION["JUDGE"] names, or None when calibration is off."""
    name = settings.CALIBRATION["JUDGE"]
    if not name:
        return None
    judge = model_by_name(name)
    if judge is None:
        raise ServiceError("unknown_judge", f"CALIBRATION_JUDGE names no model: {name!r}.")
    return judge


def verdicts_claim(
    *, judge: ModelEntry, limit: int, include_simulated: bool = False, now=None
) -> list[int]:
    """Claim both orders of up to ``limit`` counted votes this judge has not judged in both,
    newest first; the claimed verdicts' ids. A claim whose task never started, or whose worker
    went quiet, for STALE_S is freed and claimed again."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.CALIBRATION["STALE_S"])
    mine = BattleVerdict.objects.filter(judge=judge)
    mine.filter(done=False).filter(
        Q(taken_at__lt=stale) | Q(taken_at=None, created_at__lt=stale)
    ).delete()
    judged = mine.values("vote_id").annotate(n=Count("pk")).filter(n=2).values("vote_id")
    votes = counted_votes(include_simulated=include_simulated).exclude(pk__in=judged)
    if not judge.takes_images:
        votes = votes.filter(images=[])  # it could not see what the raters saw
    vote_ids = list(votes.order_by("-pk").values_list("pk", flat=True)[:limit])
    BattleVerdict.objects.bulk_create(
        (BattleVerdict(vote_id=v, judge=judge, a_first=f) for v in vote_ids for f in (True, False)),
        ignore_conflicts=True,  # an order judged already stays as it is
    )
    claimed = mine.filter(vote_id__in=vote_ids, done=False, attempts=0)
    return list(claimed.values_list("pk", flat=True))


def calibration_sweep() -> list[int]:
    """Called by the evaluation sweep: with calibration on, claim a batch and send it to a
    worker once the claim commits (in-process mode: on the calling web process's loop, or here
    and now for a synchronous caller; core.jobs.job_run). The verdict ids claimed."""
    judge = calibration_judge()
    if judge is None:
        return []
    batch = settings.CALIBRATION["BATCH"]
    if BattleVerdict.objects.filter(judge=judge, done=False).count() >= 2 * batch:
        return []  # the judge is behind: no more until it catches up
    ids = verdicts_claim(judge=judge, limit=batch)
    if ids:  # to the judge's pool, as its battles go
        job_send(
            task=CALIBRATE_TASK, args=[ids], queue=works.queue_of(judge),
            priority=settings.EVALS_PRIORITY,
        )  # fmt: skip
    return ids


def conversation(battle_id) -> tuple[str, str, str]:
    """(the prompt, side A's answer, side B's answer) as the judge sees a battle: one turn as
    it is, several numbered, each side's answers in turn order."""
    turns = list(Turn.objects.filter(battle_id=battle_id).order_by("index"))
    answers = {
        (a.turn_id, a.side): a.text
        for a in Answer.objects.filter(turn__battle_id=battle_id).only("turn_id", "side", "text")
    }
    if len(turns) == 1:
        t = turns[0]
        return t.text, answers.get((t.pk, "a"), ""), answers.get((t.pk, "b"), "")

    def numbered(texts: list[str]) -> str:
        return "\n\n".join(f"[Turn {i + 1}]\n{text}" for i, text in enumerate(texts))

    return (
        numbered([t.text for t in turns]),
        numbered([answers.get((t.pk, "a"), "") for t in turns]),
        numbered([answers.get((t.pk, "b"), "") for t in turns]),
    )


def _take(
    verdict_id: int,
) -> tuple[BattleVerdict, tuple[str, str, str], tuple[Image, ...]] | None:
    """The claimed verdict, taken by this worker only (its first attempt marked), with what
    the judge will see (the battle's images too); None when another has it or it is done."""
    taken = BattleVerdict.objects.filter(pk=verdict_id, done=False, attempts=0).update(
        attempts=1, taken_at=timezone.now()
    )
    if not taken:
        return None
    verdict = BattleVerdict.objects.select_related("judge", "vote").get(pk=verdict_id)
    return verdict, conversation(verdict.vote.battle_id), images_sent(verdict.vote.images)


async def verdicts_judge(*, verdict_ids: list[int]) -> int:
    """Ask the judge for each claimed verdict, CONCURRENCY at a time; how many were written."""
    terms = await database_sync_to_async(rules.mask_terms)()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(pk: int) -> int:
        async with gate:
            taken = await database_sync_to_async(_take)(pk)
            if taken is None:
                return 0
            verdict, (prompt, a, b), images = taken
            first, second = (a, b) if verdict.a_first else (b, a)
            found = await judge_answers(
                "pairwise", judge=verdict.judge, prompt=prompt,
                answers={"A": first, "B": second}, terms=terms, images=images,
            )  # fmt: skip
            try:
                await database_sync_to_async(model_update)(
                    instance=verdict, fields=pairwise.VERDICT_FIELDS,
                    data=pairwise.verdict_data(found),
                )  # fmt: skip
            except DatabaseError:
                return 0  # freed as stale meanwhile and claimed again: the other one counts
            return 1

    return sum(await asyncio.gather(*(one(pk) for pk in verdict_ids)))
