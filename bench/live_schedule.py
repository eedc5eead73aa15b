"""What the web process's live schedule costs per battle: CPU, with no network and no database.

Not a test: it prints figures. ``--battles`` battles start at once in this process; each
side's answer is the mock's (``--tokens`` word chunks at ``--tokens-per-s`` after ``--ttft-ms``,
each chunk stamped as bench/battle_latency.py's mock stamps them unless ``--no-stamps``)
appended to the answer streams (in memory, or Redis with REDIS_URL: then the one XREAD per
frame is counted too) and shown through this process's one pacing schedule
(arena.battles.live) to a viewer that encodes each frame as the socket does and drops it. The
same appends with nobody watching are run first; the schedule's CPU is the difference.

    uv run python bench/live_schedule.py [--battles 100] [--repeat 3] [--profile]

Pacing as bench/battle_latency.py sets it (a 10 ms tick, no cap) unless ARENA_PACE_TICK_MS /
ARENA_PACE_CHARS say otherwise. ``--profile``: cProfile's top of one watched run. Process CPU
(user + system), so a busy machine changes the figure less than it changes wall times.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
os.environ.setdefault("ARENA_PACE_TICK_MS", "10")
os.environ.setdefault("ARENA_PACE_CHARS", "1000000")


class Viewer:
    """A socket that encodes each frame as the consumer does, and is told the turn's end."""

    def __init__(self, encode) -> None:
        self.encode = encode
        self.frames = 0
        self.shown = asyncio.get_running_loop().create_future()

    async def send_frame(self, payload: dict) -> None:
        self.encode(payload)
        self.frames += 1

    def turn_shown(self, watch) -> None:
        self.shown.set_result(True)

    def answer_failed(self, watch) -> None:
        self.shown.set_exception(RuntimeError("an answer failed"))

    def pacing_failed(self, watch) -> None:
        self.shown.set_exception(RuntimeError("pacing failed"))

    def answer_redacted(self, watch) -> None:
        pass

    def turn_overdue(self, watch) -> None:
        pass


async def battles(args: argparse.Namespace, *, watched: bool, run: str) -> tuple[float, int]:
    """One load: CPU seconds spent, and frames sent."""
    from arena.backends.base import ChatRequest, Message
    from arena.backends.mock import MockSettings, answer_text, word_chunks
    from arena.battles.consumers import _FRAME
    from arena.battles.live import Watch, schedule
    from arena.battles.selectors import TurnSides
    from arena.generation.streams import answer_streams, stream_key
    from arena.integrity.selectors import identity_terms

    streams = answer_streams()
    terms = identity_terms(models=[])
    mock = MockSettings.from_dict({"answer_tokens": args.tokens})
    gap = 1 / args.tokens_per_s

    async def side(key: str, model: str, i: int) -> None:
        request = ChatRequest(model, (Message("user", f"live bench {run} {i}"),), {})
        await asyncio.sleep(args.ttft_ms / 1000)
        for chunk in list(word_chunks(answer_text(model, request, mock))):
            await streams.append(key, f"⟨{time.time():.6f}⟩{chunk}" if args.stamps else chunk)
            await asyncio.sleep(gap)
        await streams.finish(key, "ok")

    loop_began = os.times()
    viewers = []
    work = []
    for i in range(args.battles):
        battle_id = f"{run}-{i}"
        keys = {2 * i + 1: "a", 2 * i + 2: "b"}
        for answer_id, s in keys.items():
            key = stream_key(battle_id=battle_id, answer_id=answer_id)
            work.append(side(key, f"bench-{s}", i))
        if watched:
            viewer = Viewer(_FRAME.encode)
            viewers.append(viewer)
            turn = TurnSides(turn_id=i, index=0, sides=keys, finished={})
            schedule().add(
                Watch.for_turn(
                    viewer=viewer, battle_id=battle_id, turn=turn, terms=terms, deadline_s=600
                )
            )
    await asyncio.gather(*work)
    if viewers:
        await asyncio.gather(*(v.shown for v in viewers))
    ended = os.times()
    cpu = (ended.user - loop_began.user) + (ended.system - loop_began.system)
    return cpu, sum(v.frames for v in viewers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=60, help="mock answer length")
    parser.add_argument("--tokens-per-s", type=float, default=40)
    parser.add_argument("--ttft-ms", type=float, default=50)
    parser.add_argument("--no-stamps", dest="stamps", action="store_false")
    parser.add_argument("--repeat", type=int, default=3, help="runs each; the least CPU kept")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    runs = iter(range(10**6))

    def least(watched: bool) -> tuple[float, int]:
        got = [
            asyncio.run(battles(args, watched=watched, run=f"{os.getpid()}-{next(runs)}"))
            for _ in range(args.repeat)
        ]
        return min(got)

    least(True)  # warm: imports, compiled patterns
    bare, _ = least(False)
    watched, frames = least(True)
    n = args.battles
    where = "Redis" if settings.REDIS_URL else "memory"
    print(
        f"{n} battles at once, answer streams in {where}, pacing tick "
        f"{settings.ARENA['PACE_TICK_MS']} ms, {settings.ARENA['PACE_CHARS']} chars; "
        f"{args.tokens} tokens a side at {args.tokens_per_s:g}/s, stamps {args.stamps}"
    )
    print(f"  appends alone: {bare / n * 1000:.2f} ms CPU per battle")
    print(
        f"  watched: {watched / n * 1000:.2f} ms CPU per battle, {frames / n:.0f} frames each; "
        f"the schedule's share: {(watched - bare) / n * 1000:.2f} ms per battle"
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        asyncio.run(battles(args, watched=True, run=f"{os.getpid()}-profile"))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
