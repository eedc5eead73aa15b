"""Files a command's options name: read, or the command's error saying why not."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from accounts.models import User
from arena.core.errors import ServiceError
from arena.images.services import image_store

IMAGE_HELP = "an image sent with the prompts to every model and the judge (repeatable)"


def file_read(path: Path, option: str, *, binary: bool = False) -> str | bytes:
    try:
        return path.read_bytes() if binary else path.read_text()
    except OSError as exc:
        raise CommandError(f"{option}: {exc.strerror}: {path}") from None


def image_files_store(*, user: User, paths: list[Path]) -> list[str]:
    """The images at ``paths`` kept (checked and cleaned as an upload is): their hashes."""
    hashes = []
    for path in paths:
        try:
            hashes.append(image_store(user=user, data=file_read(path, "--image", binary=True)))
        except ServiceError as exc:
            raise CommandError(f"--image {path}: {exc.message}") from None
    return [image.sha256 for image in hashes]
