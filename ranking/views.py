"""The public leaderboard: served from the stored snapshot, never computed per request, and
rendered once per snapshot (ranking.public_cache)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from arena.core.csv_safe import SafeWriter
from ranking import breakdowns, public_cache, selectors, snapshots
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from ranking.numbers import none_if_nan
from ranking.plot import heatmap, history_plot, interval_plot

# The head-to-head matrices show the best-ranked models only: beyond this they stop being
# readable on a page (the JSON download has every pair).
MATRIX_MODELS = 16


@require_GET
def leaderboard(request: HttpRequest) -> HttpResponse:
    stamp = public_cache.stamp_latest()
    if stamp is None:
        return render(request, "arena/leaderboard.html", {"rows": selectors.model_vote_counts()})
    view = request.GET.get("view", "raw")
    view = view if view in {"raw", "style"} else "raw"
    breakdown = request.GET.get("breakdown", "all")
    return public_cache.public_response(
        request,
        stamp=stamp,
        parts=("leaderboard", view, breakdown),
        render=lambda req: _leaderboard(
            req, snapshot=_snapshot(stamp), view=view, breakdown=breakdown
        ),
    )


def _leaderboard(
    request: HttpRequest | None, *, snapshot: LeaderboardSnapshot, view: str, breakdown: str
) -> HttpResponse:
    data = snapshots.board(snapshot=snapshot, view=view, breakdown=breakdown)
    if not (data.ranked or data.provisional or data.disconnected or data.retired):
        if breakdown != "all":
            raise Http404("No such breakdown in the latest leaderboard.")
    categories, languages = breakdowns.chips(data.breakdowns)
    plot = interval_plot([(r.model_name, r.score, r.lower, r.upper) for r in data.ranked])
    other = snapshots.board(
        snapshot=snapshot, view="style" if view == "raw" else "raw", breakdown=breakdown
    )
    beside = {r.model_name: r for r in other.ranked}
    # Each ranked row with the same model in the other view, and how many places it moves
    # there (positive: it ranks higher in the other view).
    rows = [
        (r, beside.get(r.model_name),
         r.rank_best - beside[r.model_name].rank_best if r.model_name in beside else None)
        for r in data.ranked
    ]  # fmt: skip
    style_coefs = snapshot.style_coefs.get(breakdown) if view == "style" else None
    pairs = snapshots.head_to_head(
        snapshot=snapshot,
        breakdown=breakdown,
        scores={r.model_name: r.score for r in data.ranked[:MATRIX_MODELS]},
    )
    return render(
        request,
        "ranking/leaderboard.html",
        {
            "board": data,
            "rows": rows,
            "other_view": other.view,
            "snapshot": snapshot,
            "plot": plot,
            "style_coefs": style_coefs,
            "matrices": pairs
            and len(pairs.names) >= 2
            and {
                "win": heatmap(pairs.names, pairs.rates.tolist(), kind="rate"),
                "count": heatmap(pairs.names, pairs.battles.tolist(), kind="count"),
                "predicted": heatmap(pairs.names, pairs.predicted.tolist(), kind="rate"),
            },
            "view": view,
            "breakdown": breakdown,
            "board_name": breakdowns.label(breakdown),
            "categories": categories,
            "languages": languages,
        },
    )


@require_GET
def model_page(request: HttpRequest, name: str) -> HttpResponse:
    stamp = public_cache.stamp_latest()
    if stamp is None:
        raise Http404("No model of that name is on the leaderboard.")
    return public_cache.public_response(
        request,
        stamp=stamp,
        parts=("model", name),
        render=lambda req: _model_page(req, snapshot=_snapshot(stamp), name=name),
    )


def _model_page(
    request: HttpRequest | None, *, snapshot: LeaderboardSnapshot, name: str
) -> HttpResponse:
    profile = snapshots.model_profile(snapshot=snapshot, name=name)
    if profile is None:
        raise Http404("No model of that name is on the leaderboard.")
    # Its boards as the leaderboard's chips list them: overall, categories, languages.
    by = {b: (raw, style) for b, raw, style in profile.rows}
    categories, languages = breakdowns.chips(list(by))
    boards = [breakdowns.chip("all")] if "all" in by else []
    boards += categories + languages
    return render(
        request,
        "ranking/model.html",
        {
            "snapshot": snapshot,
            "profile": profile,
            "overall": profile.rows[0] if profile.rows[0][0] == "all" else None,
            "boards": [(c, *by[c.key]) for c in boards],
            "history": history_plot(profile.history),
        },
    )


def _stamp_or_404(snapshot_id: int | None) -> public_cache.Stamp:
    if snapshot_id is None:
        stamp = public_cache.stamp_latest()
        if stamp is None:
            raise Http404("No leaderboard has been computed yet.")
        return stamp
    stamp = public_cache.stamp_of(snapshot_id=snapshot_id)
    if stamp is None:
        raise Http404("No LeaderboardSnapshot matches the given query.")
    return stamp


def _snapshot(stamp: public_cache.Stamp, *, tallies: bool = False) -> LeaderboardSnapshot:
    """The snapshot a page is rendered from: the stamp's, read only on a cache miss. (A newer
    one may have been published since the stamp was read: the page is the stamp's still.)"""
    snapshot = public_cache.snapshot_of(stamp, tallies=tallies)
    if snapshot is None:  # deleted meanwhile
        raise Http404("No LeaderboardSnapshot matches the given query.")
    return snapshot


