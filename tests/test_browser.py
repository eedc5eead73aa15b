"""A real rater in a real browser: sign up, battle, vote with a shortcut, see the reveal."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from arena.models import Vote
from tests.conftest import identity_strings, make_two_models

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> '


@pytest.fixture
def battle_models(transactional_db):
    from arena.services import prompt_create

    prompt_create(text="Describe a lighthouse at dusk.", category="writing", language="en")
    return make_two_models(prefix=HOSTILE)


def test_rater_signs_up_battles_votes_by_keyboard_and_sees_the_reveal(
    asgi_server, browser_page, battle_models
):
    page = browser_page
    received: list[str] = []  # every HTTP body and websocket frame, in arrival order

    def record(response):
        if response.status < 300 or response.status >= 400:  # redirects have no body
            received.append(response.text())

    page.on("response", record)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: received.append(str(f))))

    page.goto(asgi_server + "/accounts/signup/")
    page.fill("input[name=email]", "carol@example.com")
    page.fill("input[name=password1]", "a-long-unusual-passphrase-42")
    page.fill("input[name=password2]", "a-long-unusual-passphrase-42")
    page.click("button[type=submit]")
    page.wait_for_selector("#arena[data-connected=true]")

    page.click("#random-prompt")
    expect(page.locator("#prompt")).to_have_value("Describe a lighthouse at dusk.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")

    pane_a = page.inner_text("#pane-a .bot-msg")
    pane_b = page.inner_text("#pane-b .bot-msg")
    assert len(pane_a) > 20 and len(pane_b) > 20
    # Hostile markup from a model shows as text and never runs.
    assert "<script>" in pane_a and "<script>" in pane_b
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#pane-a img, #pane-b img, #pane-a script").count() == 0
    assert page.is_enabled("button[data-choice=a]")

    before_vote = "\n".join(received).lower()
    for secret in identity_strings(*battle_models):
        assert secret.lower() not in before_vote, f"{secret!r} reached the browser before the vote"

    page.click(".intro")  # focus away from the prompt box; shortcuts act on the page
    page.keyboard.press("1")
    page.wait_for_selector("#arena[data-state=voted]")
    revealed = {page.inner_text("#reveal-a"), page.inner_text("#reveal-b")}
    assert any("Zephyr Quill" in r for r in revealed)
    assert any("Orchid Lantern" in r for r in revealed)
    assert page.is_disabled("button[data-choice=b]")

    vote = Vote.objects.select_related("rater").get()
    assert vote.choice == "a" and vote.rater.email == "carol@example.com"
    frames = [json.loads(r) for r in received if r.startswith('{"type"')]
    assert [f["type"] for f in frames][-1] == "revealed"
