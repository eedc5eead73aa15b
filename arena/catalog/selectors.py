"""Reads of the catalog."""

from __future__ import annotations

from django.db.models import QuerySet

from arena.catalog.models import ModelEntry


def models_active() -> QuerySet[ModelEntry]:
    """The models raters can meet now, by name."""
    return ModelEntry.objects.filter(active=True).order_by("public_name")
