"""The public leaderboard pages and exports, served from a cache per published snapshot.

They change only when a snapshot is published (and when the code that renders them does), so
each is rendered once per snapshot and kept in Django's cache (Redis where there is one, so every
web process shares it; this process's memory on the embedded default). Every request still asks
the database which snapshot is the latest (one indexed query), so a new snapshot is served the
moment it commits, by every process, with no invalidation to send.

Visitors (no session cookie, or a session with no account) get the one rendering made with no
request at all, so nothing personal can be in it: ``Cache-Control: public`` (on a page
``max-age=0, s-maxage=...``: shared caches keep it, a browser revalidates, so one who signs in
sees their own header at once), an ``ETag`` and ``Last-Modified`` from the snapshot, 304 to a
conditional GET, and no ``Vary: Cookie``. A signed-in user gets the same page with the two
personal parts of ``base.html`` (the account links and the flash messages, each between
markers) rendered for them, ``Cache-Control: private, no-cache`` and no validator: a 304 could
otherwise confirm a visitor's copy to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.conf import settings
from django.core.cache import cache as django_cache
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.cache import get_conditional_response
from django.utils.http import http_date

from ranking.models import LeaderboardSnapshot

# The personal parts of base.html: each fragment template starts and ends with its markers.
PERSONAL = {
    "_account.html": ("<!--account-->", "<!--/account-->"),
    "_messages.html": ("<!--messages-->", "<!--/messages-->"),
}


@dataclass(frozen=True)
class Stamp:
    """What names a snapshot's renderings: its id, contents and time (an id may come again on
    SQLite, where a rolled-back insert gives it back, and in tests)."""

    pk: int
    content_hash: str
    computed_at: datetime


_STAMP = ("pk", "content_hash", "computed_at")


def _latest() -> QuerySet:
    return LeaderboardSnapshot.objects.order_by("-computed_at", "-pk").values_list(*_STAMP)


def stamp_latest() -> Stamp | None:
    """The published snapshot's stamp: the one query a cached page costs. Only these three
    columns: the snapshot's JSON fields cost more to decode than the query itself."""
    row = _latest().first()
    return row and Stamp(*row)


def stamp_latest_sql() -> tuple[str, tuple]:
    """stamp_latest's query as SQL and parameters, for a reader that runs it for a crowd
    (ranking.public_asgi): the row it gives, as the database gives it, names the same snapshot
    (pk, content_hash, computed_at) without the ORM's cost per query."""
    return _latest()[:1].query.sql_with_params()


def stamp_of(*, snapshot_id: int) -> Stamp | None:
    row = LeaderboardSnapshot.objects.filter(pk=snapshot_id).values_list(*_STAMP).first()
    return row and Stamp(*row)


def snapshot_of(stamp: Stamp, *, tallies: bool) -> LeaderboardSnapshot | None:
    """The stamp's snapshot, read on a cache miss; ``tallies``: with every board's head-to-head
    tallies and the model stats (the JSON export's), large, which a page reads one board of."""
    snapshots = LeaderboardSnapshot.objects.all()
    if not tallies:
        snapshots = snapshots.defer("pairs", "model_stats")
    return snapshots.filter(pk=stamp.pk).first()


@cache
def code_version() -> str:
    """A digest of what renders the public pages (templates, the ranking package, the product
    settings module): a deploy that changes them changes every key and ETag, so no cache or
    browser keeps an old rendering of an unchanged snapshot. Computed once per process."""
    root = settings.BASE_DIR
    files = [*(root / "templates").rglob("*.html"), *(root / "ranking").glob("*.py")]
    files.append(root / "arena" / "settings" / "product.py")
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def is_visitor(request: HttpRequest) -> bool:
    """No account behind this request. Without a session cookie there can be none, and the
    session is not read (reading it is what makes Django answer ``Vary: Cookie``)."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return True
    return not request.user.is_authenticated


def etag_prefix(*, pk: int, content_hash: str) -> str:
    """What every ETag made by this code from the snapshot ``pk`` of ``content_hash`` starts
    with (ranking.public_asgi keeps only an answer whose ETag does: one made from the snapshot
    it read)."""
    return f'"{code_version()}-{pk}-{content_hash[:16]}-'


def _etag(stamp: Stamp, key: str) -> str:
    return f'{etag_prefix(pk=stamp.pk, content_hash=stamp.content_hash)}{key[-12:]}"'


def _key(stamp: Stamp, parts: tuple[str, ...]) -> str:
    """The cache key of one rendering: the snapshot's stamp, the code, and what the page shows
    of the snapshot (hashed: a query string is the visitor's text)."""
    what = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
    named = f"{stamp.pk}:{stamp.content_hash[:16]}:{stamp.computed_at.timestamp()}"
    return f"public:{code_version()}:{named}:{what}"


def _personalised(page: str, request: HttpRequest) -> str:
    """The public rendering with its personal parts rendered for ``request``'s user."""
    for template, (start, end) in PERSONAL.items():
        begin = page.find(start)
        stop = page.find(end, begin)
        if begin < 0 or stop < 0:
            continue
        mine = render_to_string(template, request=request)
        page = page[:begin] + mine + page[stop + len(end) :]
    return page


def public_response(
    request: HttpRequest,
    *,
    stamp: Stamp,
    parts: tuple[str, ...],
    render: Callable[[HttpRequest | None], HttpResponse],
    personal: bool = True,
) -> HttpResponse:
    """The response ``render(None)`` makes (with no request: the same for everyone), from the
    cache of ``snapshot`` or rendered and kept there; ``parts``: what tells this rendering apart
    among the snapshot's (page, view, board...). ``personal``: an HTML page with base.html's
    header, which a signed-in user gets with their own; an export is the same for everyone.
    With PUBLIC_PAGE_CACHE off (the bench's baseline), ``render(request)`` as before."""
    if not settings.PUBLIC_PAGE_CACHE:
        return render(request)
    key = _key(stamp, parts)
    stored = django_cache.get(key)
    if stored is None:
        made = render(None)
        if made.status_code != 200:
            return made  # a 404 for a mistyped board is not kept
        kept = ("Content-Type", "Content-Disposition")
        stored = (made.content, {h: made[h] for h in kept if h in made})
        django_cache.set(key, stored, settings.PUBLIC_PAGE_CACHE_TTL_S)
    content, headers = stored
    if personal and not is_visitor(request):
        response = HttpResponse(_personalised(content.decode(), request), headers=headers)
        response["Cache-Control"] = "private, no-cache"
        return response
    response = HttpResponse(content, headers=headers)
    response["ETag"] = _etag(stamp, key)
    modified = int(stamp.computed_at.timestamp())  # HTTP dates are whole seconds
    response["Last-Modified"] = http_date(modified)
    age = settings.PUBLIC_PAGE_MAX_AGE_S
    # A page: shared caches keep it, a browser asks again each time (a 304 while the snapshot
    # stands), so a visitor who signs in gets their own header at once, not the copy they hold.
    # An export is everyone's: browsers keep it too.
    response["Cache-Control"] = (
        f"public, max-age=0, s-maxage={age}" if personal else f"public, max-age={age}"
    )
    return get_conditional_response(
        request, etag=response["ETag"], last_modified=modified, response=response
    )
