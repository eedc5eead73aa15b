"""Evaluation-run throughput: answers/s and verdicts/s, against what the backends allow.

Not a test: it prints figures. It makes a bench database (PostgreSQL, ``DATABASE_URL``; made
and migrated if missing), mock contestants with a fixed time to first token and a mock judge,
and runs ``arena.evals.running.eval_execute`` in this process with its own concurrency. The
target is that the run is bound by the backends, not by us. It reports the ratio of wall time
to the backends' own time divided by the concurrency (1.0 means no overhead at all).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench uv run python bench/autoeval.py \\
        [--prompts 500] [--models 8] [--ttft-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
os.environ.pop("REDIS_URL", None)  # generation in this process: the bench measures our code
# Each database action keeps its thread's connection, as web and worker processes run
# (README, "More than one process"): with 0, every step of every unit opens a new one.
os.environ.setdefault("DATABASE_CONN_MAX_AGE", "60")

from bench.common import setup_database, verdict  # noqa: E402

TARGET_RATIO = 1.5  # wall time at most this much over the backends' time / concurrency


def seed(prompts: int, models: int, ttft_ms: float) -> tuple[int, list[int], int, int]:
    from accounts.models import User
    from arena.catalog.models import ModelEntry

    tag = uuid.uuid4().hex[:6]  # models of their own for each run (runs keep theirs)
    mock = {"ttft_ms": ttft_ms, "tokens_per_s": 0, "answer_tokens": 60}
    made = []
    for i in range(models + 1):
        made.append(
            ModelEntry.objects.create(
                public_name=f"Bench Eval {tag} {i}",
                vendor=f"bench-{i}",
                model_id=f"bench-eval-{i}",
                backend="mock",
                backend_settings={**mock, "prefix": f"⟦q={(i - models / 2) / models}⟧ "},
                active=False,
            )
        )
    judge = ModelEntry.objects.create(
        public_name=f"Bench Eval {tag} Judge",
        vendor="bench-judge",
        model_id="bench-eval-judge",
        backend="mock",
        backend_settings={"judge": True, "ttft_ms": ttft_ms, "tokens_per_s": 0},
        active=False,
    )
    user, _ = User.objects.get_or_create(email="bench-evals@example.com")
    return user.pk, [m.pk for m in made[1:]], made[0].pk, judge.pk


def main(args: argparse.Namespace) -> None:
    setup_database(require_postgres=True)
    from accounts.models import User
    from arena.evals import running, services
    from arena.evals.models import EvalAnswer, EvalVerdict

    user_id, model_ids, baseline_id, judge_id = seed(args.prompts, args.models, args.ttft_ms)
    run = services.eval_create(
        user=User.objects.get(pk=user_id),
        name="bench",
        prompts=[(f"Bench question {i}: explain item {i}.", "bench") for i in range(args.prompts)],
        model_ids=model_ids,
        baseline_id=baseline_id,
        judge_id=judge_id,
    )
    started = time.perf_counter()
    asyncio.run(running.eval_execute(run.pk))
    wall = time.perf_counter() - started
    answers = EvalAnswer.objects.filter(prompt__run=run).count()
    verdicts = EvalVerdict.objects.filter(prompt__run=run, done=True).count()
    # Each answer and each judge call waits ttft_ms at the backend; the rest is ours.
    backend_s = (answers + verdicts) * args.ttft_ms / 1000
    ideal = backend_s / running.CONCURRENCY
    ratio = wall / ideal if ideal else float("inf")
    print(f"{args.prompts} prompts x {args.models} models + baseline, mock TTFT {args.ttft_ms} ms")
    print(f"answers {answers} in {wall:.1f} s: {answers / wall:.1f}/s overall")
    print(f"verdicts {verdicts}: {verdicts / wall:.1f}/s overall")
    print(
        f"backend time {backend_s:.1f} s / concurrency {running.CONCURRENCY} = {ideal:.1f} s; "
        f"wall / that = {ratio:.2f} (target <= {TARGET_RATIO}: {verdict(ratio <= TARGET_RATIO)})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    main(parser.parse_args())
