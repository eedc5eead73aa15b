"""A real rater in a real browser: sign up, battle, vote with a shortcut, see the reveal."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from playwright.sync_api import expect

from arena.records.models import Battle, Vote
from tests.helpers import (
    LOGS,
    answer_texts,
    assert_no_identity,
    make_two_models,
    make_user,
    sign_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> '


@pytest.fixture
def battle_models(transactional_db):
    from arena.battles.prompts import prompt_create

    prompt_create(text="Describe a lighthouse at dusk.", category="writing", language="en")
    return make_two_models(prefix=HOSTILE)


def confirmation_link(server: str, email: str) -> str:
    import re
    import time

    log = LOGS / "test-daphne.log"
    pattern = re.compile(re.escape(server) + r"/accounts/confirm-email/[^/\s]+/")
    for _ in range(200):  # the mail is written as the sign-up response goes out
        found = pattern.findall(log.read_text(errors="replace"))
        if found and email in log.read_text(errors="replace"):
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no confirmation mail for {email} in {log}")


def test_identity_question_is_flagged_up_front_and_no_name_shows_before_the_vote(
    asgi_server, browser_page, battle_models
):
    make_user("erin@example.com")
    page = browser_page
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    sign_in(page, asgi_server, "erin@example.com")
    page.fill("#prompt", "What model are you, and who made you?")
    page.click("#send")
    expect(page.locator("#integrity")).to_contain_text("will not count")
    page.wait_for_selector("#arena[data-state=ready]")
    shown = (page.inner_text("#pane-a") + page.inner_text("#pane-b") + "\n".join(frames)).lower()
    assert_no_identity(shown, battle_models)
    page.click(".intro")
    page.keyboard.press("3")
    page.wait_for_selector("#arena[data-state=voted]")
    from arena.records.models import Vote

    vote = Vote.objects.get()
    assert set(vote.flags.values_list("reason", flat=True)) >= {"identity_question"}


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
    # Crowd raters battle once their address is confirmed: follow the emailed link (the
    # console mail backend writes it to the server's log).
    expect(page.locator("#blocked")).to_contain_text("confirm your email")
    page.goto(confirmation_link(asgi_server, "carol@example.com"))
    page.click("main button[type=submit]")
    page.goto(asgi_server + "/")
    expect(page.locator("#blocked")).to_have_count(0)
    page.click("#terms button[type=submit]")  # a new rater accepts the terms once
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

    assert_no_identity(received, battle_models)

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


@pytest.mark.skipif(
    not settings.REDIS_URL,
    reason="a battle outlives its web process when its streams are on Redis (CI); the embedded "
    "default is one process whose streams and generation die with it",
)
def test_a_battle_carries_on_after_its_web_process_is_killed_mid_stream_and_mid_vote(
    daphne_server, browser_page
):
    # Slow enough that the kill lands mid-stream: 40 tokens at 12 tokens/s on each side.
    models = make_two_models(tokens_per_s=12)
    make_user("fay@example.com")
    page = browser_page
    sign_in(page, daphne_server.url, "fay@example.com")
    page.fill("#prompt", "Describe a lighthouse at dusk.")
    page.click("#send")
    page.wait_for_selector("#pane-a .bot-msg[data-pending=false]")  # some text is shown
    assert page.get_attribute("#arena", "data-state") == "generating"
    daphne_server.kill()
    page.wait_for_selector("#arena[data-connected=false]")
    daphne_server.start()
    page.wait_for_selector("#arena[data-state=ready]")  # resumed on the new process, shown whole
    battle = Battle.objects.get()
    texts = answer_texts(battle.pk)
    panes = {s: page.inner_text(f"#pane-{s} .bot-msg") for s in "ab"}
    for side in "ab":  # rendered markdown: every word of the answer, none twice
        assert (
            panes[side].split()
            == texts[side].replace("#", "").replace("*", "").replace("-", "").split()
        )
    assert_no_identity(panes["a"] + panes["b"], models)
    page.click(".intro")
    page.keyboard.press("1")
    # Killed again, mid-vote: whether the vote landed or not, the page sends it again on the
    # new process and gets the reveal; the vote is stored once.
    daphne_server.kill()
    daphne_server.start()
    page.wait_for_selector("#arena[data-state=voted]")
    assert Vote.objects.get(battle=battle).choice == "a"


def test_a_reloaded_tab_is_offered_its_battle_and_carries_on_with_every_turn(
    asgi_server, browser_page
):
    models = make_two_models()
    make_user("gus@example.com")
    page = browser_page
    sign_in(page, asgi_server, "gus@example.com")
    page.fill("#prompt", "Describe a lighthouse at dusk.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    page.fill("#prompt", "Now as a haiku.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    page.reload()
    page.wait_for_selector("#offer:not([hidden])")
    assert page.locator("#pane-a .turn").count() == 0
    page.click("#carry-on")
    page.wait_for_selector("#arena[data-state=ready]")
    battle = Battle.objects.get()
    assert page.locator("#pane-a .turn").count() == 2
    prompts = page.locator("#pane-b .user-msg").all_inner_texts()
    assert prompts == ["Describe a lighthouse at dusk.", "Now as a haiku."]
    assert_no_identity(page.inner_text("#pane-a") + page.inner_text("#pane-b"), models)
    page.click(".intro")
    page.keyboard.press("2")
    page.wait_for_selector("#arena[data-state=voted]")
    assert Vote.objects.get(battle=battle).choice == "b"
    page.reload()
    page.wait_for_selector("#arena[data-connected=true]")
    assert page.locator("#offer").is_hidden()  # voted: nothing to offer any more
