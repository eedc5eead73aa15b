"""What "no value" is on the way out of the ranking math.

The math marks a number it has no value for (the score of a model that is not ranked) as NaN, so
that arrays stay float; the database, JSON and CSV say None. Infinities are values and pass.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TypeVar

_T = TypeVar("_T")

# What share of the time every interval is meant to cover the truth, unless asked otherwise.
LEVEL = 0.95


def two_sided_z(level: float) -> float:
    """The standard normal quantile of a two-sided ``level`` interval (1.96 for 0.95). From the
    standard library: scipy.stats would cost every process seconds to import."""
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def none_if_nan(value: _T) -> _T | None:
    """``value`` unchanged, or None where it is a float NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value