def snapshot_payload(snapshot: LeaderboardSnapshot) -> dict:
    boards: dict[tuple[str, str], list[dict]] = {}
    for row in snapshots.snapshot_rows(snapshot=snapshot, order=snapshots.ROWS_BY_RANK_THEN_SCORE):
        boards.setdefault((row.view, row.breakdown), []).append(
            {
                ("model" if f == "model_name" else f): none_if_nan(getattr(row, f))
                for f in LeaderboardRow.EXPORT_FIELDS
            }
        )
    return {
        "schema": "arena.leaderboard/1",
        "snapshot": {
            "id": snapshot.pk,
            "computed_at": snapshot.computed_at.isoformat(),
            "cutoff": snapshot.cutoff.isoformat(),
            "method": snapshot.method,
            "settings": snapshot.settings,
            "votes_used": snapshot.votes_used,
            "votes_excluded": snapshot.votes_excluded,
            "includes_simulated": snapshot.includes_simulated,
            "content_hash": snapshot.content_hash,
            "style_coefs": snapshot.style_coefs,
            "notes": snapshot.notes,
        },
        # Head-to-head tallies per board (ranking.pairwise) and answers cut per model.
        "pairs": snapshot.pairs,
        "model_stats": snapshot.model_stats,
        "boards": [{"view": v, "breakdown": b, "rows": rows} for (v, b), rows in boards.items()],
    }


@require_GET
def leaderboard_json(request: HttpRequest, snapshot_id: int | None = None) -> HttpResponse:
    return _export(request, snapshot_id, "json")


@require_GET
def leaderboard_csv(request: HttpRequest, snapshot_id: int | None = None) -> HttpResponse:
    return _export(request, snapshot_id, "csv")


def _export(request: HttpRequest, snapshot_id: int | None, fmt: str) -> HttpResponse:
    """A snapshot's export (the latest's without an id), the same for everyone."""
    stamp = _stamp_or_404(snapshot_id)

    def render(_: HttpRequest | None) -> HttpResponse:
        if fmt == "json":
            return JsonResponse(snapshot_payload(_snapshot(stamp, tallies=True)))
        return _csv(_snapshot(stamp))

    return public_cache.public_response(
        request, stamp=stamp, parts=(fmt,), render=render, personal=False
    )


def _csv(snapshot: LeaderboardSnapshot) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="leaderboard-{snapshot.pk}.csv"'
    # Model names, organisations and categories are untrusted text: no cell opens as a formula.
    writer = SafeWriter(response)
    writer.writerow(["snapshot", "view", "breakdown", *LeaderboardRow.EXPORT_FIELDS])
    for row in snapshots.snapshot_rows(snapshot=snapshot, order=snapshots.ROWS_BY_RANK):
        writer.writerow(
            [
                snapshot.pk,
                row.view,
                row.breakdown,
                *(none_if_nan(getattr(row, f)) for f in LeaderboardRow.EXPORT_FIELDS),
            ]
        )
    return response
