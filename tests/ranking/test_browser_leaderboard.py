"""The leaderboard, its matrices and a model page in a real browser: readable with JavaScript
off, and no wider than a 390-pixel phone; the battle page fits the phone too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from ranking import services
from tests.helpers import make_two_models, make_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

PHONE = {"width": 390, "height": 844}
PAGE_WIDTH = "() => document.documentElement.scrollWidth"


@pytest.fixture
def phone(browser_page):
    """A phone-sized page with JavaScript off, beside the usual one."""
    context = browser_page.context.browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    yield page
    context.close()


def test_the_matrices_and_a_model_page_read_without_javascript_on_a_phone(
    asgi_server, phone, voted
):
    services.leaderboard_recompute(include_simulated=True, rounds=50, min_votes=100)
    services.leaderboard_recompute(include_simulated=True, rounds=50, min_votes=100)
    phone.goto(asgi_server + "/leaderboard/")
    for figure in ("#win-rates", "#battle-counts", "#predicted"):
        svg = phone.locator(f"{figure} svg")
        expect(svg).to_be_visible()
        assert svg.bounding_box()["width"] <= PHONE["width"]
    expect(phone.locator("#win-rates")).to_contain_text("Alpha")
    assert phone.evaluate(PAGE_WIDTH) <= PHONE["width"]

    phone.click("text=Alpha")
    expect(phone.locator("h1")).to_have_text("Alpha")
    expect(phone.locator("#opponents")).to_contain_text("Delta")
    expect(phone.locator("#history svg polyline")).to_have_count(1)
    assert phone.evaluate(PAGE_WIDTH) <= PHONE["width"]

    phone.goto(asgi_server + "/leaderboard/?breakdown=language:xx")
    expect(phone.locator("h1")).to_contain_text("Not found")


def test_the_battle_page_fits_a_phone(asgi_server, browser_page):
    make_two_models()
    yara = make_user("yara@example.com", is_staff=True)  # the longest header: every link
    yara.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="arena", codename__in=["use_compare", "view_calibration"]
        )
    )
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page, asgi_server, "yara@example.com")
    page.fill("#prompt", "Write a table of three planets and their moons, then some code.")
    page.click("#send")
    page.wait_for_selector("#arena[data-state=ready]")
    assert page.evaluate(PAGE_WIDTH) <= PHONE["width"]
    votes = page.locator("#votes").bounding_box()
    assert votes["x"] >= 0 and votes["x"] + votes["width"] <= PHONE["width"]
