"""An image battle in a real browser: paste an image, see its thumbnail, both models answer
about it, the vote keeps its hash; a file that is not an image is refused where it is picked."""

from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect

from arena.battles.models import Vote
from arena.images.models import PromptImage
from tests.helpers import assert_no_identity, make_model, make_user, sign_in
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

    page.click("#votes button[data-choice=a]")
    expect(page.locator("#reveal-a")).to_be_visible()
    assert [i["sha256"] for i in Vote.objects.get().images] == [sha]


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
