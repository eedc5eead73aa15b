from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults
from django_ratelimit.exceptions import Ratelimited

from accounts import ratelimits


def rate_limited(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """429 with a message people can act on and Retry-After in seconds."""
    return ratelimits.limited_response(request)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """django-ratelimit refuses with Ratelimited, a PermissionDenied: answer that with 429."""
    if isinstance(exception, Ratelimited):
        return rate_limited(request, exception)
    return defaults.permission_denied(request, exception)
