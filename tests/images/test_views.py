from __future__ import annotations

import hashlib
import io

import pytest
from django.core.files.storage import storages
from django.test import Client
from django.urls import reverse
from PIL import Image

from arena.core.errors import ServiceError
from arena.images.models import ImageUpload, PromptImage
from arena.images.selectors import images_for_turn
from tests.helpers import PASSWORD
from tests.images.pictures import picture

pytestmark = pytest.mark.django_db(transaction=True)


def _client(user) -> Client:
    client = Client()
    assert client.login(email=user.email, password=PASSWORD)
    return client


def _upload(client: Client, data: bytes, name: str = "shot.png"):
    sent = io.BytesIO(data)
    sent.name = name
    return client.post(reverse("image-upload"), {"image": sent})


def test_an_upload_is_kept_under_the_hash_of_its_clean_bytes(alice):
    answer = _upload(_client(alice), picture("PNG"))

    assert answer.status_code == 201
    body = answer.json()
    kept = storages["images"].open(f"{body['sha256']}.png").read()
    assert hashlib.sha256(kept).hexdigest() == body["sha256"]
    assert (body["type"], body["width"], body["height"]) == ("image/png", 64, 48)
    assert PromptImage.objects.get().size_bytes == len(kept) == body["size"]


def test_the_sender_fetches_their_image_and_another_rater_gets_not_found(alice, bob):
    sha = _upload(_client(alice), picture("JPEG"), "photo.jpg").json()["sha256"]

    mine = _client(alice).get(reverse("image", args=[sha]))
    assert mine.status_code == 200 and mine["Content-Type"] == "image/jpeg"
    assert mine["X-Content-Type-Options"] == "nosniff"
    assert mine["Cache-Control"].startswith("private")
    assert Image.open(io.BytesIO(mine.content)).size == (64, 48)

    theirs = _client(bob).get(reverse("image", args=[sha]))
    nothing = _client(bob).get(reverse("image", args=["0" * 64]))
    assert theirs.status_code == nothing.status_code == 404
    assert theirs.json() == nothing.json()  # nobody learns which hashes are stored


def test_a_signed_out_visitor_can_neither_upload_nor_fetch(alice):
    sha = _upload(_client(alice), picture("PNG")).json()["sha256"]
    visitor = Client()
    assert _upload(visitor, picture("PNG")).status_code == 302
    assert visitor.get(reverse("image", args=[sha])).status_code == 302


def test_the_same_image_sent_twice_by_two_raters_is_one_file_both_may_fetch(alice, bob):
    first = _upload(_client(alice), picture("PNG")).json()["sha256"]
    second = _upload(_client(bob), picture("PNG")).json()["sha256"]
    assert first == second
    assert PromptImage.objects.count() == 1 and ImageUpload.objects.count() == 2
    assert _client(bob).get(reverse("image", args=[first])).status_code == 200


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (b"%PDF-1.7 not an image", 400, "image_unreadable"),
        (b"", 400, "image_empty"),
    ],
)
def test_a_refused_upload_says_why_and_keeps_nothing(alice, data, status, code):
    answer = _upload(_client(alice), data)
    assert answer.status_code == status
    assert answer.json()["error"] == code and answer.json()["message"]
    assert not PromptImage.objects.exists()


def test_an_upload_over_the_size_limit_is_refused_with_the_limit(alice, settings):
    data = picture("PNG")
    settings.IMAGES = {**settings.IMAGES, "MAX_BYTES": len(data) - 1}
    answer = _upload(_client(alice), data)
    assert answer.status_code == 413
    assert answer.json()["error"] == "image_too_large"
    assert not PromptImage.objects.exists()


def test_an_upload_without_a_file_is_refused(alice):
    answer = _client(alice).post(reverse("image-upload"), {})
    assert answer.status_code == 400 and answer.json()["error"] == "image_missing"


def test_a_turn_takes_only_the_raters_own_images_and_at_most_the_limit(alice, bob, settings):
    client = _client(alice)
    shas = [_upload(client, picture("PNG", colour=(i, 0, 0))).json()["sha256"] for i in range(5)]
    assert [i.sha256 for i in images_for_turn(user=alice, hashes=shas[:4])] == shas[:4]
    assert images_for_turn(user=alice, hashes=None) == []

    settings.IMAGES = {**settings.IMAGES, "MAX_COUNT": 4}
    for hashes, code in (
        (shas, "images_too_many"),
        ([shas[0], shas[0]], "images_invalid"),
        ("abc", "images_invalid"),
    ):
        with pytest.raises(ServiceError) as refused:
            images_for_turn(user=alice, hashes=hashes)
        assert refused.value.code == code
    with pytest.raises(ServiceError) as refused:
        images_for_turn(user=bob, hashes=shas[:1])
    assert refused.value.code == "not_found"


def test_uploads_past_the_raters_limit_are_refused_and_keep_nothing(alice, settings):
    settings.RATELIMITS = {**settings.RATELIMITS, "image_upload": {"user": "1/m", "network": None}}
    client = _client(alice)
    assert _upload(client, picture("PNG")).status_code == 201
    refused = _upload(client, picture("PNG", colour=(1, 2, 3)))
    assert refused.status_code == 429 and "images uploaded" in refused.content.decode()
    assert PromptImage.objects.count() == 1


def test_the_page_sends_the_file_itself_as_the_body(alice):
    answer = _client(alice).post(
        reverse("image-upload"), data=picture("WEBP"), content_type="image/webp"
    )
    assert answer.status_code == 201 and answer.json()["type"] == "image/webp"
    not_image = _client(alice).post(reverse("image-upload"), data=b"{}", content_type="image/png")
    assert not_image.status_code == 400 and not_image.json()["error"] == "image_unreadable"
