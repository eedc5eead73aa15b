"""How a backend's failures are named, once for every adapter: by HTTP status, or by the code
and type an error carries in a body or inside a stream, and by its wording. Request faults
(bad_request, context_length, auth, an unknown model) are not a replica's; server faults and
timeouts are (``pools`` retries and counts only those)."""

from __future__ import annotations

import json
import re

import httpx

from arena.backends.base import ErrorKind, StreamError
from arena.backends.outbound import refused_cause

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


# What each kind of failure is called when an upstream error is reported. The upstream's own
# wording is never passed on: a server that is not a model (Redis, an internal API) answers
# with text of its own, and any server may echo a key or a prompt.
_DESCRIPTIONS: dict[str, str] = {
    "auth": "the backend refused the credentials",
    "rate_limited": "the backend is limiting requests",
    "timeout": "the backend timed out",
    "context_length": "the prompt is longer than the model's context window",
    "content_filter": "the backend's content filter blocked the request",
    "refused": "the model refused to answer",
    "bad_request": "the backend refused the request",
    "protocol": "the backend answered in a form that could not be read",
    "server": "the backend failed",
}
# An error's type or code is passed on when it is a plain identifier (model_not_found,
# RESOURCE_EXHAUSTED, overloaded_error): short, useful to an operator and unable to carry text.
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,47}$")


def safe_code(value: object) -> str:
    """``value`` when it is a plain identifier, else ""."""
    return value if isinstance(value, str) and _IDENTIFIER.match(value) else ""


def upstream_text(kind: str, error: object = None) -> str:
    """A short, classified message for an upstream error: what kind it is, and its type or
    code when that is a plain identifier; never the upstream's free text."""
    text = _DESCRIPTIONS.get(kind, "the backend failed")
    code = ""
    if isinstance(error, dict):
        code = next((c for f in ("type", "code", "status") if (c := safe_code(error.get(f)))), "")
    return f"{text} ({code})" if code else text


def _error_object(body: str) -> object:
    """The error object of a vendor's error body, or None."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        return data.get("error", data)
    return None


def http_message(status: int, kind: str, body: str, wait: float | None) -> str:
    message = f"HTTP {status}: {upstream_text(kind, _error_object(body))}"
    if kind == "rate_limited" and wait is not None:
        message += f" (retry after {wait:g} s)"
    return message


def mid_stream_error(error: object) -> StreamError:
    """An error a vendor reports inside a stream that had begun (an ``error`` event or chunk:
    its value), classified and worded as ``upstream_text``."""
    kind = classify_payload(error)
    return StreamError(kind, f"The backend failed mid-stream: {upstream_text(kind, error)}")


async def http_error(response: httpx.Response) -> StreamError:
    body = (await response.aread()).decode("utf-8", "replace")
    kind = classify_status(response.status_code, body)
    wait = retry_after_s(response.headers)
    return StreamError(
        kind, http_message(response.status_code, kind, body, wait), retry_after_s=wait
    )


def transport_error(exc: Exception) -> StreamError:
    if refused := refused_cause(exc):
        # The operator's rule, not the replica's fault: never retried or counted against it.
        return StreamError("bad_request", str(refused))
    if isinstance(exc, httpx.TimeoutException):
        return StreamError("timeout", f"The backend did not answer in time ({type(exc).__name__}).")
    if isinstance(exc, httpx.RemoteProtocolError):
        return StreamError("protocol", "The backend closed the stream unexpectedly.")
    return StreamError("server", f"The backend could not be reached ({type(exc).__name__}).")
