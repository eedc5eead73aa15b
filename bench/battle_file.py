"""Synthetic battle logs in the public arena format, for bench/ranking.py's `rank` figures.

Rows look like FastChat's ``clean_battle`` output (what ``export_votes --format arena`` writes
too, less the conversations): names, winner, judge, turn, anony, language, tstamp, the
``conv_metadata`` style counts (headers, lists and bold split by kind, as FastChat counts them),
``dedup_tag`` and ``category``, about 750 bytes a row. Outcomes come from known strengths plus a
taste for long answers, ~10% ties and ~4% "both bad"; ~1% of rows are named battles (anony:
false) and ~1% are marked duplicates, which `rank` leaves out by default.

    uv run python bench/battle_file.py OUT [--battles 1000000] [--models 100] [--jsonl] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

CATEGORIES = ("coding", "math", "writing", "reasoning", "chat", "extraction")
LANGUAGES = ("English", "German", "Spanish", "Chinese")
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
_BLOCK = 100_000


def model_names(m: int) -> list[str]:
    return [f"bench-model-{i:03d}" for i in range(m)]


def _block(rng: np.random.Generator, n: int, m: int, theta: np.ndarray, typical: np.ndarray):
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    tokens = np.column_stack([rng.gamma(4.0, typical[a] / 4.0), rng.gamma(4.0, typical[b] / 4.0)])
    tokens = tokens.astype(np.int64) + 1
    length = (tokens[:, 0] - tokens[:, 1]) / (tokens[:, 0] + tokens[:, 1])
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + 1.2 * length)))
    winner = np.where(rng.random(n) < p, 0, 1)
    u = rng.random(n)
    winner[u < 0.10] = 2
    winner[(u >= 0.10) & (u < 0.14)] = 3
    counts = rng.poisson([1, 1, 0.3, 3, 2, 2, 0.2], size=(2, n, 7))
    return {
        "a": a,
        "b": b,
        "winner": winner,
        "tokens": tokens,
        "counts": counts,
        "category": rng.integers(0, len(CATEGORIES), n),
        "language": rng.choice(len(LANGUAGES), n, p=[0.7, 0.1, 0.1, 0.1]),
        "named": rng.random(n) < 0.01,
        "duplicate": rng.random(n) < 0.01,
        "user_tokens": rng.integers(5, 400, n),
    }


def rows(n: int, m: int, seed: int = 0):
    """``n`` battle rows (dicts) among ``m`` models, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    names = model_names(m)
    theta = rng.normal(0.0, 0.8, m)
    typical = rng.uniform(150, 900, m)
    for start in range(0, n, _BLOCK):
        k = min(_BLOCK, n - start)
        d = _block(rng, k, m, theta, typical)
        for i in range(k):
            meta = {"sum_user_tokens": int(d["user_tokens"][i]), "turns": 1}
            for s, side in enumerate("ab"):
                c = d["counts"][s, i].tolist()
                meta[f"sum_assistant_{side}_tokens"] = int(d["tokens"][i, s])
                meta[f"context_{side}_tokens"] = int(d["user_tokens"][i])
                meta[f"header_count_{side}"] = {"h1": c[0], "h2": c[1], "h3": c[2]}
                meta[f"list_count_{side}"] = {"ordered": c[3], "unordered": c[4]}
                meta[f"bold_count_{side}"] = {"**": c[5], "__": c[6]}
            yield {
                "question_id": f"{seed:04x}{start + i:012x}",
                "model_a": names[d["a"][i]],
                "model_b": names[d["b"][i]],
                "winner": WINNERS[d["winner"][i]],
                "judge": f"arena_user_{(start + i) % 9973}",
                "turn": 1,
                "anony": not bool(d["named"][i]),
                "language": LANGUAGES[d["language"][i]],
                "tstamp": 1_700_000_000.0 + (start + i) * 0.5,
                "conv_metadata": meta,
                "is_code": bool(d["category"][i] == 0),
                "is_refusal": False,
                "dedup_tag": {"high_freq": False, "sampled": not bool(d["duplicate"][i])},
                "category": CATEGORIES[d["category"][i]],
            }


def write(path: Path, n: int, m: int, *, jsonl: bool = False, seed: int = 0) -> Path:
    """Write the log (gzip when ``path`` ends in .gz): a JSON array, or one row a line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as out:
        if not jsonl:
            out.write("[\n")
        for i, row in enumerate(rows(n, m, seed)):
            text = json.dumps(row)
            if jsonl:
                out.write(text + "\n")
            else:
                out.write(("" if i == 0 else ",\n") + text)
        if not jsonl:
            out.write("\n]\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jsonl", action="store_true")
    args = parser.parse_args()
    write(args.out, args.battles, args.models, jsonl=args.jsonl, seed=args.seed)
    print(f"wrote {args.battles:,} battles to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
