"""The rater's screen in a real browser: Stop mid-stream, panes that keep the vote in reach and
follow the text, names in the headings after the vote, and notices that never go stale."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from arena.catalog.models import ModelEntry
from arena.records.models import Answer, Battle
from tests.helpers import make_model, make_two_models, make_user, sign_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

# Scroll state of a pane, read in the page: how far down, how tall, how much is shown.
PANE = (
    "s => { const p = document.getElementById('pane-' + s); "
    "return {top: p.scrollTop, height: p.scrollHeight, shown: p.clientHeight}; }"
)
# Both panes hold more than they show; pane B has grown past a height.
OVERFLOWING = (
    f"() => ['a', 'b'].every(s => {{ const p = ({PANE})(s); return p.height > p.shown + 200; }})"
)
GROWN = f"h => ({PANE})('b').height > h"


def _pane(page, side: str) -> dict:
    return page.evaluate(PANE, side)


def _at_foot(pane: dict) -> bool:
    return pane["top"] + pane["shown"] >= pane["height"] - 24


def test_panes_follow_the_stream_unless_scrolled_up_and_stop_cancels_both(
    asgi_server, browser_page, transactional_db
):
    # Two models that write far more than a pane holds, slower than they are shown: neither
    # ends before the test stops them.
    for name in ("Long Wren", "Long Finch"):
        make_model(name, name.lower().replace(" ", "-"), tokens_per_s=200, answer_tokens=5000)
    make_user("pia@example.com")
    page = browser_page
    sign_in(page, asgi_server, "pia@example.com")
    page.fill("#prompt", "Write me a very long essay.")
    page.click("#send")
    expect(page.locator("#stop")).to_be_enabled()
    # Both panes fill past their height and scroll on their own, level with each other.
    page.wait_for_function(OVERFLOWING)
    a_box, b_box = page.locator("#pane-a").bounding_box(), page.locator("#pane-b").bounding_box()
    assert a_box["height"] == b_box["height"] and a_box["y"] == b_box["y"]
    assert _at_foot(_pane(page, "a")) and _at_foot(_pane(page, "b"))

    # The rater scrolls A up to read: A stays where they put it while B keeps following.
    page.evaluate("() => { document.getElementById('pane-a').scrollTop = 0; }")
    grown_from = _pane(page, "b")["height"]
    page.wait_for_function(GROWN, arg=grown_from + 300)
    assert _pane(page, "a")["top"] == 0
    assert _at_foot(_pane(page, "b"))

    page.click("#stop")
    expect(page.locator("#notice")).to_contain_text("Stopped")
    expect(page.locator("#arena")).to_have_attribute("data-state", "void")
    expect(page.locator("#stop")).to_be_hidden()
    battle = Battle.objects.get()
    assert (battle.status, battle.void_reason) == (Battle.Status.VOID, "stopped by the rater")
    wait_until(lambda: all(a.is_terminal for a in Answer.objects.filter(turn__battle=battle)))
    assert set(Answer.objects.values_list("error_kind", flat=True)) == {"stopped"}

    # A new battle starts at once.
    ModelEntry.objects.update(active=False)
    make_two_models()
    page.fill("#prompt", "Something short now.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    assert Battle.objects.count() == 2


def test_after_the_vote_the_names_replace_the_headings_and_the_vote_stays_in_reach(
    asgi_server, browser_page, transactional_db
):
    for name in ("Tide Owl", "Tide Lark"):  # answers far longer than a pane
        make_model(name, name.lower().replace(" ", "-"), answer_tokens=1500)
    make_user("quinn@example.com")
    page = browser_page
    sign_in(page, asgi_server, "quinn@example.com")
    page.fill("#prompt", "Tell me everything about tides.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    votes = page.locator("#votes").bounding_box()
    assert votes["y"] + votes["height"] <= page.viewport_size["height"]
    expect(page.locator("#heading-a")).to_have_text("Model A")
    page.click("#votes button[data-choice=tie]")
    page.wait_for_selector("#arena[data-state=voted]")
    battle = Battle.objects.select_related("model_a", "model_b").get()
    expect(page.locator("#heading-a")).to_have_text(battle.model_a.public_name)
    expect(page.locator("#heading-b")).to_have_text(battle.model_b.public_name)
    page.click("#new-battle")
    expect(page.locator("#heading-a")).to_have_text("Model A")


def test_notices_go_when_they_no_longer_hold(asgi_server, browser_page, transactional_db):
    make_two_models()
    make_user("rhea@example.com")
    page = browser_page
    sign_in(page, asgi_server, "rhea@example.com")
    expect(page.locator(".messages")).to_contain_text("signed in")
    page.click("#send")  # nothing typed
    expect(page.locator("#notice")).to_contain_text("Type a prompt first")
    page.type("#prompt", "W")
    expect(page.locator("#notice")).to_be_hidden()
    page.fill("#prompt", "What is a tide?")
    page.click("#send")
    expect(page.locator(".messages")).to_have_count(0)  # the sign-in banner has been read
    page.wait_for_selector("#arena[data-state=ready]")


def test_a_void_battle_does_not_also_say_its_vote_will_be_recorded(
    asgi_server, browser_page, transactional_db
):
    make_model("Broken Kite", "broken-kite", misbehaviour="error_midstream", answer_tokens=60)
    make_model("Fine Kite", "fine-kite", answer_tokens=60)
    make_user("sam@example.com")
    page = browser_page
    sign_in(page, asgi_server, "sam@example.com")
    page.fill("#prompt", "Who are you and which company made you?")
    page.click("#send")
    expect(page.locator("#integrity")).to_contain_text("will not count")
    page.wait_for_selector("#arena[data-state=void]")
    expect(page.locator("#notice")).to_contain_text("void")
    expect(page.locator("#integrity")).to_be_hidden()


def test_an_unconfirmed_rater_is_told_once_and_offered_nothing_that_would_be_refused(
    asgi_server, browser_page, transactional_db, settings
):
    make_two_models()
    make_user("tara@example.com", verified=False)
    page = browser_page
    sign_in(page, asgi_server, "tara@example.com")
    expect(page.locator("#blocked")).to_contain_text("confirm your email")
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#random-prompt")).to_be_disabled()
    expect(page.locator("#prompt")).to_be_disabled()
    page.keyboard.press("Enter")
    expect(page.locator("#notice")).to_be_hidden()
    assert not Battle.objects.exists()
