"""Evaluation pages: the public leaderboard's judge tab (published runs, each labelled as an LLM
judge's opinion, beside its agreement with the human votes; never blended into them), and the
staff calibration page. Thin edges over the evaluation selectors."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from arena.evals import exports
from arena.evals.calibration_report import calibration_report
from arena.evals.models import EvalRun

JUDGE_BOARD_SCHEMA = "arena.judge_leaderboard/1"


def _published() -> list[dict]:
    """Published finished runs, newest first, each with its judge's calibration figures."""
    runs = (
        EvalRun.objects.filter(public=True, status__in=(EvalRun.Status.DONE, EvalRun.Status.BUDGET))
        .select_related("judge", "baseline")
        .order_by("-finished_at")[:5]
    )
    found = []
    for run in runs:
        data = exports.as_data(run)
        report = calibration_report(judge_name=run.judge.public_name)["judges"]
        calibrated = report[0] if report else None
        found.append({
            **data,
            "mock": run.judge.backend == "mock",
            "overall": [r for r in data["rows"] if r["view"] == "raw" and r["breakdown"] == "all"],
            "style": [r for r in data["rows"] if r["view"] == "style"],
            "agreement": calibrated and calibrated["overall"]["agreement"],
            "calibration_battles": calibrated and calibrated["overall"]["battles"],
            "simulated_battles": calibrated and calibrated["simulated_battles"],
            "ranks": next((r for r in (calibrated or {}).get("runs", []) if r["run"] == run.pk),
                          None),
        })  # fmt: skip
    return found


@require_GET
def leaderboard_judge(request: HttpRequest) -> HttpResponse:
    return render(request, "evals/leaderboard_judge.html", {"runs": _published()})


@require_GET
def leaderboard_judge_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"schema": JUDGE_BOARD_SCHEMA, "source": "llm_judge",
                         "runs": _published()})  # fmt: skip


@staff_member_required
@require_GET
def calibration_page(request: HttpRequest) -> HttpResponse:
    return render(request, "evals/calibration.html", {"report": calibration_report()})


@staff_member_required
@require_GET
def calibration_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse(calibration_report(judge_name=request.GET.get("judge", "")))
