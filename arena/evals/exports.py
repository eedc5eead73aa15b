"""An evaluation run's results for other tools: its judge leaderboards as JSON and CSV, and its
verdicts in the arena battle format (FastChat's clean battle JSON), marked as an LLM judge's,
so that they can be re-ranked elsewhere and never pass for human votes.

The JSON and CSV carry ``schema_version`` (SCHEMA_VERSION; none: version 1) and costs as plain
decimal strings (never ``0E-8``); the arena format is FastChat's own, left as it is."""

from __future__ import annotations

import io
import json
from decimal import Decimal

from django.core.cache import cache

from arena.catalog.costs import plain
from arena.core.csv_safe import SafeDictWriter
from arena.evals.models import EvalRun, EvalVerdict
from arena.evals.selectors import JudgeBoard, judge_board
from ranking.judged import LEVELS
from ranking.numbers import none_if_nan

SCHEMA_VERSION = 2  # 2: schema_version itself, plain decimal costs
COLUMNS = ["view", "breakdown", "model", "score", "lower", "upper", "rank_best", "rank_worst",
           "games", "win_rate", "cost", "schema_version"]  # fmt: skip


def _rows(run: EvalRun, result: JudgeBoard) -> list[dict]:
    boards = [("raw", result.board), ("style", result.style_board)]
    boards += [("raw", board) for board in result.by_category.values()]
    return [
        {
            "view": view,
            "breakdown": board.breakdown,
            "model": row.model,
            "score": none_if_nan(round(row.score, 2)),
            "lower": none_if_nan(round(row.lower, 2)),
            "upper": none_if_nan(round(row.upper, 2)),
            "rank_best": row.rank_best,
            "rank_worst": row.rank_worst,
            "games": row.votes,
            "win_rate": none_if_nan(result.win_rate.get(row.model)),
            "cost": plain(Decimal(result.cost.get(row.model, 0))),
        }
        for view, board in boards
        for row in sorted(board.rows, key=lambda r: -r.score)
    ]


def as_data(run: EvalRun) -> dict:
    """The run's judge leaderboards as JSON-ready data; a finished run's are cached, as
    nothing can change them any more."""
    ended = run.finished_at is not None
    key = f"evals:board:{SCHEMA_VERSION}:{run.pk}:{run.status}"
    key += f":{ended and run.finished_at.timestamp()}"
    found = cache.get(key) if ended else None
    if found is None:
        result = judge_board(run_id=run.pk)
        found = {
            "schema_version": SCHEMA_VERSION,
            "run": run.pk,
            "name": run.name,
            "status": run.status,
            "note": run.note,
            "judge": run.judge.public_name,
            "baseline": run.baseline.public_name,
            "finished_at": run.finished_at and run.finished_at.isoformat(),
            "source": "llm_judge",  # an LLM judge's opinion, not human votes
            "position_bias": result.position_bias,
            "pairs": result.pairs,
            "missing_verdicts": result.missing,
            "rows": _rows(run, result),
        }
        if ended:
            cache.set(key, found, 24 * 3600)
    return found


def as_json(run: EvalRun) -> str:
    return json.dumps(as_data(run), indent=2, ensure_ascii=False)


def as_csv(run: EvalRun) -> str:
    out = io.StringIO()
    # Model names and category breakdowns are untrusted text: no cell may open as a formula.
    writer = SafeDictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    rows = _rows(run, judge_board(run_id=run.pk))
    writer.writerows({**row, "schema_version": SCHEMA_VERSION} for row in rows)
    return out.getvalue()


def arena_records(run: EvalRun) -> list[dict]:
    """One battle per verdict, as shown to the judge (model_a is the answer shown first); a
    strong verdict is kept as its level, for tools that count it as Arena-Hard does."""
    records = []
    verdicts = (
        EvalVerdict.objects.filter(prompt__run=run, done=True)
        .exclude(level="")
        .select_related("prompt", "model")
        .order_by("pk")
    )
    baseline = run.baseline.public_name
    for v in verdicts:
        first, second = (
            (v.model.public_name, baseline) if v.model_first else (baseline, v.model.public_name)
        )
        outcome, _ = LEVELS[v.level]
        records.append(
            {
                "question_id": f"eval{run.pk}-{v.prompt.index}",
                "model_a": first,
                "model_b": second,
                "winner": {0: "model_a", 1: "model_b", 2: "tie"}[outcome],
                "judge": f"llm_judge:{run.judge.public_name}",
                "judge_verdict": v.level,
                "category": v.prompt.category,
                "anony": True,
                "source": "llm_judge",  # never a human vote
            }
        )
    return records


def as_arena(run: EvalRun) -> str:
    return json.dumps(arena_records(run), indent=1, ensure_ascii=False)
