"""A vote log to rank: four models of known strength, simulated votes in two languages."""

from __future__ import annotations

import pytest

from arena.battles.simulation import votes_simulate
from tests.helpers import make_model

STRENGTHS = {"Alpha": 1.0, "Beta": 0.2, "Gamma": 0.0, "Delta": -0.8}


@pytest.fixture
def voted(db) -> dict[str, float]:
    """1,600 simulated votes among the models of ``STRENGTHS`` (returned), and a model with
    none."""
    for name in STRENGTHS:
        make_model(name, name.lower())
    make_model("Newcomer", "new-1")  # no votes at all
    from arena.battles.prompts import prompt_create

    prompt_create(text="Anything?", category="general", language="en")
    prompt_create(text="¿Algo?", category="general", language="es")
    votes_simulate(n=1600, strengths=STRENGTHS, once=False)
    return STRENGTHS
