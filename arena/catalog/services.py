"""Writes of the catalog."""

from __future__ import annotations

from arena.catalog.models import ModelEntry
from arena.core.errors import ServiceError


def model_upsert(*, public_name: str, **fields: object) -> ModelEntry:
    """The model of this public name with ``fields`` set, created if there is none."""
    model, _ = ModelEntry.objects.update_or_create(public_name=public_name, defaults=fields)
    return model


def models_set_active(*, model_ids: list[int], active: bool) -> int:
    """Put models into battles (or take them out); how many changed. A model taken out keeps
    its votes and its place on the leaderboard; it is only no longer drawn."""
    return ModelEntry.objects.filter(pk__in=model_ids).exclude(active=active).update(active=active)


def params_check(*, models: list[ModelEntry], params: dict) -> None:
    """A shared parameter one of the models cannot take refuses the run (a battle, a compare
    run, an evaluation); it is never dropped for one side only."""
    for model in models:
        if missing := model.params_unsupported(params):
            raise ServiceError(
                "unsupported_param",
                f"{model.public_name} does not support {missing[0]!r}. Clear it for all models, "
                "or remove the model.",
            )
