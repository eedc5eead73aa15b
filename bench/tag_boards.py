"""What tag boards add to the nightly recompute: reading each vote's tags, and the boards.

Not a test: it prints figures. A database of its own is filled (once) with synthetic battles and
votes (bench/vote_rows.py: 6 curated categories, 3 languages), then every vote gets a tag set
(one labeller version, rows written by INSERT … SELECT, a few distinct sets as real tags give).
Timed, each against its baseline from the same run:

- the vote read (`ranking.selectors.vote_arrays`) with each vote's tags joined in, against the
  same read without them (``_tag`` skipped);                         target ≤ 1.5× the baseline
- the breakdown boards (default settings: sandwich intervals, raw and style-controlled): the
  tag boards added, a board's time against that of the boards there were before issue 26
  (curated categories and languages).                     target ≤ 1.5× the baseline a board

    uv run python bench/tag_boards.py [--votes 200000] [--models 40] [--regenerate]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/arena_bench_tag_boards) is created if
missing and migrated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from bench.vote_rows import generate  # noqa: E402

common.django_environment(database="arena_bench_tag_boards")

READ_RATIO = 1.5
BOARD_RATIO = 1.5

# Tag sets by vote id modulo their count: most votes one or two tags, some none, some hard.
SETS = [
    '["code"]',
    '["code", "hard"]',
    '["math"]',
    "[]",
    '["creative_writing"]',
    '["instruction_following", "long_query"]',
    '["code", "multi_turn"]',
    '["hard", "math"]',
    "[]",
    '["creative_writing", "instruction_following"]',
]


def tag_every_vote() -> int:
    """One rules row per vote (the tags log emptied first: TRUNCATE passes its trigger)."""
    from django.db import connection, transaction

    from arena.records.models import Vote
    from arena.tagging.models import VoteTags

    cases = " ".join(f"WHEN {i} THEN '{s}'::jsonb" for i, s in enumerate(SETS))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {VoteTags._meta.db_table}")
        cursor.execute(
            f"INSERT INTO {VoteTags._meta.db_table} "
            "(vote_id, prompt_hash, tags, labeller, version, cost, created_at) "
            f"SELECT id, prompt_hash, CASE id % {len(SETS)} {cases} END, 'rules', 1, 0, now() "
            f"FROM {Vote._meta.db_table}"
        )
        return cursor.rowcount


def timed(fn, repeat: int = 3):
    """The fastest of ``repeat`` runs (other work on the machine only slows a run) and its
    result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--votes", type=int, default=200_000)
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--regenerate", action="store_true", help="truncate and generate anew")
    args = parser.parse_args()
    common.setup_database(require_postgres=True)
    from django.utils import timezone

    from arena.records.models import Vote
    from ranking import selectors
    from ranking.compute import boards_compute, breakdown_masks
    from ranking.services import ranking_config

    have = Vote.objects.count()
    if have < args.votes or args.regenerate:
        print(f"generating {args.votes:,} votes among {args.models} models (had {have:,})")
        generate(args.votes, args.models)
    print(f"tagged {tag_every_vote():,} votes, {len(SETS)} tag sets; load average {load()}")

    cutoff = timezone.now()

    def read():
        return selectors.vote_arrays(cutoff=cutoff, include_simulated=True)

    tagged_s, loaded = timed(read)
    real = selectors._tag, selectors._every_tag
    # The read as it was before tags: no tags read beside the votes, none joined to them.
    selectors._tag, selectors._every_tag = (lambda *args: None), (lambda db: {})
    try:
        plain_s, _ = timed(read)
    finally:
        selectors._tag, selectors._every_tag = real
    arrays = loaded.arrays
    print(f"\nvote read of {len(arrays.a):,} votes ({loaded.untagged()} untagged)")
    print(f"  without tags (baseline)  {plain_s:6.2f} s")
    print(f"  with tags                {tagged_s:6.2f} s   {tagged_s / plain_s:4.2f}×")
    print(
        f"  target ≤ {READ_RATIO}× the baseline: {common.verdict(tagged_s <= READ_RATIO * plain_s)}"
    )

    conf = ranking_config()
    jobs = [
        (view, key, mask)
        for key, mask in breakdown_masks(arrays, ("category", "language"))
        if mask is not None
        for view in ("raw", "style")
    ]
    tags, arrays.tags = arrays.tags, None
    old = {(view, key) for key, _ in breakdown_masks(arrays, ("category", "language"))
           for view in ("raw", "style")}  # fmt: skip
    arrays.tags = tags
    before = [job for job in jobs if (job[0], job[1]) in old]
    added = [job for job in jobs if (job[0], job[1]) not in old]
    arrays.style_ratios()  # computed once for every board: not on the first board's clock
    before_s, _ = timed(lambda: boards_compute(arrays, conf, before), repeat=1)
    added_s, _ = timed(lambda: boards_compute(arrays, conf, added), repeat=1)
    each_before, each_added = before_s / len(before), added_s / max(len(added), 1)
    print(f"\nbreakdown boards ({conf.breakdown_method} raw, {conf.style_method} style-controlled)")
    print(f"  curated categories and languages (baseline) {len(before):3d} boards {before_s:6.2f} s"
          f"  {each_before:5.3f} s a board")  # fmt: skip
    print(f"  tag boards added                            {len(added):3d} boards {added_s:6.2f} s"
          f"  {each_added:5.3f} s a board  {each_added / each_before:4.2f}×")  # fmt: skip
    ok = each_added <= BOARD_RATIO * each_before
    print(f"  target ≤ {BOARD_RATIO}× the baseline a board: {common.verdict(ok)}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
