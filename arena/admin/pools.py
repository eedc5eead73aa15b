"""The admin's pool page: replicas, health, load, measured speed and the cost of a vote."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from arena.backends.outbound import shown_url
from arena.battles.selectors import model_pools

DEFAULT_VOTES_PER_DAY = 1000
VIEW_POOLS = "arena.view_pools"


def pools_view(request: HttpRequest) -> HttpResponse:
    # Mounted through admin_view (staff only); the page shows every backend's replicas and
    # load, so the staff flag alone is not enough: 403, as the admin answers for a model page.
    if not request.user.has_perm(VIEW_POOLS):
        raise PermissionDenied
    try:
        votes_per_day = max(0, int(request.GET.get("votes_per_day", DEFAULT_VOTES_PER_DAY)))
    except ValueError:
        votes_per_day = DEFAULT_VOTES_PER_DAY
    models = [
        {
            "model": pool.model,
            "queue": pool.queue,
            # Shown without any credential an older row's URL may carry.
            "rows": [
                (r, r.replica_hours_per_day(votes_per_day), shown_url(r.replica))
                for r in pool.replicas
            ],
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
