"""Evaluation pages: the public leaderboard's judge tab (published runs, each labelled as an LLM
judge's opinion, beside its agreement with the human votes; never blended into them), and the
calibration page (staff with ``arena.view_calibration``). Thin edges over the evaluation
selectors."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from arena.evals.agreement import calibration_report, published_boards

JUDGE_BOARD_SCHEMA = "arena.judge_leaderboard/1"


@require_GET
def leaderboard_judge(request: HttpRequest) -> HttpResponse:
    return render(request, "evals/leaderboard_judge.html", {"runs": published_boards()})


@require_GET
def leaderboard_judge_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"schema": JUDGE_BOARD_SCHEMA, "source": "llm_judge",
                         "runs": published_boards()})  # fmt: skip


# Staff, as every page of the admin side (anyone else is sent to its sign-in), and the named
# permission: the staff flag alone opens no report. A staff member without it gets a 403.
CALIBRATION_PERMISSION = "arena.view_calibration"


@staff_member_required
@permission_required(CALIBRATION_PERMISSION, raise_exception=True)
@require_GET
def calibration_page(request: HttpRequest) -> HttpResponse:
    return render(request, "evals/calibration.html", {"report": calibration_report()})


@staff_member_required
@permission_required(CALIBRATION_PERMISSION, raise_exception=True)
@require_GET
def calibration_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse(calibration_report(judge_name=request.GET.get("judge", "")))
