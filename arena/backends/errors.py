"""How a backend's failures are named, once for every adapter: by HTTP status, or by the code
and type an error carries in a body or inside a stream, and by its wording. Request faults
(bad_request, context_length, auth, an unknown model) are not a replica's; server faults and
timeouts are (``pools`` retries and counts only those)."""

from __future__ import annotations

import json
import re

import httpx

from arena.backends.base import ErrorKind, StreamError

# Wording servers use for a prompt longer than the model's window (vLLM, llama.cpp, TGI,
# OpenAI, Anthropic), whatever status they send it with.
_CONTEXT = re.compile(
    r"context[ _](length|window|limit)|maximum context|too many tokens|prompt is too long"
    r"|exceeds? the (available )?context|exceeds the maximum number of tokens",
    re.IGNORECASE,
)
# Error types vendors and servers name in their bodies or in-stream error chunks, as the
# status they stand for, for an error that comes without one.
ERROR_TYPES = {
    "invalid_request_error": 400, "badrequesterror": 400, "bad_request": 400,
    "invalid_argument": 400, "authentication_error": 401, "permission_error": 403,
    "permission_denied": 403, "not_found_error": 404, "notfounderror": 404, "not_found": 404,
    "failed_precondition": 400, "request_too_large": 413, "unauthenticated": 401,
    # An account that cannot pay is as unusable as a wrong key, and no retry fixes it.
    "billing_error": 403,
    "rate_limit_error": 429, "resource_exhausted": 429, "overloaded_error": 503,
    "api_error": 500, "server_error": 500, "internal": 500, "unavailable": 503,
    "timeout": 504, "timeout_error": 504, "deadline_exceeded": 504,
}  # fmt: skip


def classify_status(status: int, body: str = "") -> ErrorKind:
    """The kind of an error from its HTTP status (or the status its type stands for) and its
    wording. Request faults (bad_request, context_length, auth, an unknown model) are not the
    replica's and are never retried elsewhere; server faults and timeouts are."""
    lowered = body.lower()
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limited"
    if status in (408, 504):
        return "timeout"
    if _CONTEXT.search(lowered):
        return "context_length"
    if "content_filter" in lowered or "content filter" in lowered or "safety" in lowered:
        return "content_filter"
    if status >= 500:
        return "server"
    return "bad_request"


def classify_payload(error: object) -> ErrorKind:
    """The kind of an error reported inside a stream or a body (``{"error": {...}}``'s value):
    by its code when it is an HTTP status, else by its type, else a server fault."""
    if not isinstance(error, dict):
        return classify_status(500, str(error))
    code, kind = error.get("code"), str(error.get("type") or error.get("status") or "")
    status = None
    if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
        status = int(code)
    elif isinstance(code, str):
        status = ERROR_TYPES.get(code.lower())
    status = status if status and 400 <= status < 600 else ERROR_TYPES.get(kind.lower(), 500)
    return classify_status(status, f"{error.get('message') or ''} {kind} {code or ''}")


def retry_after_s(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_text(body: str, limit: int = 300) -> str:
    """A short, secret-free message from an error body (vendors put the reason in JSON)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:limit]
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or err)[:limit]
        return str(err)[:limit]
    return str(data)[:limit]


async def http_error(response: httpx.Response) -> StreamError:
    body = (await response.aread()).decode("utf-8", "replace")
    kind = classify_status(response.status_code, body)
    message = f"HTTP {response.status_code}: {_error_text(body)}"
    wait = retry_after_s(response.headers)
    if kind == "rate_limited" and wait is not None:
        message += f" (retry after {wait:g} s)"
    return StreamError(kind, message, retry_after_s=wait)


def transport_error(exc: Exception) -> StreamError:
    if isinstance(exc, httpx.TimeoutException):
        return StreamError("timeout", f"The backend did not answer in time ({type(exc).__name__}).")
    if isinstance(exc, httpx.RemoteProtocolError):
        return StreamError("protocol", "The backend closed the stream unexpectedly.")
    return StreamError("server", f"The backend could not be reached ({type(exc).__name__}).")
