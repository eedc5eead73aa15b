"""Visitors' public pages replayed before Django (ranking.public_asgi): through the real ASGI
app, the very answer Django gives (status, every header, body, 304s too), never a member's page
nor a visitor's to a member, and a new snapshot, from any process, served by the next request."""

from __future__ import annotations

import asyncio
import urllib.request

import pytest

from arena.asgi import application, django_asgi_app
from ranking import services
from tests.helpers import make_user, session_headers

PAGES = ["/leaderboard/", "/leaderboard/?view=style", "/leaderboard/model/Alpha/"]
EXPORTS = ["/leaderboard.json", "/leaderboard.csv"]


@pytest.fixture
def pages(transactional_db, voted):
    """The ASGI app's fast path, what it keeps emptied; its stamp reader's connection closed
    afterwards (the test database is dropped at the end of the run)."""
    public = application.application_mapping["http"]
    public.forget()
    yield public
    public.stamps.close()


@pytest.fixture
def snapshot(pages):
    return services.leaderboard_recompute(include_simulated=True, rounds=50)


def call(app, url: str, *, method: str = "GET", headers: tuple = ()) -> tuple:
    """(status, headers, body) of ``app``'s answer, as it sent them through ASGI."""
    path, _, query = url.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []

    async def run() -> None:
        asked = False
        never = asyncio.Event()

        async def receive() -> dict:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await never.wait()  # the client stays connected

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)

    asyncio.run(run())
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], [(bytes(k), bytes(v)) for k, v in start["headers"]], body


def header(answer: tuple, name: bytes) -> bytes | None:
    return next((v for k, v in answer[1] if k.lower() == name), None)


@pytest.mark.parametrize("url", PAGES + EXPORTS)
def test_a_visitor_gets_djangos_own_answer_replayed_byte_for_byte(snapshot, pages, url):
    first = call(application, url)  # Django's, kept
    assert first[0] == 200 and header(first, b"etag")
    replayed = pages.replayed
    again = call(application, url)
    assert pages.replayed == replayed + 1  # not through Django
    assert again == first
    # And the same as Django alone answers it: every header its middlewares add, in order.
    assert call(django_asgi_app, url) == first


@pytest.mark.parametrize("url", ["/leaderboard/", "/leaderboard.json"])
def test_a_conditional_get_is_djangos_304_replayed(snapshot, pages, url):
    etag = header(call(application, url), b"etag")
    modified = header(call(application, url), b"last-modified")
    unmodified = call(django_asgi_app, url, headers=((b"if-none-match", etag),))
    assert unmodified[0] == 304 and unmodified[2] == b""
    assert call(application, url, headers=((b"if-none-match", etag),)) == unmodified  # kept
    replayed = pages.replayed
    assert call(application, url, headers=((b"if-none-match", etag),)) == unmodified
    since = ((b"if-modified-since", modified),)
    assert call(application, url, headers=since) == call(django_asgi_app, url, headers=since)
    assert pages.replayed == replayed + 2
    # Another ETag: the page itself, replayed.
    other = call(application, url, headers=((b"if-none-match", b'"other"'),))
    assert other == call(django_asgi_app, url)


def test_a_member_never_gets_a_visitors_copy_nor_a_visitor_a_members(snapshot, pages):
    member = make_user("member@example.com", is_staff=True)
    cookie = next(h for h in session_headers(member) if h[0] == b"cookie")
    call(application, "/leaderboard/")  # a visitor's, kept
    replayed = pages.replayed
    for _ in range(2):
        mine = call(application, "/leaderboard/", headers=(cookie,))
        assert b"member@example.com" in mine[2] and header(mine, b"etag") is None
        assert header(mine, b"cache-control") == b"private, no-cache"
    assert pages.replayed == replayed  # Django's, each time
    public = call(application, "/leaderboard/")
    assert b"member@example.com" not in public[2] and b"Sign in" in public[2]
    assert pages.replayed == replayed + 1


def test_what_django_must_answer_goes_to_django(snapshot, pages, settings):
    call(application, "/leaderboard/")
    replayed = pages.replayed
    # A CSRF cookie Django replaces: its answer sets a new one.
    bad = call(application, "/leaderboard/", headers=((b"cookie", b"csrftoken=short"),))
    assert header(bad, b"set-cookie").startswith(b"csrftoken=")
    # Methods the page does not take, a page that is not public, a precondition.
    assert call(application, "/leaderboard/", method="HEAD")[0] == 405
    assert call(application, "/leaderboard/", method="POST")[0] == 403  # CSRF first
    assert call(application, "/leaderboard/judge/")[0] in (200, 404)
    assert call(application, "/leaderboard/", headers=((b"if-match", b'"x"'),))[0] == 412
    assert pages.replayed == replayed
    # A good CSRF cookie changes nothing in Django's answer: replayed.
    good = call(application, "/leaderboard/", headers=((b"cookie", b"csrftoken=" + b"a" * 32),))
    assert pages.replayed == replayed + 1 and good == call(django_asgi_app, "/leaderboard/")
    # With the cache off, every request is rendered, as before.
    settings.PUBLIC_PAGE_CACHE = False
    assert header(call(application, "/leaderboard/"), b"etag") is None
    assert pages.replayed == replayed + 1


def test_a_new_snapshot_is_served_by_the_next_request(snapshot, pages):
    old = {url: call(application, url) for url in ["/leaderboard/", *EXPORTS]}
    for url in old:
        assert call(application, url) == old[url]  # replayed
    newer = services.leaderboard_recompute(include_simulated=True, rounds=60)
    for url, before in old.items():
        now = call(application, url)
        assert str(newer.pk).encode() in header(now, b"etag") and now[2] != before[2]
        assert now == call(django_asgi_app, url)
    assert f"snapshot #{newer.pk}".encode() in call(application, "/leaderboard/")[2]


def test_a_snapshot_published_by_another_process_is_served_by_the_next_request(asgi_server, voted):
    """A real daphne process keeps the page; this process publishes; the next request to
    daphne has the new snapshot (no message between them: the stamp is read per request)."""
    first = services.leaderboard_recompute(include_simulated=True, rounds=50)

    def get(url: str) -> tuple[dict, bytes]:
        with urllib.request.urlopen(asgi_server + url) as answer:
            return dict(answer.headers), answer.read()

    kept = get("/leaderboard/")
    assert str(first.pk) in kept[0]["ETag"]
    assert get("/leaderboard/") == kept  # replayed: the same headers and page
    newer = services.leaderboard_recompute(include_simulated=True, rounds=60)
    headers, page = get("/leaderboard/")
    assert str(newer.pk) in headers["ETag"] and f"snapshot #{newer.pk}".encode() in page
