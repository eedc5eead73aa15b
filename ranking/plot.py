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


# Heatmaps of head-to-head figures (ranking.pairwise), drawn by the server so they read without
# JavaScript: one square a pair, its figure written in it.

CELL = 42
HEAT_LABEL_W = 150
HEAT_TOP = 110  # room for the column labels, written at a slant


@dataclass(frozen=True)
class Cell:
    x: float
    y: float
    fill: str
    text: str
    title: str
    dark: bool  # a dark fill: the figure is written in white


@dataclass(frozen=True)
class HeatMap:
    width: int
    height: int
    size: int  # of one cell
    rows: list[tuple[float, str]]  # (y of the row's middle, label)
    columns: list[tuple[float, str]]  # (x of the column's middle, label)
    cells: list[Cell]


def _mix(low: tuple[int, int, int], high: tuple[int, int, int], t: float) -> tuple[str, bool]:
    rgb = [round(lo + (hi - lo) * t) for lo, hi in zip(low, high, strict=True)]
    dark = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 140
    return "#{:02x}{:02x}{:02x}".format(*rgb), dark


WHITE, BLUE, RED = (255, 255, 255), (37, 82, 204), (196, 48, 43)


def heatmap(labels: list[str], values: list[list[float | None]], *, kind: str) -> HeatMap | None:
    """``values[i][j]``: row ``i`` against column ``j``; None or NaN leaves the cell empty.
    ``kind``: "rate" (a share, 0.5 white, above blue, below red) or "count" (white to blue)."""
    n = len(labels)
    if n < 2:
        return None
    finite = [none_if_nan(v) for row in values for v in row]
    top = max((v for v in finite if v is not None), default=0) or 1
    cells = []
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            value = none_if_nan(value)
            if value is None or i == j:  # a model against itself: no figure
                continue
            if kind == "rate":
                t = abs(value - 0.5) * 2
                fill, dark = _mix(WHITE, BLUE if value >= 0.5 else RED, t)
                text = f"{value * 100:.0f}%"
                title = f"{labels[i]} beats {labels[j]}: {value * 100:.1f}%"
            else:
                fill, dark = _mix(WHITE, BLUE, value / top)
                text = f"{value:.0f}"
                title = f"{labels[i]} and {labels[j]}: {value:.0f} battles"
            cells.append(
                Cell(HEAT_LABEL_W + j * CELL, HEAT_TOP + i * CELL, fill, text, title, dark)
            )
    middle = CELL / 2
    return HeatMap(
        width=HEAT_LABEL_W + n * CELL + PAD,
        height=HEAT_TOP + n * CELL + PAD,
        size=CELL,
        rows=[(HEAT_TOP + i * CELL + middle, label) for i, label in enumerate(labels)],
        columns=[(HEAT_LABEL_W + j * CELL + middle, label) for j, label in enumerate(labels)],
        cells=cells,
    )


@dataclass(frozen=True)
class History:
    width: int
    height: int
    line: str  # SVG points of the scores
    band: str  # SVG points of the interval, around
    ticks: list[tuple[float, str]]  # (y, score)
    first: str
    last: str


def history_plot(points: list[tuple[str, float, float, float]]) -> History | None:
    """A model's score across snapshots: ``points`` (date, score, lower, upper), oldest
    first."""
    points = [p for p in points if not any(none_if_nan(v) is None for v in p[1:])]
    if len(points) < 2:
        return None
    width, height, left, pad = 520, 160, 48, 10
    lo = min(p[2] for p in points)
    hi = max(p[3] for p in points)
    if hi - lo < 1e-9:
        lo, hi = lo - 10, hi + 10

    def x(i: int) -> float:
        return round(left + i / (len(points) - 1) * (width - left - pad), 1)

    def y(v: float) -> float:
        return round(pad + (hi - v) / (hi - lo) * (height - 2 * pad), 1)

    line = " ".join(f"{x(i)},{y(p[1])}" for i, p in enumerate(points))
    upper = [f"{x(i)},{y(p[3])}" for i, p in enumerate(points)]
    lower = [f"{x(i)},{y(p[2])}" for i, p in reversed(list(enumerate(points)))]
    step = _nice_step(hi - lo)
    ticks = []
    v = math.ceil(lo / step) * step
    while v <= hi:
        ticks.append((y(v), f"{v:.0f}"))
        v += step
    return History(width, height, line, " ".join(upper + lower), ticks, points[0][0], points[-1][0])
