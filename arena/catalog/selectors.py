"""Reads of the catalog."""

from __future__ import annotations

from django.db.models import QuerySet

from arena.catalog.models import ModelEntry


def models_active() -> QuerySet[ModelEntry]:
    """The models raters can meet now, by name."""
    return ModelEntry.objects.filter(active=True).order_by("public_name")


def model_by_name(name: str) -> ModelEntry | None:
    """The model of this public name (active or not); None for "" or a name nobody has."""
    return ModelEntry.objects.filter(public_name=name).first() if name else None
