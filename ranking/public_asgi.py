"""The public pages answered before Django for signed-out visitors: a launch day's crowd.

A visitor's copy of a public page (ranking.public_cache) is the same bytes for everyone until
the next snapshot, yet Django's way to it costs about ten times the page's own work: a thread
per request, the middlewares, a database connection. So this ASGI wrapper keeps, per process,
Django's whole answer to a visitor (status, every header its middlewares added, body) the first
time Django gives it, and replays it to the next visitor who asks the same thing, without
entering Django. What it keeps is keyed by the published snapshot's stamp (and the code's
version, which the stamp's ETag carries) and by everything of the request that Django's answer
to a visitor depends on: method, path, query string, scheme, Host and the proxy headers the
settings trust, and whether the answer is a 200 or a 304. Anything else goes to Django as
before: a session cookie (a member's page is theirs: never replayed, and a member's answer is
never kept), a CSRF cookie Django would replace, a method other than GET (the pages answer
HEAD with 405), a URL that is not a public page, no Host, conditions other than If-None-Match /
If-Modified-Since, a body.

Only an answer Django made for the stamp read for this request is kept, and only a visitor's:
public ``Cache-Control``, the stamp's ETag, no cookie set, no ``Vary``.
"""

from __future__ import annotations

import asyncio
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache, partial
from types import SimpleNamespace

from django.conf import settings
from django.db import connection
from django.http.cookie import parse_cookie
from django.middleware.csrf import InvalidTokenFormat, _check_token_format
from django.test.signals import setting_changed
from django.urls import Resolver404, resolve
from django.utils.cache import get_conditional_response
from django.utils.http import parse_http_date_safe

from ranking import public_cache, views

# The views whose visitors' answers ranking.public_cache makes: the only ones replayed.
PUBLIC_VIEWS = frozenset(
    {views.leaderboard, views.model_page, views.leaderboard_json, views.leaderboard_csv}
)
# What is kept per snapshot, in bytes of body: query strings and Host are the visitor's text,
# so a crowd of made-up ones must not grow the process; past this, they are Django's to answer.
MAX_KEPT_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Kept:
    """One of Django's answers, as it sent it through ASGI."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: tuple[bytes, ...]

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True)
class Ask:
    """A visitor's request, as far as Django's answer depends on it."""

    key: tuple
    method: str
    conditions: dict[str, str]


# A stamp as the database gives its row: (pk, content_hash, computed_at), compared, not read.
Seen = tuple
# The reader's connection is closed once no read came for this long: a crowd keeps it (a new
# SQLite connection costs several times the query), a quiet site holds none.
IDLE_CLOSE_S = 5.0


def _stamp_read() -> Seen | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute(*public_cache.stamp_latest_sql())
            return cursor.fetchone()
    except Exception:
        connection.close()  # broken, perhaps: the next read connects afresh
        raise


def _close() -> None:
    connection.close()  # this thread's: the proxy names the calling thread's connection


@dataclass
class _Flight:
    boarding: asyncio.Future | None = None  # the next read, not started: requests join it
    reading: bool = False
    idle: asyncio.TimerHandle | None = None


@dataclass
class StampReads:
    """The latest snapshot's stamp, one database read for many requests at once.

    Why it is correct: a request waits for a read that starts after the request arrived (one
    in flight when it arrives is not joined: it waits for the next). Under autocommit every
    query sees what was committed before it began, so a snapshot committed by any process
    before the request arrived is in the stamp it gets, as if it had read the stamp itself.
    One thread of its own and one read at a time: a crowd costs a read per read's time, not
    one per request, and never takes asgiref's thread or the default executor's."""

    executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="public-stamp")
    )
    flights: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)

    async def latest(self) -> Seen | None:
        loop = asyncio.get_running_loop()
        flight = self.flights.get(loop)
        if flight is None:
            flight = self.flights[loop] = _Flight()
        boarding = flight.boarding
        if boarding is None:
            boarding = flight.boarding = loop.create_future()
            if not flight.reading:
                self._depart(loop, flight)
        # One request given up (its client gone) does not cancel the others' read.
        return await asyncio.shield(boarding)

    def close(self) -> None:
        """The reader's connection closed now (it lives in the reader's thread)."""
        self.executor.submit(_close).result()

    def _depart(self, loop: asyncio.AbstractEventLoop, flight: _Flight) -> None:
        boarding, flight.boarding, flight.reading = flight.boarding, None, True
        if flight.idle is not None:
            flight.idle.cancel()
        read = loop.run_in_executor(self.executor, _stamp_read)
        read.add_done_callback(partial(self._arrived, loop, flight, boarding))

    def _arrived(self, loop, flight: _Flight, boarding: asyncio.Future, read) -> None:
        flight.reading = False
        if read.cancelled():
            boarding.cancel()
        elif read.exception() is not None:
            boarding.set_exception(read.exception())
        else:
            boarding.set_result(read.result())
        if flight.boarding is not None:  # requests came while it read: the next read
            self._depart(loop, flight)
        else:
            flight.idle = loop.call_later(IDLE_CLOSE_S, self.executor.submit, _close)


@lru_cache(maxsize=1024)
def _public_path(path: str) -> bool:
    try:
        return resolve(path).func in PUBLIC_VIEWS
    except Resolver404:
        return False


@lru_cache(maxsize=1)
def _trusted_headers() -> tuple[bytes, ...]:
    """The request headers besides Host that the settings let change a visitor's answer: the
    proxy's scheme (HTTPS redirect, HSTS), host and port."""
    names = [b"host"]
    if settings.SECURE_PROXY_SSL_HEADER:
        meta = settings.SECURE_PROXY_SSL_HEADER[0].removeprefix("HTTP_")
        names.append(meta.lower().replace("_", "-").encode())
    if settings.USE_X_FORWARDED_HOST:
        names.append(b"x-forwarded-host")
    if settings.USE_X_FORWARDED_PORT:
        names.append(b"x-forwarded-port")
    return tuple(names)


