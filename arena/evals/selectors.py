"""Reads of evaluation runs: progress, and the judge leaderboard (the human leaderboard's own
ranking code, on the judge's verdicts against the baseline). Never a row of the human board."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np
from django.core.cache import cache
from django.db.models import Sum
from django.utils import timezone

from arena.core.text import style_counts
from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict
from ranking.compute import Board, RankingConfig, compute_board
from ranking.judged import (
    Verdict,
    interval_doubt,
    position_bias,
    style_tracks_models,
    vote_arrays,
    win_rates,
)


@dataclass(frozen=True)
class Progress:
    answers_done: int
    answers_total: int
    verdicts_done: int
    verdicts_total: int  # at most: a failed answer or a same-family model is not judged
    verdicts_missing: int
    cost: Decimal  # its answers' and its judge calls'
    time_left_s: float | None  # at the pace so far; None before there is one, and once ended
    ended: str = ""  # how the run ended ("finished", "stopped at its budget", ...); "" if not

    @property
    def share(self) -> float:
        total = self.answers_total + self.verdicts_total
        return (self.answers_done + self.verdicts_done) / total if total else 1.0

    def line(self) -> str:
        left = self.time_left_s
        eta = "" if left is None else f"  about {left // 60:.0f} min {left % 60:.0f} s left"
        if left is not None and left < 1:
            eta = "  under a second left"
        if self.ended:
            eta = f"  {self.ended}"
        return (
            f"answers {self.answers_done}/{self.answers_total}  verdicts "
            f"{self.verdicts_done}/{self.verdicts_total} ({self.verdicts_missing} missing)  "
            f"cost ${self.cost:.4f}{eta}"
        )


ENDED = {
    EvalRun.Status.DONE: "finished",
    EvalRun.Status.BUDGET: "stopped at its budget",
    EvalRun.Status.FAILED: "failed",
}


def progress(*, run_id: int, now=None) -> Progress:
    run = EvalRun.objects.get(pk=run_id)
    prompts = run.prompts.count()
    contestants = run.contestants.count()
    answers = EvalAnswer.objects.filter(prompt__run=run).exclude(status=EvalAnswer.Status.RUNNING)
    verdicts = EvalVerdict.objects.filter(prompt__run=run, done=True)
    cost = EvalAnswer.objects.filter(prompt__run=run).aggregate(c=Sum("cost"))["c"]
    judged = EvalVerdict.objects.filter(prompt__run=run).aggregate(c=Sum("cost"))["c"]
    done = (answers.count(), verdicts.count())
    totals = (prompts * (contestants + 1), 2 * prompts * contestants)
    left = None
    if run.status == EvalRun.Status.RUNNING and run.started_at and sum(done):
        elapsed = ((now or timezone.now()) - run.started_at).total_seconds()
        left = elapsed / sum(done) * (sum(totals) - sum(done))
    return Progress(
        answers_done=done[0],
        answers_total=totals[0],
        verdicts_done=done[1],
        verdicts_total=totals[1],
        verdicts_missing=verdicts.filter(level="").count(),
        cost=(cost or Decimal("0")) + (judged or Decimal("0")),
        time_left_s=left,
        ended=ENDED.get(run.status, ""),
    )


@dataclass(frozen=True)
class JudgeBoard:
    """An LLM judge's opinion of the run's models against its baseline: not human votes.
    Raw and style-controlled, overall and per category, on the human board's ranking code."""

    board: Board
    style_board: Board
    by_category: dict[str, Board]
    win_rate: dict[str, float]
    cost: dict[str, Decimal]
    position_bias: float
    pairs: int
    missing: int


def _features(answer: EvalAnswer) -> list[float]:
    """The human board's style features (ranking.battle_log.STYLE_KEYS) of one answer."""
    counts = style_counts(answer.text)
    return [
        float(answer.output_tokens or 0),
        float(counts["headers"]),
        float(counts["list_items"]),
        float(counts["bold"]),
    ]


