"""What "no value" is on the way out of the ranking math.

The math marks a number it has no value for (the score of a model that is not ranked) as NaN, so
that arrays stay float; the database, JSON and CSV say None. Infinities are values and pass.
"""

from __future__ import annotations

import math
from typing import TypeVar

_T = TypeVar("_T")


def none_if_nan(value: _T) -> _T | None:
    """``value`` unchanged, or None where it is a float NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value
