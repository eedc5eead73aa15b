from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from arena.battles import prompts, selectors, services
from arena.core.errors import ServiceError


@login_required
@require_GET
def arena_page(request: HttpRequest) -> HttpResponse:
    try:
        services.rater_may_battle(rater=request.user)
        blocked = ""
    except ServiceError as exc:
        blocked = exc.message
    in_progress = selectors.battle_in_progress(rater=request.user)
    return render(
        request,
        "arena/arena.html",
        {
            "max_chars": settings.ARENA["PROMPT_MAX_CHARS"],
            "blocked": blocked,
            "in_progress": in_progress.pk if in_progress else "",
        },
    )


@login_required
@require_GET
def random_prompt(request: HttpRequest) -> JsonResponse:
    prompt = prompts.prompt_draw(rater=request.user)
    if prompt is None:
        return JsonResponse({"error": "No curated prompts are available yet."}, status=404)
    return JsonResponse({"id": prompt.pk, "text": prompt.text, "category": prompt.category})
