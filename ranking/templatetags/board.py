"""What the leaderboard's templates show beside the snapshot's numbers."""

from __future__ import annotations

from django import template
from django.conf import settings

register = template.Library()


@register.filter
def percent(share: float | None) -> str:
    """A share (0 to 1) as a percentage to one decimal: 0.123 -> "12.3%"."""
    return "–" if share is None else f"{share * 100:.1f}%"


@register.simple_tag
def drawing() -> dict:
    """How pairs are drawn and which variants are published (settings.SAMPLING and the
    publication policy), for the board's note on exposure."""
    return {**settings.SAMPLING, "publication": settings.ARENA["MODEL_PUBLICATION"]}
