"""The public leaderboard and its exports for a crowd: rendered once per snapshot, validated by
ETag and Last-Modified, public to visitors, and never one person's page served to another."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.session import SessionStorage
from django.test import Client

from ranking import services
from tests.helpers import make_user

PAGES = ["/leaderboard/", "/leaderboard/?view=style", "/leaderboard/model/Alpha/"]
EXPORTS = ["/leaderboard.json", "/leaderboard.csv"]


@pytest.fixture
def snapshot(voted):
    return services.leaderboard_recompute(include_simulated=True, rounds=50)


@pytest.fixture
def member(db) -> Client:
    client = Client()
    client.force_login(make_user("member@example.com", is_staff=True))
    return client


def vary(response) -> set[str]:
    return {v.strip().lower() for v in response.get("Vary", "").split(",") if v.strip()}


@pytest.mark.parametrize("url", PAGES + EXPORTS)
def test_a_visitor_gets_a_public_answer_with_validators_and_no_vary_cookie(snapshot, url):
    response = Client().get(url)
    assert response.status_code == 200
    # Shared caches keep a page; a browser asks again (a 304) so a sign-in shows at once.
    expected = "public, max-age=60" if url in EXPORTS else "public, max-age=0, s-maxage=60"
    assert response["Cache-Control"] == expected
    assert str(snapshot.pk) in response["ETag"] and response["ETag"].startswith('"')
    assert response["Last-Modified"].endswith("GMT")
    assert "cookie" not in vary(response)
    assert not response.cookies  # nothing set that a shared cache would hand on


@pytest.mark.parametrize("url", PAGES + EXPORTS)
def test_a_conditional_get_is_answered_304_from_one_query(snapshot, url, django_assert_num_queries):
    visitor = Client()
    first = visitor.get(url)
    with django_assert_num_queries(1):  # which snapshot is the latest; the page is kept
        again = visitor.get(url, headers={"if-none-match": first["ETag"]})
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == first["ETag"] and again["Cache-Control"] == first["Cache-Control"]
    since = visitor.get(url, headers={"if-modified-since": first["Last-Modified"]})
    assert since.status_code == 304
    with django_assert_num_queries(1):
        kept = visitor.get(url)
    assert kept.status_code == 200 and kept.content == first.content


def test_a_member_page_is_never_served_to_a_visitor_nor_a_visitor_page_to_a_member(
    snapshot, member
):
    mine = member.get("/leaderboard/")
    html = mine.content.decode()
    assert "member@example.com" in html and "Sign out" in html and "Sign in" not in html
    assert 'href="/admin/"' in html  # their own links, drawn for them on the kept page
    assert mine["Cache-Control"] == "private, no-cache" and "ETag" not in mine
    assert "cookie" in vary(mine)

    public = Client().get("/leaderboard/")
    text = public.content.decode()
    assert "member@example.com" not in text and "Sign out" not in text
    assert "Sign in" in text and "csrfmiddlewaretoken" not in text
    # Past the header the two pages are the same rendering.
    assert html.split("<main>")[1] == text.split("<main>")[1]

    # A member holding a visitor's copy is not told to keep it.
    again = member.get("/leaderboard/", headers={"if-none-match": public["ETag"]})
    assert again.status_code == 200 and "member@example.com" in again.content.decode()


def test_a_signed_in_member_sees_their_flash_messages_on_a_kept_page(snapshot, member, settings):
    Client().get("/leaderboard/")  # kept, as a visitor sees it
    # A message waiting in the member's session, as a redirect after an action leaves one.
    settings.MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
    session = member.session
    waiting = [Message(constants.SUCCESS, "Saved for you.")]
    storage = SessionStorage(SimpleNamespace(session=session))
    session[SessionStorage.session_key] = storage.serialize_messages(waiting)
    session.save()
    assert "Saved for you." in member.get("/leaderboard/").content.decode()
    assert "Saved for you." not in Client().get("/leaderboard/").content.decode()


def test_a_new_snapshot_gives_new_etags_and_new_content_at_once(snapshot):
    visitor = Client()
    old = {url: visitor.get(url) for url in ["/leaderboard/", *EXPORTS]}
    assert f"snapshot #{snapshot.pk}" in old["/leaderboard/"].content.decode()

    newer = services.leaderboard_recompute(include_simulated=True, rounds=60)
    assert newer.pk != snapshot.pk
    for url, before in old.items():
        now = visitor.get(url, headers={"if-none-match": before["ETag"]})
        assert now.status_code == 200 and now["ETag"] != before["ETag"]
        assert str(newer.pk) in now["ETag"] and now.content != before.content
    page = visitor.get("/leaderboard/").content.decode()
    assert f"snapshot #{newer.pk}" in page and f"snapshot #{snapshot.pk}" not in page
    assert visitor.get("/leaderboard.json").json()["snapshot"]["id"] == newer.pk
    # An older snapshot's own export stays its own.
    older = visitor.get(f"/leaderboard/{snapshot.pk}.json")
    assert older.json()["snapshot"]["id"] == snapshot.pk and older["ETag"] != now["ETag"]


def test_boards_and_models_are_kept_apart_and_a_missing_one_is_404_each_time(snapshot):
    visitor = Client()
    raw, style = visitor.get("/leaderboard/"), visitor.get("/leaderboard/?view=style")
    assert raw["ETag"] != style["ETag"] and "What raters reward" in style.content.decode()
    assert "What raters reward" not in raw.content.decode()
    for _ in range(2):
        assert visitor.get("/leaderboard/?breakdown=category:nope").status_code == 404
        assert visitor.get("/leaderboard/model/Nobody/").status_code == 404
    alpha = visitor.get("/leaderboard/model/Alpha/").content.decode()
    assert "Alpha" in alpha and "Beta" in visitor.get("/leaderboard/model/Beta/").content.decode()


def test_with_the_cache_off_every_request_is_rendered_for_its_requester(snapshot, member, settings):
    settings.PUBLIC_PAGE_CACHE = False
    public = Client().get("/leaderboard/")
    assert public.status_code == 200 and "ETag" not in public
    assert "Cache-Control" not in public and "Sign in" in public.content.decode()
    assert "member@example.com" in member.get("/leaderboard/").content.decode()
