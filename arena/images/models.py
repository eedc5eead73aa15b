"""Images raters attach to a prompt: stored once, by the SHA-256 of their re-encoded bytes.

The bytes live in the ``images`` storage (Django's storage API: the file system under ``var/`` on
the embedded default, any storage backend in production); a row says what they are, and an
upload row says who sent them, the only people (with staff) who may fetch them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PromptImage(models.Model):
    """An image as stored: decoded and re-encoded, so no metadata of the sender's file is kept."""

    sha256 = models.CharField(primary_key=True, max_length=64)
    content_type = models.CharField(max_length=20)  # image/png, image/jpeg or image/webp
    size_bytes = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.content_type}, {self.width}x{self.height})"


class ImageUpload(models.Model):
    """One rater sent this image (a second sending of the same bytes adds no row)."""

    image = models.ForeignKey(PromptImage, on_delete=models.PROTECT, related_name="uploads")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "user"], name="image_upload_unique")
        ]

    def __str__(self) -> str:
        return f"{self.image_id[:12]} sent by {self.user_id}"
