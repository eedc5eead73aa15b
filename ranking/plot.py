"""Geometry for the server-side interval plot: scores and intervals mapped to SVG units."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ranking.numbers import none_if_nan

ROW_H = 26
LABEL_W = 190
PLOT_W = 520
PAD = 12


@dataclass(frozen=True)
class Bar:
    label: str
    y: float
    x_score: float
    x_lower: float
    x_upper: float


@dataclass(frozen=True)
class Plot:
    width: int
    height: int
    bars: list[Bar]
    ticks: list[tuple[float, str]]  # (x, label)
    axis_y: float


def interval_plot(rows: list[tuple[str, float, float, float]]) -> Plot | None:
    """``rows``: (label, score, lower, upper), drawn top to bottom in the order given."""
    rows = [r for r in rows if not any(none_if_nan(v) is None for v in r[1:])]
    if not rows:
        return None
    lo = min(r[2] for r in rows)
    hi = max(r[3] for r in rows)
    if hi - lo < 1e-9:
        lo, hi = lo - 10, hi + 10
    span = hi - lo
    lo, hi = lo - 0.05 * span, hi + 0.05 * span

    def x(v: float) -> float:
        return round(LABEL_W + (v - lo) / (hi - lo) * PLOT_W, 1)

    bars = [
        Bar(
            label=r[0],
            y=PAD + i * ROW_H + ROW_H / 2,
            x_score=x(r[1]),
            x_lower=x(r[2]),
            x_upper=x(r[3]),
        )
        for i, r in enumerate(rows)
    ]
    step = _nice_step(hi - lo)
    first = math.ceil(lo / step) * step
    ticks = []
    v = first
    while v <= hi:
        ticks.append((x(v), f"{v:.0f}"))
        v += step
    axis_y = PAD + len(rows) * ROW_H + 4
    return Plot(
        width=LABEL_W + PLOT_W + PAD, height=int(axis_y + 22), bars=bars, ticks=ticks, axis_y=axis_y
    )


def _nice_step(span: float) -> float:
    raw = span / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude
