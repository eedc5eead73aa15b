"""The model admin's image capability: shown on the model's page, and refused for a model
whose backend cannot carry images (``takes_images`` on the backend's class)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.admin.catalog import ModelEntryForm
from arena.backends.openai_compatible import OpenAICompatibleBackend
from arena.backends.registry import KINDS
from arena.catalog.models import ModelEntry


def marked(backend: str) -> ModelEntryForm:
    return ModelEntryForm(data={
        "public_name": "Granite Finch", "model_id": "gf-1", "backend": backend,
        "backend_settings": "{}", "supported_params": "[]", "takes_images": "on",
        "active": "on",
    })  # fmt: skip


@pytest.mark.parametrize("kind", [cls.kind for cls in KINDS])
def test_a_model_of_a_kind_that_carries_images_may_be_marked_as_reading_them(db, kind):
    form = marked(kind)
    assert form.is_valid(), form.errors
    assert form.save().takes_images


def test_marking_a_model_whose_backend_cannot_carry_images_is_refused(db, monkeypatch):
    # A kind without an image form (none of today's five): its class says so.
    monkeypatch.setattr(OpenAICompatibleBackend, "takes_images", False)
    form = marked(ModelEntry.Backend.OPENAI_COMPATIBLE)
    assert not form.is_valid()
    assert "cannot send images" in form.errors["takes_images"][0]
    assert ModelEntryForm(data={**form.data, "takes_images": ""}).is_valid()


def test_the_models_page_shows_whether_it_reads_images(admin_client):
    page = admin_client.get(reverse("admin:arena_modelentry_add")).content.decode()
    assert 'name="takes_images"' in page and "only models marked are drawn" in page
    listing = admin_client.get(reverse("admin:arena_modelentry_changelist")).content.decode()
    assert "reads images" in listing.lower()