CONDITIONS = {
    b"if-none-match": "HTTP_IF_NONE_MATCH",
    b"if-modified-since": "HTTP_IF_MODIFIED_SINCE",
    b"if-match": "HTTP_IF_MATCH",
    b"if-unmodified-since": "HTTP_IF_UNMODIFIED_SINCE",
}


def visitor_ask(scope: dict) -> Ask | None:
    """The request as a key, if it is a visitor's GET of a public page; else None."""
    method = scope["method"]
    if method != "GET" or scope.get("root_path"):
        return None
    path = scope["path"]
    if not _public_path(path):
        return None
    trusted = _trusted_headers()
    found: dict[bytes, bytes] = {}
    cookies: list[str] = []
    conditions: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name == b"cookie":
            cookies.append(value.decode("latin-1"))
        elif name in CONDITIONS:
            meta, value = CONDITIONS[name], value.decode("latin-1")
            conditions[meta] = f"{conditions[meta]},{value}" if meta in conditions else value
        elif name in (b"content-length", b"transfer-encoding"):
            if value != b"0":
                return None  # a body, which Django reads: Django's to answer
        elif name in trusted:
            if name in found:
                return None  # Django reads a repeated header joined: an oddity left to it
            found[name] = value
    if b"host" not in found:
        return None  # Django would check the server's own name: left to it
    # Repeated headers joined as Django's ASGIRequest joins them: the cookies it would read.
    if cookies and not _visitor_cookies(parse_cookie(",".join(cookies))):
        return None
    if "HTTP_IF_MATCH" in conditions or "HTTP_IF_UNMODIFIED_SINCE" in conditions:
        return None  # a 412 is Django's to give (and to log)
    key = (
        method,
        path,
        scope.get("query_string", b""),
        scope.get("scheme", "http"),
        *(found.get(name) for name in trusted),
    )
    return Ask(key=key, method=method, conditions=conditions)


def _visitor_cookies(cookies: dict[str, str]) -> bool:
    """No session (a member's, or one that may become one: Django reads it) and no CSRF cookie
    that Django's middleware would replace in its answer (a Set-Cookie the replay lacks)."""
    if settings.SESSION_COOKIE_NAME in cookies:
        return False
    token = cookies.get(settings.CSRF_COOKIE_NAME)
    if token is None:
        return True
    try:
        _check_token_format(token)  # Django's own check: a cookie it keeps is kept here
    except InvalidTokenFormat:
        return False
    return True


