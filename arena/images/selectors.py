"""Reads of the images room: an image's bytes for whoever may see them, a turn's images."""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import storages

from accounts.models import User
from arena.backends.base import Image
from arena.core.errors import ServiceError
from arena.images.models import ImageUpload, PromptImage
from arena.images.services import storage_name

NOT_FOUND = "There is no such image."


def image_bytes(*, sha256: str, content_type: str) -> bytes:
    """The kept bytes of an image (what a battle's rows name it by: its hash and type)."""
    with storages["images"].open(storage_name(sha256=sha256, content_type=content_type)) as f:
        return f.read()


def images_sent(records: list[dict]) -> tuple[Image, ...]:
    """What every model of a battle or run is sent: the kept bytes of each image a row names
    (its ``images``: sha256, type, size), in order."""
    return tuple(
        Image(r["type"], image_bytes(sha256=r["sha256"], content_type=r["type"]), r["sha256"])
        for r in records
    )


def image_records(images: list[PromptImage]) -> list[dict]:
    """How a battle, a run and the vote log name their images: never the bytes."""
    return [{"sha256": i.sha256, "type": i.content_type, "size": i.size_bytes} for i in images]


def image_for_viewer(*, user: User, sha256: str) -> PromptImage:
    """The image, if ``user`` sent it (or is staff); otherwise the same not-found as for an
    image that does not exist, so nobody learns which hashes are stored."""
    image = PromptImage.objects.filter(sha256=sha256).first()
    if image is None or not (
        user.is_staff or ImageUpload.objects.filter(image=image, user=user).exists()
    ):
        raise ServiceError("not_found", NOT_FOUND)
    return image


def images_for_turn(*, user: User, hashes: object) -> list[PromptImage]:
    """The images a rater attaches to a turn, in their order: each one they sent themselves,
    none twice, at most IMAGES["MAX_COUNT"]."""
    if hashes in (None, ""):
        return []
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise ServiceError("images_invalid", "Images are sent as a list of their hashes.")
    limit = settings.IMAGES["MAX_COUNT"]
    if len(hashes) > limit:
        raise ServiceError(
            "images_too_many", f"{len(hashes)} images are attached; at most {limit} may be."
        )
    if len(set(hashes)) != len(hashes):
        raise ServiceError("images_invalid", "The same image is attached twice.")
    mine = {
        upload.image.sha256: upload.image
        for upload in ImageUpload.objects.filter(user=user, image_id__in=hashes).select_related(
            "image"
        )
    }
    missing = [h for h in hashes if h not in mine]
    if missing:
        raise ServiceError("not_found", NOT_FOUND)
    return [mine[h] for h in hashes]
