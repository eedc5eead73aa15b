"""The prompt box in a real browser: a prompt over the limit is refused where it is typed,
never silently cut to fit."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from arena.records.models import Battle
from tests.helpers import make_two_models, make_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]


def test_an_over_long_paste_is_refused_visibly_and_starts_nothing(asgi_server, browser_page):
    make_two_models()
    make_user("olga@example.com")
    page = browser_page
    sign_in(page, asgi_server, "olga@example.com")
    limit = settings.ARENA["PROMPT_MAX_CHARS"]
    page.fill("#prompt", "x" * (limit + 8000))
    assert len(page.input_value("#prompt")) == limit + 8000  # nothing cut
    expect(page.locator("#counter")).to_have_class("counter over")
    expect(page.locator("#counter")).to_contain_text("8000 characters over the limit")
    expect(page.locator("#send")).to_be_disabled()
    page.press("#prompt", "Enter")
    expect(page.locator("#notice")).to_contain_text(f"the limit is {limit}")
    assert not Battle.objects.exists()
    page.fill("#prompt", "x" * limit)  # at the limit it fits again
    expect(page.locator("#send")).to_be_enabled()
    expect(page.locator("#counter")).to_have_class("counter")
