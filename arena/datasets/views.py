"""The staff page of the length audit: a thin edge over ``exports.audit_report``."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from arena.datasets.exports import RANK_GAP_DEFAULT, audit_report


def _gap(value: str | None) -> int:
    try:
        return max(0, int(value)) if value else RANK_GAP_DEFAULT
    except ValueError:
        return RANK_GAP_DEFAULT


@staff_member_required
@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    simulated = request.GET.get("simulated") == "1"
    report = audit_report(include_simulated=simulated, more_than=_gap(request.GET.get("gap")))
    return render(request, "datasets/audit.html", {"report": report, "simulated": simulated})
