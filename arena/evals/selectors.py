"""Reads of evaluation runs: progress, and the judge leaderboard (the human leaderboard's own
ranking code, on the judge's verdicts against the baseline). Never a row of the human board."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Sum

from arena.evals.models import EvalAnswer, EvalRun, EvalVerdict
from ranking.compute import Board, RankingConfig, compute_board
from ranking.judged import Verdict, position_bias, vote_arrays, win_rates


@dataclass(frozen=True)
class Progress:
    answers_done: int
    answers_total: int
    verdicts_done: int
    verdicts_missing: int
    cost: Decimal


def progress(*, run_id: int) -> Progress:
    run = EvalRun.objects.get(pk=run_id)
    prompts = run.prompts.count()
    contestants = run.contestants.count()
    answers = EvalAnswer.objects.filter(prompt__run=run).exclude(status=EvalAnswer.Status.RUNNING)
    verdicts = EvalVerdict.objects.filter(prompt__run=run, done=True)
    cost = EvalAnswer.objects.filter(prompt__run=run).aggregate(c=Sum("cost"))["c"]
    return Progress(
        answers_done=answers.count(),
        answers_total=prompts * (contestants + 1),
        verdicts_done=verdicts.count(),
        verdicts_missing=verdicts.filter(level="").count(),
        cost=cost or Decimal("0"),
    )


@dataclass(frozen=True)
class JudgeBoard:
    """An LLM judge's opinion of the run's models against its baseline: not human votes."""

    board: Board
    win_rate: dict[str, float]
    cost: dict[str, Decimal]
    position_bias: float
    pairs: int
    missing: int


def judge_board(*, run_id: int, rounds: int = 200) -> JudgeBoard:
    run = EvalRun.objects.select_related("baseline").get(pk=run_id)
    contestants = list(run.contestants.order_by("public_name"))
    names = [m.public_name for m in contestants] + [run.baseline.public_name]
    index = {m.pk: i for i, m in enumerate(contestants)}
    base = len(contestants)
    rows = EvalVerdict.objects.filter(prompt__run=run, done=True).values_list(
        "prompt_id", "model_id", "model_first", "level"
    )
    verdicts, by_pair = [], {}
    for prompt_id, model_id, model_first, level in rows:
        verdict = Verdict(index[model_id], base, model_first, level or None)
        verdicts.append(verdict)
        by_pair.setdefault((prompt_id, model_id), {})[model_first] = verdict
    pairs = [(p[True], p[False]) for p in by_pair.values() if len(p) == 2]
    rate, n = position_bias(pairs)
    config = RankingConfig(
        rounds=rounds, min_votes=1, seed=run.seed, anchor=run.baseline.public_name
    )
    board = compute_board(vote_arrays(verdicts, names), config)
    rates = win_rates(verdicts, len(names))
    costs = dict(
        EvalAnswer.objects.filter(prompt__run=run)
        .values_list("model__public_name")
        .annotate(c=Sum("cost"))
        .values_list("model__public_name", "c")
    )
    return JudgeBoard(
        board=board,
        win_rate={names[i]: float(rates[i]) for i in range(base)},
        cost={name: costs.get(name) or Decimal("0") for name in names},
        position_bias=rate,
        pairs=n,
        missing=sum(1 for v in verdicts if v.level is None),
    )