def _outcome(ask: Ask, page: Kept) -> int:
    """200 or 304, as Django's get_conditional_response decides for the kept page."""
    if not ask.conditions:
        return 200
    etag = page.header(b"etag")
    modified = page.header(b"last-modified")
    request = SimpleNamespace(method=ask.method, META=ask.conditions)
    answer = get_conditional_response(
        request,
        etag=etag and etag.decode("latin-1"),
        last_modified=modified and parse_http_date_safe(modified.decode("latin-1")),
    )
    return 200 if answer is None else answer.status_code


def keepable(status: int, headers: list, stamp: Seen) -> bool:
    """A visitor's answer made from the snapshot ``stamp`` names: public, its ETag, nothing
    personal in it."""
    if status not in (200, 304):
        return False
    named: dict[bytes, bytes] = {}
    for name, value in headers:
        name = bytes(name).lower()
        if name in (b"set-cookie", b"vary"):
            return False
        named[name] = bytes(value)
    etag = named.get(b"etag", b"")
    return named.get(b"cache-control", b"").startswith(b"public") and etag.startswith(
        public_cache.etag_prefix(pk=stamp[0], content_hash=stamp[1]).encode()
    )


class PublicPages:
    """ASGI: visitors' public pages replayed; everything else, Django (``app``) unchanged."""

    def __init__(self, app) -> None:
        self.app = app
        self.stamps = StampReads()
        self.stamp: Seen | None = None
        self.kept: dict[tuple, Kept] = {}
        self.kept_bytes = 0
        self.replayed = 0  # answers given without Django, since the process started
        setting_changed.connect(self.forget, weak=False)

    def forget(self, **kwargs) -> None:
        """Nothing kept. On a setting changed (in tests): what was kept may no longer be
        Django's answer."""
        self.kept, self.kept_bytes = {}, 0
        _public_path.cache_clear()
        _trusted_headers.cache_clear()

    async def __call__(self, scope, receive, send) -> None:
        ask = None
        if scope["type"] == "http" and settings.PUBLIC_PAGE_CACHE:
            ask = visitor_ask(scope)
        if ask is None:
            return await self.app(scope, receive, send)
        try:
            stamp = await self.stamps.latest()
        except Exception:  # the database away: Django's answer (a 503 page) as for any page
            stamp = None
        if stamp is None:
            return await self.app(scope, receive, send)
        if stamp != self.stamp:
            self.stamp, self.kept, self.kept_bytes = stamp, {}, 0
        page = self.kept.get((*ask.key, 200))
        kept = page and self.kept.get((*ask.key, _outcome(ask, page)))
        if kept is None:
            return await self._django(scope, receive, send, ask=ask, stamp=stamp)
        self.replayed += 1
        await send({"type": "http.response.start", "status": kept.status, "headers": kept.headers})
        last = len(kept.body) - 1
        for i, chunk in enumerate(kept.body):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < last})

    async def _django(self, scope, receive, send, *, ask: Ask, stamp: Seen) -> None:
        """Django's answer, sent as it comes and kept if it is a visitor's page of ``stamp``."""
        start: dict = {}
        body: list[bytes] = []
        whole = False

        async def keep(message: dict) -> None:
            nonlocal whole
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                body.append(bytes(message.get("body", b"")))
                whole = not message.get("more_body", False)
            await send(message)

        await self.app(scope, receive, keep)
        status, headers = start.get("status"), start.get("headers", [])
        if not whole or start.get("trailers") or not keepable(status, headers, stamp):
            return
        key, size = (*ask.key, status), sum(map(len, body))
        if self.stamp != stamp or key in self.kept or self.kept_bytes + size > MAX_KEPT_BYTES:
            return
        headers = tuple((bytes(k), bytes(v)) for k, v in headers)
        self.kept[key] = Kept(status, headers, tuple(body))
        self.kept_bytes += size
