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
    terms = settings.TERMS["TEXT"] if terms_pending(user=request.user, version=version) else ""
    try:
        services.rater_may_battle(rater=request.user)
        blocked = ""
    except ServiceError as exc:
        # The terms are offered as a form of their own, not as a refusal.
        blocked = "" if exc.code == "terms_not_accepted" else exc.message
    in_progress = selectors.battle_in_progress(rater=request.user)
    return render(
        request,
        "arena/arena.html",
        {
            "max_chars": settings.ARENA["PROMPT_MAX_CHARS"],
            "blocked": blocked,
            "terms": terms,
            "in_progress": in_progress.pk if in_progress else "",
        },
    )


@login_required
@require_POST
def terms_accept_view(request: HttpRequest) -> HttpResponse:
    terms_accept(user=request.user, version=services.terms_version())
    return redirect("arena")


@login_required
@require_GET
def random_prompt(request: HttpRequest) -> JsonResponse:
    prompt = prompts.prompt_draw(rater=request.user)
    if prompt is None:
        return JsonResponse({"error": "No curated prompts are available yet."}, status=404)
    return JsonResponse({"id": prompt.pk, "text": prompt.text, "category": prompt.category})
