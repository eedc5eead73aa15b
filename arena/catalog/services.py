"""Writes of the catalog."""

from __future__ import annotations

from arena.catalog.models import ModelEntry


def model_upsert(*, public_name: str, **fields: object) -> ModelEntry:
    """The model of this public name with ``fields`` set, created if there is none."""
    model, _ = ModelEntry.objects.update_or_create(public_name=public_name, defaults=fields)
    return model
