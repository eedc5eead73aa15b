"""Writes of the images room: an upload, cleaned and stored once by its hash."""

from __future__ import annotations

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import transaction

from accounts.models import User
from arena.images.models import ImageUpload, PromptImage
from arena.images.safety import EXTENSIONS, image_clean


def storage_name(*, sha256: str, content_type: str) -> str:
    return f"{sha256}.{EXTENSIONS[content_type]}"


def image_store(*, user: User, data: bytes) -> PromptImage:
    """Clean ``data`` (safety.image_clean: refused with a ServiceError if it is no image or
    passes a limit), keep its bytes under their SHA-256 and note that ``user`` sent it."""
    limits = settings.IMAGES
    clean = image_clean(data, max_bytes=limits["MAX_BYTES"], max_pixels=limits["MAX_PIXELS"])
    name = storage_name(sha256=clean.sha256, content_type=clean.content_type)
    storage = storages["images"]
    # The name is the content's hash: the same bytes sent twice, or by two raters at once, are
    # the same file, and writing it again changes nothing.
    if not storage.exists(name):
        storage.save(name, ContentFile(clean.data))
    with transaction.atomic():
        image, _ = PromptImage.objects.get_or_create(
            sha256=clean.sha256,
            defaults={
                "content_type": clean.content_type,
                "size_bytes": len(clean.data),
                "width": clean.width,
                "height": clean.height,
            },
        )
        ImageUpload.objects.get_or_create(image=image, user=user)
    return image
