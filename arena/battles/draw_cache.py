"""What a battle start draws from, kept per web process between admin edits: the models that
may meet (active, of an installed kind, able to take the shared parameters), their pair
probabilities under the published snapshot, and the names to redact from answers.

Nothing only this process knows decides anything: an entry is used only under the stamps it
was built from, and every start reads the current stamps in the statement that locks its
rater (``Stamps.annotations``): a digest of the whole catalog (catalog.selectors.models_stamp)
and the published snapshot's key (ranking.snapshots.snapshot_latest_key). So a model retired,
added or edited by any process, or a new snapshot, is seen by the first start whose lock
statement runs after that commit, here and in every other process; a retired model is never
drawn once its retirement has committed. An entry is built from one statement that reads the
models together with the stamp they make (and the sampling rows of exactly that snapshot), so
its contents always match its key.
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from django.conf import settings

from arena.backends.registry import installed_kinds
from arena.catalog.models import ModelEntry
from arena.catalog.selectors import models_stamp
from arena.core.errors import ServiceError
from arena.integrity.selectors import identity_terms
from ranking.exposure import models_draw
from ranking.sampling import draw_pair
from ranking.snapshots import sampling_state, snapshot_latest_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stamps:
    """The catalog's digest and the published snapshot's key, as a start read them."""

    models: str | None
    snapshot: str | None
    FIELDS: ClassVar[tuple[str, str]] = ("models_stamp", "snapshot_key")

    @staticmethod
    def annotations() -> dict:
        """For the select list of a statement a start makes anyway."""
        return {"models_stamp": models_stamp(), "snapshot_key": snapshot_latest_key()}

    @classmethod
    def of(cls, row: dict) -> Stamps:
        """From a row's values read with ``annotations``."""
        return cls(models=row["models_stamp"], snapshot=row["snapshot_key"])

    @classmethod
    def read(cls) -> Stamps:
        """Read on their own, by a caller with no statement to add them to."""
        row = ModelEntry.objects.annotate(**cls.annotations()).values(*cls.FIELDS).first()
        return cls(models=None, snapshot=None) if row is None else cls.of(row)


@dataclass(frozen=True)
class Catalog:
    """Built from one read of every model: those that may meet now, by pk, and the names."""

    stamp: str | None
    models: tuple[ModelEntry, ...]
    terms: tuple[str, ...]


@dataclass(frozen=True)
class Draw:
    """The models that may meet in a battle, by pk, and the probability of each pair (a
    symmetric matrix over them); no models when fewer than two different ones may meet."""

    models: tuple[ModelEntry, ...]
    probs: np.ndarray


# Entries are immutable once built; two threads building the same one at once both get a
# correct one. Only the newest few are kept: older stamps are never read again.
_KEEP = 4
_lock = threading.Lock()
_catalogs: dict[tuple, Catalog] = {}
_draws: dict[tuple, Draw] = {}


def _put(cache: dict, key: tuple, value: object) -> None:
    with _lock:
        while len(cache) >= _KEEP:
            cache.pop(next(iter(cache)))
        cache[key] = value


def catalog_for(*, stamp: str | None) -> Catalog:
    """The catalog as of ``stamp`` (or newer, when it changed since the stamp was read)."""
    key = (stamp, tuple(settings.INTEGRITY["IDENTITY_TERMS"]), tuple(installed_kinds()))
    catalog = _catalogs.get(key)
    if catalog is None:
        catalog = _catalog_build()
        # Kept under the stamp its own read saw: that is what it holds.
        _put(_catalogs, (catalog.stamp, *key[1:]), catalog)
    return catalog


def _catalog_build() -> Catalog:
    rows = list(ModelEntry.objects.annotate(stamp=models_stamp()).order_by("pk"))
    kinds = set(installed_kinds())
    return Catalog(
        stamp=rows[0].stamp if rows else None,
        models=tuple(m for m in rows if m.active and m.backend in kinds),
        terms=identity_terms(models=rows),
    )


def draw_for(*, stamps: Stamps, params: dict, vision: bool = False) -> Draw:
    """What a start draws its pair from, under these stamps and shared parameters; with
    ``vision``, from the models that read images alone."""
    catalog = catalog_for(stamp=stamps.models)
    conf = settings.SAMPLING
    key = (
        catalog.stamp,
        stamps.snapshot,
        tuple(sorted(params.items())),
        tuple(sorted(conf.items())),
        tuple(m.pk for m in catalog.models),
        vision,
    )
    draw = _draws.get(key)
    if draw is None:
        draw = _draw_build(catalog=catalog, snapshot=stamps.snapshot, params=params, vision=vision)
        _put(_draws, key, draw)
    return draw


def _draw_build(*, catalog: Catalog, snapshot: str | None, params: dict, vision: bool) -> Draw:
    models = []
    for model in catalog.models:
        if vision and not model.takes_images:
            continue
        # Logged once per change of the catalog, not once per start.
        if missing := model.params_unsupported(params):
            log.warning("%s sits out battles: it does not accept %s", model, ", ".join(missing))
        else:
            models.append(model)
    if len({m.model_id for m in models}) < 2:
        return Draw(models=(), probs=np.zeros((0, 0)))
    probs = models_draw(
        models, *sampling_state(names=[m.public_name for m in models], key=snapshot)
    )
    probs.setflags(write=False)  # shared by every start of this process
    return Draw(models=tuple(models), probs=probs)


def shared_params() -> dict:
    """The one parameter set both sides of every battle receive."""
    return dict(settings.ARENA["DEFAULT_PARAMS"])


def battle_pick_models(
    *,
    params: dict | None = None,
    rng: random.Random | None = None,
    stamps: Stamps | None = None,
    vision: bool = False,
) -> tuple[ModelEntry, ModelEntry, float]:
    """Two active models of different underlying ids, both able to take ``params``, on random
    sides, drawn by active sampling; returns them and the probability of that pair.

    Models that cannot take a shared parameter sit battles out (logged for admins) rather than
    meeting a rival under other settings; the rater is never told which model that was.
    ``stamps``: the catalog's and the snapshot's, as the caller read them (read here without).
    ``vision``: the battle carries images, so only models that read them may meet.
    """
    rng = rng or random.SystemRandom()
    params = shared_params() if params is None else params
    draw = draw_for(stamps=stamps or Stamps.read(), params=params, vision=vision)
    if not draw.models and vision:
        raise ServiceError(
            "no_vision_models",
            "Fewer than two models that read images are available right now. Remove the "
            "images, or try again later.",
        )
    if not draw.models:
        raise ServiceError(
            "no_models", "Fewer than two models are available right now. Try again later."
        )
    i, j, p = draw_pair(draw.probs, np.random.default_rng(rng.getrandbits(64)))
    pair = [draw.models[i], draw.models[j]]
    rng.shuffle(pair)
    return pair[0], pair[1], p
