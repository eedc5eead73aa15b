"""An image battle in a real browser: paste an image, see its thumbnail, both models answer
about it, the vote keeps its hash and counts on the vision board after a recompute; a file that
is not an image is refused where it is picked."""

from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect

from arena.images.models import PromptImage
from arena.records.models import Battle, Vote
from arena.tagging.models import VoteTags
from ranking.services import leaderboard_recompute
from tests.helpers import assert_no_identity, make_model, make_user, shown_ago, sign_in, wait_until
from tests.images.pictures import picture

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("generation")]

PASTE = """([b64, type]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], "pasted.png", { type }));
  document.getElementById("prompt").dispatchEvent(
    new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
}"""


def test_a_pasted_image_is_shown_sent_to_both_models_and_kept_by_its_hash_in_the_vote(
    asgi_server, browser_page
):
    models = [
        make_model("Eye One", "eye-1", vision=True, takes_images=True),
        make_model("Eye Two", "eye-2", vision=True, takes_images=True),
    ]
    make_user("ivy@example.com")
    page = browser_page
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    sign_in(page, asgi_server, "ivy@example.com")

    page.evaluate(PASTE, [base64.b64encode(picture("PNG")).decode(), "image/png"])

    thumbnail = page.locator("#attachments li:not(.uploading) img")
    expect(thumbnail).to_have_count(1)
    expect(thumbnail).to_have_js_property("naturalWidth", 64)  # the server's copy, loaded
    sha = PromptImage.objects.get().sha256
    page.fill("#prompt", "What colour is this picture?")
    page.press("#prompt", "Enter")
    expect(page.locator("#shown-images img")).to_have_count(1)
    expect(page.locator("#attachments")).to_be_hidden()
    page.wait_for_selector("#arena[data-state=ready]")
    # Both mocks read the same image: each says so, naming it by its hash.
    for side in ("a", "b"):
        expect(page.locator(f"#pane-{side}")).to_contain_text(sha[:8])
    assert_no_identity(page.inner_text("#arena") + "\n".join(frames), models)

    shown_ago(Battle.objects.get(), 60)  # read for a minute: the vote counts
    page.click("#votes button[data-choice=a]")
    expect(page.locator("#reveal-a")).to_be_visible()
    vote = Vote.objects.get()
    assert [i["sha256"] for i in vote.images] == [sha]

    # The tagging job the vote sent marks it vision; the next recompute ranks it on that board.
    wait_until(lambda: VoteTags.objects.filter(vote=vote, tags__contains=["vision"]).exists())
    snapshot = leaderboard_recompute(rounds=10, min_votes=1)
    rows = snapshot.rows.filter(view="raw", breakdown="category:vision")
    assert {r.model_name for r in rows} == {"Eye One", "Eye Two"}
    assert sum(r.votes for r in rows) == 2  # one vote, seen from each side


def test_a_file_that_is_not_an_image_is_refused_where_it_is_picked(asgi_server, browser_page):
    make_model("Eye One", "eye-1", vision=True, takes_images=True)
    make_model("Eye Two", "eye-2", vision=True, takes_images=True)
    make_user("ned@example.com")
    page = browser_page
    sign_in(page, asgi_server, "ned@example.com")

    page.set_input_files(
        "#image-input",
        files=[{"name": "chart.png", "mimeType": "image/png", "buffer": b"<svg>not a png</svg>"}],
    )

    expect(page.locator("#notice")).to_contain_text("not a PNG, JPEG, WebP or GIF image")
    expect(page.locator("#attachments")).to_be_hidden()
    assert not PromptImage.objects.exists()
