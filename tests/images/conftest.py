from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _images_in_tmp(settings, tmp_path):
    """Each test keeps its images in a folder of its own."""
    settings.STORAGES = {
        **settings.STORAGES,
        "images": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "images"), "allow_overwrite": True},
        },
    }
