"""Images through every backend: each vendor's request body with images, checked byte for byte
against the recorded bodies in ``tests/fixtures/image_requests`` (the vendors' documented forms:
OpenAI-compatible ``image_url`` data URLs, Anthropic base64 ``image`` blocks, Gemini
``inlineData`` parts, each image before the text it comes with), and the mock that can see."""

from __future__ import annotations

import pytest

from arena.backends.base import ChatRequest, Image, Message, StreamError
from arena.backends.mock import MockBackend, MockSettings, answer_text
from arena.backends.registry import KINDS, backend_class
from arena.devtools.fixture_server import FIXTURES, Canned
from tests.helpers import QUESTION, SYSTEM, backend, run

pytestmark = pytest.mark.usefixtures("vendor_keys")

HERE = FIXTURES / "image_requests"
RED = Image.of("image/png", (HERE / "red.png").read_bytes())
BLUE = Image.of("image/jpeg", (HERE / "blue.jpg").read_bytes())
GREEN = Image.of("image/webp", (HERE / "green.webp").read_bytes())
ASKED = "Which of these two colours is warmer?"
# A follow-up turn: the first turn's images travel with it; later turns stay plain text.
REQUEST = ChatRequest(
    "test-model",
    (
        Message("system", SYSTEM),
        Message("user", ASKED, (RED, BLUE)),
        Message("assistant", "The red one."),
        Message("user", QUESTION),
    ),
    {"temperature": 0.7, "top_p": 0.9, "max_tokens": 256},
)
STREAMS = {"openai_compatible": "vllm.sse", "openai": "openai.sse", "anthropic": "anthropic.sse",
           "gemini": "gemini.sse"}  # fmt: skip


@pytest.mark.parametrize("kind", list(STREAMS))
async def test_a_request_with_images_is_the_vendors_body_byte_for_byte(server, kind):
    server.response = Canned.sse(STREAMS[kind])
    result, _ = await run(backend(server, kind), REQUEST)
    assert result.status == "ok"
    assert server.last.body == (HERE / f"{kind}.json").read_bytes()


def test_every_kind_says_whether_it_carries_images():
    assert {cls.kind: cls.takes_images for cls in KINDS} == {
        "mock": True, "openai_compatible": True, "openai": True, "anthropic": True,
        "gemini": True,
    }  # fmt: skip
    assert backend_class("openai").takes_images  # OpenAI's adapter inherits the body


async def test_anthropic_merges_an_image_turn_with_a_text_turn_of_the_same_role(server):
    server.response = Canned.sse("anthropic.sse")
    request = ChatRequest(
        "test-model",
        (Message("user", "", (GREEN,)), Message("assistant", ""), Message("user", ASKED)),
    )
    await run(backend(server, "anthropic"), request)
    image = {"type": "base64", "media_type": "image/webp", "data": GREEN.base64()}
    assert server.last.json()["messages"] == [{"role": "user", "content": [
        {"type": "image", "source": image}, {"type": "text", "text": ASKED},
    ]}]  # fmt: skip


async def test_gemini_sends_an_image_without_text_as_one_part(server):
    server.response = Canned.sse("gemini.sse")
    await run(backend(server, "gemini"), ChatRequest("test-model", (Message("user", "", (RED,)),)))
    assert server.last.json()["contents"] == [
        {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png",
                                                   "data": RED.base64()}}]}
    ]  # fmt: skip


def test_an_image_is_one_of_the_types_every_vendor_reads_and_only_a_user_sends_one():
    with pytest.raises(ValueError, match="image/png"):
        Image.of("image/gif", b"GIF89a")
    with pytest.raises(ValueError, match="user"):
        Message("assistant", "Here it is.", (RED,))
    # No bytes in a log line or a traceback: the type and the hash name it.
    assert repr(RED) == f"Image(content_type='image/png', sha256='{RED.sha256}')"


# The mock that can see ----------------------------------------------------------------------

SEES = MockSettings(vision=True, ttft_ms=0, tokens_per_s=0)


def asking(*images: Image, text: str = ASKED) -> ChatRequest:
    return ChatRequest("mock-eye-1", (Message("user", text, images),))


def test_the_mock_answers_an_image_from_its_hash_and_the_text():
    first = answer_text("mock-eye-1", asking(RED), SEES)
    assert first == answer_text("mock-eye-1", asking(Image.of("image/png", RED.data)), SEES)
    assert first.startswith(f"Looking at the image (PNG {RED.sha256[:8]}): ")
    assert answer_text("mock-eye-1", asking(BLUE), SEES) != first
    assert answer_text("mock-eye-1", asking(RED, text="What is it?"), SEES) != first
    assert answer_text("mock-eye-1", asking(RED, BLUE), SEES).startswith(
        f"Looking at the 2 images (PNG {RED.sha256[:8]}, JPEG {BLUE.sha256[:8]}): "
    )
    # Text alone is answered as it always was: no image, no change.
    plain = answer_text("mock-eye-1", asking(), SEES)
    assert "image" not in plain.lower() and plain != first


async def test_a_mock_without_vision_refuses_an_image_as_a_request_fault():
    events = [e async for e in MockBackend({"ttft_ms": 0}).stream(asking(RED))]
    assert events == [
        StreamError("bad_request", "The model `mock-eye-1` does not support image input.")
    ]
    instant = {"ttft_ms": 0, "tokens_per_s": 0}  # how fast it types is not what is tested
    seen = [e async for e in MockBackend({**instant, "vision": True}).stream(asking(RED))]
    assert seen[-1].input_tokens == len(ASKED.split()) + 85  # an image counts as OpenAI's
