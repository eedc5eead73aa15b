"""The admin's pool page: replicas, health, load, measured speed and the cost of a vote."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from arena.generation.selectors import model_pools

DEFAULT_VOTES_PER_DAY = 1000


def pools_view(request: HttpRequest) -> HttpResponse:
    try:
        votes_per_day = max(0, int(request.GET.get("votes_per_day", DEFAULT_VOTES_PER_DAY)))
    except ValueError:
        votes_per_day = DEFAULT_VOTES_PER_DAY
    models = [
        {
            "model": pool.model,
            "queue": pool.queue,
            "rows": [(r, r.replica_hours_per_day(votes_per_day)) for r in pool.replicas],
        }
        for pool in model_pools()
    ]
    context = {
        **admin.site.each_context(request),
        "title": "GPU pools and replicas",
        "models": models,
        "votes_per_day": votes_per_day,
    }
    return TemplateResponse(request, "admin/arena/pools.html", context)
