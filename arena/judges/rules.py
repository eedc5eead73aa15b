"""What a judge must not see and whom it must not judge, for every strategy: every configured
model's names, ids, makers and vendors (plus COMPARE's JUDGE_TERMS) masked out of what it
reads, and no answer of its own family unless COMPARE's JUDGE_SAME_FAMILY allows it."""

from __future__ import annotations

import re

from django.conf import settings

from arena.catalog.models import ModelEntry
from arena.integrity.checks import identity_pattern
from arena.integrity.selectors import identity_terms

MASK = "[MODEL]"


def mask(text: str, terms: tuple[str, ...]) -> str:
    """Every model's names, ids, makers and vendors out of what the judge sees."""
    pattern = identity_pattern(terms)
    return pattern.sub(MASK, text) if pattern else text


def mask_terms() -> tuple[str, ...]:
    """What the judge must not see: every configured model's names, ids, makers, vendors."""
    return tuple(sorted({*identity_terms(), *settings.COMPARE["JUDGE_TERMS"]}))


_OPENROUTER = re.compile(r"^([a-z0-9-]+)/")


def family(*, vendor: str, model_id: str, organisation: str = "", public_name: str = "") -> str:
    """A model's family for the same-family rule, never empty: its vendor, else the vendor
    prefix of an OpenRouter-style id ("anthropic/claude-3.5-sonnet"), else its organisation,
    else (nothing says whose it is) the model itself: its id, or its public name."""
    if vendor.strip():
        return vendor.strip().lower()
    found = _OPENROUTER.match(model_id.strip().lower())
    if found:
        return found.group(1)
    for own in (organisation, model_id, public_name):
        if own.strip():
            return own.strip().lower()
    return "(unnamed)"


def model_family(model: ModelEntry) -> str:
    """``family`` of a catalog model."""
    return family(
        vendor=model.vendor,
        model_id=model.model_id,
        organisation=model.organisation,
        public_name=model.public_name,
    )


def judges_own_family(judge: ModelEntry, *models: ModelEntry) -> bool:
    """Whether one of ``models`` is of the judge's own family."""
    mine = model_family(judge)
    return any(model_family(m) == mine for m in models)


def family_barred(judge: ModelEntry, *models: ModelEntry) -> bool:
    """Whether the judge may not judge these models: one is of its own family, and
    COMPARE's JUDGE_SAME_FAMILY does not allow that."""
    return not settings.COMPARE["JUDGE_SAME_FAMILY"] and judges_own_family(judge, *models)
