"""Image battles against text battles at the same load, through the real pipeline.

Not a test: it prints figures. It starts its own daphne process and Celery worker (as
bench/vote_flood.py does, on the bench's own PostgreSQL database and Redis db unless
DATABASE_URL / REDIS_URL say otherwise), makes two mock models that read images the only
active ones, and signs in ``--battles`` raters. Each round, every rater starts a battle at the
same moment: half of them with a photo-like PNG of about ``--megabytes`` MB, the other half
with text alone, so both kinds meet the same load. An image rater first uploads the image
(``POST /images/``, as the page does when it is picked: checked, decoded, encoded again,
stored) and then starts with its hash. Per kind it prints, over every round:

* upload: the upload's round trip (stored and re-encoded), p50 / p99;
* queued: start sent -> the "battle" frame (the battle written and its answers queued);
* stored+queued: the two together, against issue 29's target (p50 under 300 ms);
* first frame: start sent -> the first text frame, and the image battles' p50 over the text
  battles', against the target of at most 100 ms.

    uv run python bench/image_battle.py [--battles 20] [--rounds 3] [--megabytes 2]
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

from bench import common  # noqa: E402
from bench.image_store import photo  # noqa: E402
from bench.ws_client import connect  # noqa: E402

RUN = uuid.uuid4().hex[:8]
common.celery_environment(name="images", database="arena_bench_images", redis_db=9)
# The mock answers as bench/battle_latency.py's: 60 tokens at 40 tokens/s after 50 ms.
MOCK = {"ttft_ms": 50, "tokens_per_s": 40, "answer_tokens": 60, "vision": True}
TARGET_STORED_QUEUED_MS = 300.0
TARGET_EXTRA_FIRST_MS = 100.0
CSRF = "b" * 32  # the CSRF secret this bench's clients present as cookie and header alike


def seed(n: int) -> list:
    common.only_mock_models("ImageBench", MOCK, takes_images=True)
    return common.raters(f"images-{RUN}", n)


async def upload(port: int, cookie: str, image: bytes, times: dict | None = None) -> str:
    """``POST /images/`` as the page sends a picked image: its hash."""
    import httpx

    began = time.perf_counter()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        answer = await client.post(
            "/images/",
            content=image,  # as the page sends it: the file is the body
            headers={"Cookie": f"{cookie}; csrftoken={CSRF}", "X-CSRFToken": CSRF,
                     "Content-Type": "image/png"},
        )  # fmt: skip
    answer.raise_for_status()
    if times is not None:
        times["upload"].append((time.perf_counter() - began) * 1000)
    return answer.json()["sha256"]


async def battle(port: int, cookie: str, hashes: list[str], times: dict) -> None:
    """Start (with ``hashes``' images), note the battle frame and the first text frame."""
    socket = await connect(port, {"Cookie": cookie})
    try:
        began = time.perf_counter()
        socket.send({"action": "start", "prompt": f"What is in this picture? {uuid.uuid4()}",
                     **({"images": hashes} if hashes else {})})  # fmt: skip
        await socket.until("battle")
        times["queued"].append((time.perf_counter() - began) * 1000)
        await socket.until("delta")
        times["first"].append((time.perf_counter() - began) * 1000)
        await socket.until("turn_complete")
    finally:
        await socket.close()


async def one_by_one(port: int, cookie: str, images: list[bytes], times: dict) -> None:
    """Each image uploaded, then its battle started, one after another: what one costs."""
    for image in images:
        await battle(port, cookie, [await upload(port, cookie, image, times)], times)


async def round_of(port: int, cookies: list[str], images: list[bytes], times: dict) -> None:
    """Every rater starts at once, half with an image uploaded beforehand: the same load."""
    half = len(cookies) // 2
    hashes = [[await upload(port, c, images[i])] for i, c in enumerate(cookies[:half])]
    # Interleaved, image then text: neither kind's starts are all sent first.
    starts = []
    for i in range(half):
        starts.append(battle(port, cookies[i], hashes[i], times["image"]))
        starts.append(battle(port, cookies[half + i], [], times["text"]))
    await asyncio.gather(*starts)


def fresh() -> dict:
    return {kind: {"upload": [], "queued": [], "first": []} for kind in ("image", "text")}


def line(name: str, values: list[float]) -> str:
    if not values:
        return f"  {name:<16} -"
    p50, p99 = common.percentile(values, 0.5), common.percentile(values, 0.99)
    return f"  {name:<16} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   (n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=20, help="at once, half with an image")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--megabytes", type=float, default=2.0)
    parser.add_argument("--one-by-one", type=int, default=20, help="image battles in a row")
    args = parser.parse_args()
    os.environ.setdefault("IMAGES_MAX_BYTES", str(int(args.megabytes * 2_000_000)))
    common.setup_database()
    from arena.devtools.http_server import free_port

    users = seed(args.battles)
    cookies = [common.session_cookie(u) for u in users]
    # A new image for every upload: a repeated one would be found stored already.
    alone = [photo(10_000 + i, args.megabytes) for i in range(args.one_by_one)]
    images = [
        [photo(r * args.battles + i, args.megabytes) for i in range(args.battles // 2)]
        for r in range(args.rounds)
    ]
    port = free_port()
    logs = ROOT / "var"
    queues = f"{os.environ['GENERATION_QUEUE']},{os.environ['CELERY_DEFAULT_QUEUE']}"
    common.purge_queues(queues)
    procs = []
    single, times = {"upload": [], "queued": [], "first": []}, fresh()
    try:
        log = logs / "bench-images-worker.log"
        procs.append(common.start_worker(queues, concurrency=100, log=log))
        log = logs / "bench-images-daphne.log"
        procs.append(common.start_daphne(port, log))
        common.wait_until_serving(port, procs[-1], log)
        # One of each first, not counted: the processes' first battle loads what they need.
        asyncio.run(round_of(port, cookies[:2], [photo(10**6, 0.1)], fresh()))
        asyncio.run(one_by_one(port, cookies[0], alone, single))
        for r in range(args.rounds):
            asyncio.run(round_of(port, cookies, images[r], times))
    finally:
        for proc in reversed(procs):
            common.stop(proc)
    size = len(alone[0]) / 1e6 if alone else args.megabytes
    print(f"one daphne, one worker (-P threads -c 100); PNGs of {size:.2f} MB")
    print(f"{args.one_by_one} image battles one after another (upload, then start)")
    for name in ("upload", "queued", "first"):
        print(line(name, single[name]))
    both = [u + q for u, q in zip(single["upload"], single["queued"], strict=True)]
    print(line("stored+queued", both))
    print(f"{args.rounds} rounds of {args.battles} battles starting at once, half with an image")
    for kind in ("image", "text"):
        for name in ("queued", "first"):
            print(line(f"{kind} {name}", times[kind][name]))
    p50 = common.percentile(both, 0.5)
    extra = common.percentile(times["image"]["first"], 0.5) - common.percentile(
        times["text"]["first"], 0.5
    )
    ok1, ok2 = p50 <= TARGET_STORED_QUEUED_MS, extra <= TARGET_EXTRA_FIRST_MS
    print(f"target: stored, re-encoded and queued p50 <= {TARGET_STORED_QUEUED_MS:.0f} ms: "
          f"{p50:.1f} ms {common.verdict(ok1)}")  # fmt: skip
    print(f"target: first frame, image over text p50 <= {TARGET_EXTRA_FIRST_MS:.0f} ms: "
          f"{extra:+.1f} ms {common.verdict(ok2)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
