"""The rater's terms: accepted once before the first battle, asked again when their version
changes, and off when there is no text."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from playwright.sync_api import expect

from arena.records.models import Battle
from tests.helpers import RECEIVE_TIMEOUT, make_two_models, make_user, sign_in


@pytest.fixture
def newcomer(db):
    return make_user("vera@example.com", terms=False)


def test_the_battle_page_offers_the_terms_until_they_are_accepted(newcomer, settings):
    client = Client()
    client.force_login(newcomer)
    page = client.get("/")
    assert settings.TERMS["TEXT"][:40] in page.content.decode()
    assert b'data-blocked="true"' in page.content
    assert client.get("/terms/accept/").status_code == 405  # only a form post accepts
    assert client.post("/terms/accept/", {"version": "0"})["Location"] == "/"  # not the one shown
    newcomer.refresh_from_db()
    assert newcomer.terms_version == ""
    assert client.post("/terms/accept/", {"version": settings.TERMS["VERSION"]}).status_code == 302
    newcomer.refresh_from_db()
    assert newcomer.terms_version == settings.TERMS["VERSION"] and newcomer.terms_accepted_at
    page = client.get("/")
    assert b'id="terms"' not in page.content and b"data-blocked" not in page.content


def test_a_new_version_of_the_terms_is_asked_for_again(alice, settings):
    client = Client()
    client.force_login(alice)
    assert b'id="terms"' not in client.get("/").content
    settings.TERMS = {**settings.TERMS, "VERSION": "2"}
    assert b'id="terms"' in client.get("/").content


def test_no_terms_text_means_nothing_to_accept(newcomer, settings):
    settings.TERMS = {**settings.TERMS, "TEXT": ""}
    client = Client()
    client.force_login(newcomer)
    assert b'id="terms"' not in client.get("/").content


@pytest.mark.usefixtures("generation")
async def test_a_battle_is_refused_until_the_terms_are_accepted(ws_connect, newcomer):
    await database_sync_to_async(make_two_models)()
    comm = await ws_connect(newcomer)
    await comm.connect()
    await comm.send_json_to({"action": "start", "prompt": "Hello?"})
    frame = await comm.receive_json_from(timeout=RECEIVE_TIMEOUT)
    assert frame["code"] == "terms_not_accepted"
    assert not await database_sync_to_async(Battle.objects.exists)()
    await comm.disconnect()


@pytest.mark.browser
@pytest.mark.usefixtures("generation")
def test_the_terms_are_accepted_once_in_the_browser(asgi_server, browser_page):
    make_two_models()
    make_user("wren@example.com", terms=False)
    page = browser_page
    sign_in(page, asgi_server, "wren@example.com")
    expect(page.locator("#terms")).to_contain_text("published")
    expect(page.locator("#send")).to_be_disabled()
    page.click("#terms button[type=submit]")
    page.wait_for_selector("#arena[data-connected=true]")
    expect(page.locator("#terms")).to_have_count(0)
    page.fill("#prompt", "What is a tide?")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    page.reload()
    page.wait_for_selector("#arena[data-connected=true]")
    expect(page.locator("#terms")).to_have_count(0)  # once
