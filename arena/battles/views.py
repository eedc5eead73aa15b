from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import terms_pending
from accounts.services import terms_accept
from arena.battles import prompts, selectors, services
from arena.core.errors import ServiceError


@login_required
@require_GET
def arena_page(request: HttpRequest) -> HttpResponse:
    version = services.terms_version()
    try:
        services.rater_may_battle(rater=request.user)
        blocked, pending = "", False
    except ServiceError as exc:
        # The terms are offered as a form of their own, not as a refusal; a refusal for another
        # reason comes before the terms are looked at, so they are looked at here.
        pending = exc.code == "terms_not_accepted" or terms_pending(
            user=request.user, version=version
        )
        blocked = "" if exc.code == "terms_not_accepted" else exc.message
    in_progress = selectors.battle_in_progress(rater=request.user)
    return render(
        request,
        "arena/arena.html",
        {
            "max_chars": settings.ARENA["PROMPT_MAX_CHARS"],
            "image_max_bytes": settings.IMAGES["MAX_BYTES"],
            "image_max_count": settings.IMAGES["MAX_COUNT"],
            "blocked": blocked,
            "terms": settings.TERMS["TEXT"] if pending else "",
            "terms_version": version,
            "in_progress": in_progress.pk if in_progress else "",
        },
    )


@login_required
@require_POST
def terms_accept_view(request: HttpRequest) -> HttpResponse:
    """Accepts the version of the terms the rater was shown; if they have changed since, the
    page shows the new ones instead."""
    version = services.terms_version()
    if version and request.POST.get("version") == version:
        terms_accept(user=request.user, version=version)
    return redirect("arena")


@login_required
@require_GET
def random_prompt(request: HttpRequest) -> JsonResponse:
    prompt = prompts.prompt_draw(rater=request.user)
    if prompt is None:
        return JsonResponse({"error": "No curated prompts are available yet."}, status=404)
    return JsonResponse({"id": prompt.pk, "text": prompt.text, "category": prompt.category})
