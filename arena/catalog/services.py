"""Writes of the catalog."""

from __future__ import annotations

from arena.catalog.models import ModelEntry


def model_upsert(*, public_name: str, **fields: object) -> ModelEntry:
    """The model of this public name with ``fields`` set, created if there is none."""
    model, _ = ModelEntry.objects.update_or_create(public_name=public_name, defaults=fields)
    return model


def models_set_active(*, model_ids: list[int], active: bool) -> int:
    """Put models into battles (or take them out); how many changed. A model taken out keeps
    its votes and its place on the leaderboard; it is only no longer drawn."""
    return ModelEntry.objects.filter(pk__in=model_ids).exclude(active=active).update(active=active)
