"""manage.py tag_prompts on 100,000 votes with rules alone, and the rules' time per prompt.

Not a test: it prints figures. A database of its own is filled (once) with synthetic battles and
votes (bench/vote_rows.py), and each battle gets turns as raters type them: distinct texts
from prose, code, maths and mixed templates, one in ten two turns long, one in twenty over
2,000 characters. Then, timed:

- ``manage.py tag_prompts --rules-only`` over every vote (the tag rows emptied first), against
  a baseline from the same run: reading the same votes and turns and nothing else (the floor
  any tagging pass pays);                                              target: under 60 s
- ``tagging.rules.rule_tags`` on each conversation: p50 and p99.        target: p50 < 1 ms

    uv run python bench/tag_prompts.py [--votes 100000] [--regenerate]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/arena_bench_tag_prompts) is created
if missing and migrated.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from bench.vote_rows import generate  # noqa: E402

common.django_environment(database="arena_bench_tag_prompts")

TARGET_S = 60.0
RULES_P50_MS = 1.0
TEMPLATES = (
    "What is the best way to learn {w} as an adult? Give me a plan for {n} weeks.",
    "Write a short story about a {w} who finds a lost key, number {n}.",
    "Explain how {w} works to a ten-year-old, in {n} sentences.",
    "Write a Python function that returns the {n}th {w} number.",
    "Why does this print {n}?\ndef f(x):\n    return x * {n}\nprint(f(1))",
    "Solve 3x + {n} = 2x - 7 and explain each step about {w}.",
    "What is {n} * 17 + 4? Then tell me a fact about {w}.",
    "Translate 'the {w} is on the table' into French, German and Spanish ({n}).",
    "Summarise the history of {w} in under {n} words.",
    "Compare {w} and its rivals for a small business with {n} staff.",
    "My SQL query is slow: SELECT * FROM orders WHERE note LIKE '%{w}%' LIMIT {n};",
    "Prove that the sum of the first {n} odd numbers is a square. Mention {w}.",
    "Give me {n} names for a bakery that sells {w}.",
    "Is it safe to eat {w} every day? I am {n} years old.",
)
STAMP = "2026-01-01 00:00:00+00"
WORDS = "river lantern algebra falcon copper harbour violin meadow glacier orchard".split()


def _texts(rng: random.Random, n: int) -> list[tuple[str, str | None]]:
    """Each battle's first turn and, one in ten, a second; one in twenty first turns long."""
    out = []
    for i in range(n):
        first = rng.choice(TEMPLATES).format(w=rng.choice(WORDS), n=i)
        if i % 20 == 7:
            first += " Here is my draft: " + " ".join(rng.choice(WORDS) for _ in range(400))
        second = rng.choice(TEMPLATES).format(w=rng.choice(WORDS), n=i + 1) if i % 10 == 3 else None
        out.append((first, second))
    return out


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def add_turns(n: int) -> list[tuple[str, str | None]]:
    """Turns for bench/vote_rows.py's battles (ids 0..n-1 as 32 hex digits), by COPY."""
    from django.db import connection, transaction

    texts = _texts(random.Random(0), n)
    with transaction.atomic(), connection.cursor() as django_cursor:
        cursor = django_cursor.cursor
        cursor.execute("TRUNCATE arena_turn RESTART IDENTITY CASCADE")
        buffer = io.StringIO()
        for i, (first, second) in enumerate(texts):
            buffer.write(f"{i:032x}\t0\t{_escape(first)}\t{STAMP}\t{STAMP}\n")
            if second is not None:
                buffer.write(f"{i:032x}\t1\t{_escape(second)}\t{STAMP}\t{STAMP}\n")
        sql = "COPY arena_turn (battle_id, index, text, created_at, shown_at) FROM STDIN"
        with cursor.copy(sql) as copy:
            copy.write(buffer.getvalue())
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--regenerate", action="store_true")
    args = parser.parse_args()
    common.setup_database(require_postgres=True)
    from django.core.management import call_command
    from django.db import connection

    from arena.records.models import Turn, Vote
    from arena.tagging.models import VoteTags
    from arena.tagging.rules import rule_tags

    if args.regenerate or Vote.objects.count() != args.votes:
        generate(args.votes, 40)
        add_turns(args.votes)
    texts = _texts(random.Random(0), args.votes)

    # Baseline: the read every pass pays, the votes and their turns, in the same batches.
    started = time.perf_counter()
    ids = list(Vote.objects.order_by("pk").values_list("pk", "battle_id"))
    for start in range(0, len(ids), 2000):
        chunk = ids[start : start + 2000]
        list(Vote.objects.filter(pk__in=[i for i, _ in chunk]).values_list("pk", "prompt_hash"))
        list(Turn.objects.filter(battle_id__in=[b for _, b in chunk]).values_list("text"))
    baseline = time.perf_counter() - started

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE arena_votetags")  # a bench database: start from no tags
    started = time.perf_counter()
    call_command("tag_prompts", "--rules-only", "--quiet", stdout=io.StringIO())
    took = time.perf_counter() - started
    tagged = VoteTags.objects.count()

    times = []
    for first, second in texts[:20_000]:
        turns = [first] if second is None else [first, second]
        t0 = time.perf_counter()
        rule_tags(turns)
        times.append((time.perf_counter() - t0) * 1000)
    p50, p99 = common.percentile(times, 0.5), common.percentile(times, 0.99)

    print(f"tag_prompts --rules-only: {tagged:,} votes tagged in {took:.1f} s "
          f"({tagged / took:,.0f} votes/s); target under {TARGET_S:.0f} s: "
          f"{common.verdict(took < TARGET_S and tagged == args.votes)}")  # fmt: skip
    print(f"  baseline (reading the votes and turns alone): {baseline:.1f} s; "
          f"tagging is {took / baseline:.1f}x the read")  # fmt: skip
    print(f"rule_tags per conversation: p50 {p50 * 1000:.0f} µs, p99 {p99 * 1000:.0f} µs "
          f"(over {len(times):,}); target p50 under {RULES_P50_MS:.0f} ms: "
          f"{common.verdict(p50 < RULES_P50_MS)}")  # fmt: skip


if __name__ == "__main__":
    main()
