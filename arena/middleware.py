from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from channels.auth import AuthMiddleware, get_user
from channels.db import database_sync_to_async
from channels.security.websocket import WebsocketDenier
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.template.response import TemplateResponse
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# The database or Redis out of reach: the same request may well work in a moment.
UNAVAILABLE = (OperationalError, InterfaceError, RedisConnectionError, RedisTimeoutError)

# Scripts only from our own origin: no inline script anywhere, so injected markup cannot run.
CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


class ServiceUnavailableMiddleware:
    """A page whose view cannot reach the database or Redis is a 503 that says so and when to
    try again, not a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, UNAVAILABLE):
            return None
        response = TemplateResponse(request, "arena/unavailable.html", status=503)
        response.headers["Retry-After"] = "10"
        return response.render()


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in; None if unparseable."""
    try:
        parts = urlsplit(url.strip().lower())
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port


def websocket_origin_allowed(scope: dict) -> bool:
    """A websocket handshake from this site's own pages only, compared as Django's CSRF check
    compares a form's Origin: the same scheme, host and port the request came to (an allowed
    host), or one of CSRF_TRUSTED_ORIGINS (for a proxy that rewrites Host or the scheme)."""
    headers = dict(scope.get("headers") or [])
    origin = _origin(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None:
        return False
    if origin in {_origin(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS}:
        return True
    host = headers.get(b"host", b"").decode("latin-1")
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return origin == _origin(f"{scheme}://{host}")


class SameOriginWebsocket:
    """ASGI middleware: refuse (403 at the handshake) a websocket from any other origin."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not websocket_origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)


class AuthOffThread(AuthMiddleware):
    """Channels' AuthMiddleware with its two reads (the session, then the user) on a thread of
    their own, not on the one thread every thread-sensitive call of the process queues for: a
    crowd's sockets connect side by side, and no start, vote or shown turn waits behind them."""

    async def resolve_scope(self, scope: dict) -> None:
        read = database_sync_to_async(get_user.func, thread_sensitive=False)
        scope["user"]._wrapped = await read(scope)


class SocketSessionMiddleware(SessionMiddleware):
    """Channels' SessionMiddleware, less its wrapper around every message a websocket sends.
    The wrapper saves a changed session on an HTTP response's start, which a websocket never
    sends, yet it runs (and reads the session's state) for each of a battle's frames."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await super().__call__(scope, receive, send)
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def auth_stack(inner: Callable) -> Callable:
    """What channels' AuthMiddlewareStack is, with SocketSessionMiddleware and AuthOffThread."""
    return CookieMiddleware(SocketSessionMiddleware(AuthOffThread(inner)))
