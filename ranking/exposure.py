"""How often each model is shown, published with every snapshot so an outsider can see unequal
exposure: its share of the battles drawn up to the cutoff, and its share of the next battles
under active sampling from the new snapshot's intervals (``ranking.sampling``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db.models import Count

from arena.catalog.models import ModelEntry
from arena.records.models import Battle
from ranking.sampling import draw_probabilities, model_weights


def battle_shares(*, cutoff: datetime, include_simulated: bool) -> dict[str, float]:
    """Public name -> its share of the model places in battles drawn up to ``cutoff`` (two a
    battle, so the shares sum to 1). Gold battles replay a known pair and are no draw; the
    demo's simulated battles count only where the snapshot counts their votes."""
    battles = Battle.objects.filter(created_at__lte=cutoff, gold__isnull=True)
    if not include_simulated:
        battles = battles.exclude(vote__simulated=True)
    places: Counter[str] = Counter()
    for side in ("model_a__public_name", "model_b__public_name"):
        for name, n in battles.values_list(side).annotate(n=Count("pk")).order_by():
            places[name] += n
    total = sum(places.values())
    return {name: n / total for name, n in places.items()} if total else {}


def models_draw(
    models: Sequence[ModelEntry], lower: np.ndarray, upper: np.ndarray, votes: np.ndarray
) -> np.ndarray:
    """The pair probabilities of ``models`` as a battle start draws them: their intervals and
    votes (in their order), the SAMPLING settings, two of one underlying id never together."""
    return draw_probabilities(
        ids=[m.model_id for m in models],
        lower=lower,
        upper=upper,
        votes=votes,
        conf=settings.SAMPLING,
    )


def sampling_weights(
    *, entries: Iterable[ModelEntry], board: dict[str, tuple[float, float, int]]
) -> dict[str, float]:
    """Public name -> its share of the next battles under active sampling: the active models,
    drawn as a start draws them (two of different underlying ids), from ``board``'s overall
    raw intervals and votes (name -> (lower, upper, votes); NaN where not ranked). A retired
    model is not drawn: none."""
    active = [m for m in entries if m.active]
    if len(active) < 2:
        return {}
    nan = (float("nan"), float("nan"), 0)
    found = [board.get(m.public_name, nan) for m in active]
    probs = models_draw(active, *(np.array(column, float) for column in zip(*found, strict=True)))
    return dict(zip((m.public_name for m in active), model_weights(probs).tolist(), strict=True))
