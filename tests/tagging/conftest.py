"""Votes to tag: whole battles (prompt, turns, vote) written straight to the database, as the
demo's simulated votes are, so tagging tests need no generation."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from accounts.models import User
from arena.catalog.models import ModelEntry
from arena.records.models import Vote
from tests.votes import logged_vote


@pytest.fixture
def make_vote(alice: User, two_models: tuple[ModelEntry, ModelEntry]) -> Callable[..., Vote]:
    def make(*texts: str, category: str = "", language: str = "") -> Vote:
        return logged_vote(alice, two_models, texts, category=category, language=language)

    return make
