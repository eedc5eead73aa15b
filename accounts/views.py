from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults
from django_ratelimit.exceptions import Ratelimited

from accounts import ratelimits

# allauth's own limits (failed sign-ins) end here too, through handler429, without telling
# us their window; they are all a minute or a few.
FALLBACK_RETRY_AFTER_S = 60


def rate_limited(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """429 with a message people can act on and Retry-After in seconds."""
    limited = ratelimits.http_limited(request)
    if limited is not None:
        message, retry_after = limited.message, limited.retry_after
    else:
        message = "Too many attempts. Try again in a minute."
        retry_after = FALLBACK_RETRY_AFTER_S
    response = HttpResponse(message + "\n", status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    return response


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """django-ratelimit refuses with Ratelimited, a PermissionDenied: answer that with 429."""
    if isinstance(exception, Ratelimited):
        return rate_limited(request, exception)
    return defaults.permission_denied(request, exception)