def judge_verdicts(
    run: EvalRun,
) -> tuple[list[str], list[Verdict], np.ndarray, list[str], list[tuple[int, int]]]:
    """(model names, baseline last; the verdicts; their style features, shape (n, 2, 4);
    category names by index; each verdict's (prompt, model), pairing its two orders)."""
    contestants = list(run.contestants.order_by("public_name"))
    names = [m.public_name for m in contestants] + [run.baseline.public_name]
    index = {m.pk: i for i, m in enumerate(contestants)}
    answers = {(a.prompt_id, a.model_id): a for a in EvalAnswer.objects.filter(prompt__run=run)}
    categories: dict[str, int] = {}
    verdicts, style, keys = [], [], []
    rows = EvalVerdict.objects.filter(prompt__run=run, done=True).select_related("prompt")
    for v in rows.order_by("pk"):
        category = categories.setdefault(v.prompt.category or "all", len(categories))
        verdicts.append(Verdict(index[v.model_id], len(contestants), v.model_first,
                                v.level or None, category))  # fmt: skip
        keys.append((v.prompt_id, v.model_id))
        mine = answers.get((v.prompt_id, v.model_id))
        base = answers.get((v.prompt_id, run.baseline_id))
        style.append([_features(mine) if mine else [0.0] * 4,
                      _features(base) if base else [0.0] * 4])  # fmt: skip
    return names, verdicts, np.array(style).reshape(-1, 2, 4), list(categories), keys


def judge_board(*, run_id: int, rounds: int = 200) -> JudgeBoard:
    run = EvalRun.objects.select_related("baseline").get(pk=run_id)
    names, verdicts, style, categories, keys = judge_verdicts(run)
    by_pair: dict[tuple[int, int], dict[bool, Verdict]] = {}
    for verdict, key in zip(verdicts, keys, strict=True):
        by_pair.setdefault(key, {})[verdict.model_first] = verdict
    pairs = [(p[True], p[False]) for p in by_pair.values() if len(p) == 2]
    rate, n = position_bias(pairs)
    config = RankingConfig(
        rounds=rounds, style_method="bootstrap", breakdown_method="bootstrap",
        style_rounds=min(rounds, 50), min_votes=1, seed=run.seed,
        anchor=run.baseline.public_name,
    )  # fmt: skip
    votes = vote_arrays(verdicts, names, style=style if len(verdicts) else None)
    boards = {
        category: compute_board(
            votes, config, mask=votes.category == i, breakdown=f"category:{category}"
        )
        for i, category in enumerate(categories)
    }
    rates = win_rates(verdicts, len(names))
    costs = dict(
        EvalAnswer.objects.filter(prompt__run=run)
        .values_list("model__public_name")
        .annotate(c=Sum("cost"))
        .values_list("model__public_name", "c")
    )
    base = len(names) - 1
    return JudgeBoard(
        board=compute_board(votes, config),
        style_board=compute_board(votes, config, view="style"),
        by_category=boards,
        win_rate={names[i]: float(rates[i]) for i in range(base)},
        cost={name: costs.get(name) or Decimal("0") for name in names},
        position_bias=rate,
        pairs=n,
        missing=sum(1 for v in verdicts if v.level is None),
    )


STYLE_TRACKS_MODELS = (
    "Style-controlled scores are not shown: in this run each model's answers have almost the "
    "same length and markdown in every game, so its style tells which model it is, and the "
    "style-controlled fit cannot tell a model's strength from its style (its intervals run to "
    "thousands of points). Read the judge score instead."
)


def style_unrankable(*, run: EvalRun) -> str:
    """Why the run's style-controlled board cannot be ranked ("" when it can): the style
    features track the models themselves (``ranking.judged.style_tracks_models``). A finished
    run's answer is cached, as nothing can change it any more."""
    key = f"evals:style-tracks:{run.pk}:{run.finished_at and run.finished_at.timestamp()}"
    found = cache.get(key) if run.finished_at else None
    if found is None:
        names, verdicts, style, _, _ = judge_verdicts(run)
        found = ""
        if verdicts:
            votes = vote_arrays(verdicts, names, style=style)
            tracks = style_tracks_models(votes.a, votes.b, votes.style_ratios(), len(names))
            found = STYLE_TRACKS_MODELS if tracks else ""
        if run.finished_at:
            cache.set(key, found, 24 * 3600)
    return found


def rows_doubted(rows: list[dict], *, unrankable: str = "") -> list[dict]:
    """Board rows (``exports`` rows) each with ``doubt``: why its interval cannot be read as a
    ranking ("" when it can), so a page greys it and says why; ``unrankable`` applies to
    every row (the style board's)."""
    return [
        {**r, "doubt": unrankable or interval_doubt(r["games"], r["lower"], r["upper"])}
        for r in rows
    ]
