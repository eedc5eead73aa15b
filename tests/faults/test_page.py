"""The real page through a database restart: a vote answered 'unavailable' is sent again by the
page, with backoff, until it lands; the rater sees it is being retried, then the reveal."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.faults, pytest.mark.browser]


def test_a_vote_while_postgresql_is_down_is_retried_by_the_page_until_it_lands(
    postgres_stack, browser_page
):
    stack, cluster = postgres_stack.stack, postgres_stack.cluster
    page = browser_page
    name, value = postgres_stack.cookie.split("=", 1)
    page.context.add_cookies([{"name": name, "value": value, "url": stack.daphne.url}])
    page.goto(stack.daphne.url + "/")
    page.wait_for_selector("#arena[data-connected=true]")
    page.fill("#prompt", "Describe a lighthouse at dusk.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    cluster.kill()
    page.click(".intro")
    page.keyboard.press("1")
    page.wait_for_selector("#notice:has-text('briefly unavailable')")
    cluster.start()
    page.wait_for_selector("#arena[data-state=voted]", timeout=60_000)
    assert page.locator("#reveal-a").is_visible()
    assert list(postgres_stack.votes().values()) == [1]
