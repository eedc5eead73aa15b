"""Reads for calibration: how far each judge agrees with the human votes on the same battles,
per category, with bootstrap intervals; and, for evaluation runs, how its leaderboard lines up
with the human one. The figures are ``ranking.calibration``'s; this loads the rows."""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max

from arena.catalog.models import ModelEntry
from arena.evals import exports
from arena.evals.models import BattleVerdict, EvalRun
from arena.evals.selectors import rows_doubted, style_unrankable
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import counted_votes
from arena.judges.rules import judges_own_family
from ranking import calibration as calc
from ranking import snapshots
from ranking.battle_log import OUTCOME, side_style
from ranking.bradley_terry import TIE, A, B
from ranking.compute import RankingConfig, VoteArrays, compute_board

ROUNDS = 300
SCHEMA = "arena.calibration/1"
ENDED = (EvalRun.Status.DONE, EvalRun.Status.BUDGET)


def _rows(judge: ModelEntry) -> list[dict]:
    """One row per battle judged in both orders whose vote counts: the two verdicts' signs
    from side A, the human's, and what the length fit needs. A battle still being judged is
    left out until both its verdicts are in."""
    verdicts = BattleVerdict.objects.filter(
        judge=judge, vote__in=counted_votes(include_simulated=True)
    ).select_related("vote")
    by_vote: dict[int, dict] = {}
    for v in verdicts.order_by("vote_id", "a_first"):
        vote = v.vote
        row = by_vote.setdefault(vote.pk, {
            "first": calc.MISSING, "second": calc.MISSING, "done": 0,
            "human": calc.HUMAN[vote.choice], "choice": vote.choice,
            "category": vote.prompt_category or "uncategorised", "simulated": vote.simulated,
            "a": vote.model_a_id, "b": vote.model_b_id,
            "style": (side_style(vote.side_a or {}), side_style(vote.side_b or {})),
        })  # fmt: skip
        # "first": the verdict with A shown first; "second": with B shown first.
        row["first" if v.a_first else "second"] = calc.from_side_a(v.level, v.a_first)
        row["done"] += v.done
    return [row for row in by_vote.values() if row["done"] == 2]


def _length(rows: list[dict], names: dict[int, str]) -> dict:
    """The style-controlled fit's length coefficient, the judge's beside the humans', over the
    same battles, one game a battle each (the judge's: its two orders combined)."""
    ids = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    index = {pk: i for i, pk in enumerate(ids)}
    combined = calc.combined(
        np.array([r["first"] for r in rows], np.int64),
        np.array([r["second"] for r in rows], np.int64),
    )
    judged, human = [], []
    for r, side in zip(rows, combined, strict=True):
        pair = (index[r["a"]], index[r["b"]])
        human.append((*pair, OUTCOME[r["choice"]], r["style"]))
        if side != calc.MISSING:
            judged.append((*pair, A if side > 0 else B if side < 0 else TIE, r["style"]))
    config = RankingConfig(method="sandwich", min_votes=1, both_bad=settings.RANKING["both_bad"])

    def coefficient(games: list) -> list[float] | None:
        if not games:
            return None
        style = np.array([g[3] for g in games], dtype=float)
        votes = VoteArrays(
            model_names=[names.get(pk, str(pk)) for pk in ids],
            a=np.array([g[0] for g in games]), b=np.array([g[1] for g in games]),
            outcome=np.array([g[2] for g in games]),
            style_a=style[:, 0, :], style_b=style[:, 1, :],
            category=np.zeros(len(games), np.int64), language=np.zeros(len(games), np.int64),
        )  # fmt: skip
        found = (compute_board(votes, config, view="style").style_coefs or {}).get("length")
        return [round(x, 4) for x in found] if found else None

    return {"judge": coefficient(judged), "human": coefficient(human)}


def _figures(rows: list[dict], own: dict[int, bool], names: dict[int, str], seed: int) -> dict:
    first = np.array([r["first"] for r in rows], dtype=np.int64)
    second = np.array([r["second"] for r in rows], dtype=np.int64)
    human = np.array([r["human"] for r in rows], dtype=np.int64)
    judge = calc.combined(first, second) if rows else np.zeros(0, np.int64)
    own_side = np.array([own[r["a"]] - own[r["b"]] for r in rows], dtype=np.int64)
    agree = calc.agreement(human, judge, rounds=ROUNDS, seed=seed)
    self_family = calc.self_preference(own_side, human, judge, rounds=ROUNDS, seed=seed + 2)
    return {
        "battles": len(rows),
        "missing": int(((first == calc.MISSING) | (second == calc.MISSING)).sum()),
        "agreement": agree["decisive"].as_dict(),
        "agreement_three_way": agree["three_way"].as_dict(),
        "position_bias": calc.position_flips(first, second, rounds=ROUNDS, seed=seed + 3).as_dict(),
        "self_family": self_family.as_dict() if self_family.n else None,
        "length_coefficient": _length(rows, names),
    }


