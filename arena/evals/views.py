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


@require_GET
def calibration_json(request: HttpRequest) -> JsonResponse:
    """The report as JSON, for scripts: refusals are JSON too (401 signed out, 403 without
    staff and the permission), never the admin's sign-in page."""
    user = request.user
    if not user.is_authenticated:
        return JsonResponse({"error": "sign_in", "message": "Sign in first."}, status=401)
    if not (user.is_active and user.is_staff and user.has_perm(CALIBRATION_PERMISSION)):
        message = f"The calibration report needs a staff account with {CALIBRATION_PERMISSION}."
        return JsonResponse({"error": "forbidden", "message": message}, status=403)
    return JsonResponse(calibration_report(judge_name=request.GET.get("judge", "")))
