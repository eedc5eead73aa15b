"""Head-to-head views of the vote log, as public arenas show them: how often each model beat
each other one, how often they met, and how often the fitted scores say it should win. Pure
numpy; ``ranking.services`` stores the tallies with each snapshot."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ranking.bradley_terry import BOTH_BAD, SCALE, TIE, A, B


@dataclass(frozen=True)
class PairTallies:
    """Over ``models`` (indices into the vote arrays' model names), for each ordered pair:
    ``battles`` every vote between them; ``played`` the votes that decide a win rate; ``wins``
    the row model's wins over the column model, a tie counting half to each."""

    models: np.ndarray
    battles: np.ndarray
    played: np.ndarray
    wins: np.ndarray

    def as_dict(self, names: list[str]) -> dict:
        return {
            "models": [names[i] for i in self.models],
            "battles": self.battles.astype(int).tolist(),
            "played": self.played.tolist(),
            "wins": self.wins.tolist(),
        }


def pair_tallies(
    a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int, *, both_bad: str = "tie"
) -> PairTallies:
    """Tallies for the models that appear in these votes. ``both_bad``: "tie" counts a both-bad
    vote as a tie, as the fit does; otherwise it decides nothing (but is a battle)."""
    m = n_models

    def square(i: np.ndarray, j: np.ndarray, weight: float | np.ndarray = 1.0) -> np.ndarray:
        w = np.broadcast_to(np.asarray(weight, dtype=float), i.shape)
        return np.bincount(i * m + j, weights=w, minlength=m * m).reshape(m, m)

    met = square(a, b)
    battles = met + met.T
    draw = (outcome == TIE) | ((outcome == BOTH_BAD) if both_bad == "tie" else False)
    decided = (outcome == A) | (outcome == B) | draw
    counted = square(a[decided], b[decided])
    played = counted + counted.T
    won = square(a[outcome == A], b[outcome == A]) + square(b[outcome == B], a[outcome == B])
    drawn = square(a[draw], b[draw])
    wins = won + 0.5 * (drawn + drawn.T)
    present = np.flatnonzero(battles.sum(axis=1) > 0)
    pick = np.ix_(present, present)
    return PairTallies(present, battles[pick], played[pick], wins[pick])


def win_rates(wins: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Row beats column, as a share of their deciding votes; NaN where they never met."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(played > 0, wins / np.where(played > 0, played, 1), np.nan)


def predicted_win_rates(scores: np.ndarray) -> np.ndarray:
    """The chance the row model beats the column model, by the Bradley–Terry scores (ties
    aside); NaN on the diagonal."""
    s = np.asarray(scores, dtype=float)
    p = 1.0 / (1.0 + np.exp((s[None, :] - s[:, None]) / SCALE))
    np.fill_diagonal(p, np.nan)
    return p