def _runs(judge: ModelEntry) -> list[dict]:
    """Per finished evaluation run this judge judged: rank correlation of its published board
    with the human board over the models both rank, and that board's separability."""
    snapshot = snapshots.snapshot_latest()
    human = {}
    if snapshot is not None:
        board = snapshots.board(snapshot=snapshot, view="raw", breakdown="all")
        human = {r.model_name: r.score for r in board.ranked}
    out = []
    for run in EvalRun.objects.filter(judge=judge, status__in=ENDED).order_by("-pk")[:10]:
        rows = [
            r for r in exports.as_data(run)["rows"]
            if (r["view"], r["breakdown"]) == ("raw", "all") and r["score"] is not None
        ]  # fmt: skip
        out.append({
            "run": run.pk, "name": run.name, "public": run.public,
            **calc.rank_agreement({r["model"]: r["score"] for r in rows}, human),
            "separability": calc.separability([(r["lower"], r["upper"]) for r in rows]),
        })  # fmt: skip
    return out


def _judge_report(judge: ModelEntry) -> dict:
    rows = _rows(judge)
    entries = ModelEntry.objects.filter(pk__in={r["a"] for r in rows} | {r["b"] for r in rows})
    own = {m.pk: judges_own_family(judge, m) for m in entries}
    names = {m.pk: m.public_name for m in entries}
    categories = sorted({r["category"] for r in rows})
    return {
        "judge": judge.public_name,
        "simulated_battles": sum(1 for r in rows if r["simulated"]),
        "overall": _figures(rows, own, names, seed=0),
        "categories": {
            c: _figures([r for r in rows if r["category"] == c], own, names, seed=10 + i)
            for i, c in enumerate(categories)
        },
        "runs": _runs(judge),
    }


def calibration_report(*, judge_name: str = "", max_age_s: float | None = None) -> dict:
    """Every judge with verdicts on arena battles (or the one named), as JSON-ready data.
    Cached until a verdict, a vote flag, a run or the human board changes; with
    ``max_age_s``, any copy no older than that will do (the public tab)."""
    loose = f"calibration:loose:{judge_name.encode().hex()}"
    if max_age_s and (found := cache.get(loose)) is not None:
        return found
    judged = BattleVerdict.objects.filter(done=True)
    if judge_name:
        judged = judged.filter(judge__public_name=judge_name)
    state = judged.aggregate(n=Count("pk"), last=Max("pk"), at=Max("created_at"))
    runs = EvalRun.objects.aggregate(last=Max("finished_at"))
    flags = VoteFlag.objects.aggregate(last=Max("pk"))["last"]
    snapshot = snapshots.snapshot_latest()
    parts = (
        judge_name.encode().hex(), state["n"], state["last"],
        state["at"] and state["at"].timestamp(), flags,
        runs["last"] and runs["last"].timestamp(), snapshot and snapshot.pk,
    )  # fmt: skip
    key = "calibration:" + ":".join(map(str, parts))
    found = cache.get(key)
    if found is None:
        judges = ModelEntry.objects.filter(pk__in=judged.values("judge_id")).order_by("public_name")
        found = {"schema": SCHEMA, "judges": [_judge_report(j) for j in judges]}
        cache.set(key, found, 3600)
    if max_age_s:
        cache.set(loose, found, max_age_s)
    return found


def published_boards() -> list[dict]:
    """The runs published on the leaderboard's judge tab, newest first: each board with its
    judge's agreement with human votes and its rank correlation with the human board."""
    runs = (
        EvalRun.objects.filter(public=True, status__in=ENDED)
        .select_related("judge", "baseline")
        .order_by("-finished_at")[:5]
    )
    found = []
    for run in runs:
        data = exports.as_data(run)
        report = calibration_report(
            judge_name=run.judge.public_name,
            max_age_s=settings.CALIBRATION["PUBLIC_MAX_AGE_S"],
        )
        calibrated = report["judges"][0] if report["judges"] else None
        style_note = style_unrankable(run=run)
        found.append({
            **data,
            "mock": run.judge.backend == ModelEntry.Backend.MOCK,
            "overall": rows_doubted(
                [r for r in data["rows"] if (r["view"], r["breakdown"]) == ("raw", "all")]
            ),
            "style": rows_doubted(
                [r for r in data["rows"] if r["view"] == "style"], unrankable=style_note
            ),
            "style_note": style_note,
            "agreement": calibrated and calibrated["overall"]["agreement"],
            "calibration_battles": calibrated and calibrated["overall"]["battles"],
            "simulated_battles": calibrated and calibrated["simulated_battles"],
            "ranks": next((r for r in (calibrated or {}).get("runs", []) if r["run"] == run.pk),
                          None),
        })  # fmt: skip
    return found
