"""Public pages for a crowd: signed-out visitors hammering the leaderboard and its JSON export.

Not a test: it prints requests per second from ``wrk`` against ``/leaderboard/`` and
``/leaderboard.json`` on the embedded default (SQLite, no Redis: the local-memory cache) served
by one daphne process, first with the public page cache off (``PUBLIC_PAGE_CACHE=false``: every
request rendered, as before issue 28) and then on (each page rendered once per snapshot,
ranking/public_cache.py, and a visitor's answer replayed before Django, ranking/public_asgi.py),
in the same run, against the target of 500 requests/s from each URL. The demo's data is
seeded once into the bench's own SQLite file (``manage.py demo --no-serve``, a minute or two)
and kept for later runs.

    apt-get install -y wrk        # Debian/Ubuntu; or build it from github.com/wg/wrk
    uv run python bench/public_pages.py [--threads 2] [--connections 20] [--duration 10]

Figures on a machine other processes share are noisy: take them on a quiet one. Besides
requests/s it prints wrk's mean and p99 latency and the server's CPU milliseconds per request
(process CPU, steadier than latency when the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

URLS = ("/leaderboard/", "/leaderboard.json")
TARGET_RPS = 500


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def seed(database: Path) -> None:
    """The demo's snapshot and boards in the bench's own SQLite file, once."""
    if database.exists():
        return
    print(f"Seeding the demo into {database} (once)...", flush=True)
    subprocess.run(
        [sys.executable, "manage.py", "demo", "--no-serve"],
        cwd=ROOT, env=dict(os.environ), check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def wrk(url: str, *, threads: int, connections: int, duration: int) -> dict[str, float]:
    """wrk's requests/s, mean and p99 latency (ms), requests and errors of one run."""
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip

    def ms(text: str) -> float:
        value, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: .*", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "mean_ms": ms(re.search(r"Latency\s+(\S+)", out).group(1)),
        "p99_ms": ms(re.search(r"\s99%\s+(\S+)", out).group(1)),
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),
        "errors": int(errors.group(1)) if errors else 0,
        "socket_errors": socket_errors.group(0) if socket_errors else "",
    }


def run_mode(cached: bool, args: argparse.Namespace, log_dir: Path) -> dict[str, dict]:
    os.environ["PUBLIC_PAGE_CACHE"] = "true" if cached else "false"
    port = free_port()
    log = log_dir / f"daphne-{'cached' if cached else 'uncached'}.log"
    server = common.start_daphne(port, log)
    try:
        common.wait_until_serving(port, server, log)
        results = {}
        for path in URLS:
            url = f"http://127.0.0.1:{port}{path}"
            with urllib.request.urlopen(url) as first:  # the first rendering
                headers = first.headers
            # Warm: the server's start-up work (the language model loads in a thread) and the
            # first connections are not the crowd's.
            wrk(url, threads=args.threads, connections=args.connections, duration=2)
            cpu = common.cpu_seconds(server.pid)
            figures = wrk(url, threads=args.threads, connections=args.connections,
                          duration=args.duration)  # fmt: skip
            cpu = common.cpu_seconds(server.pid) - cpu
            figures["cpu_ms"] = 1000 * cpu / max(figures["requests"], 1)
            figures["etag"] = bool(headers.get("ETag"))
            figures["cache_control"] = headers.get("Cache-Control") or "-"
            results[path] = figures
        return results
    finally:
        common.stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--duration", type=int, default=10, help="seconds per URL and mode")
    parser.add_argument("--database", default="/tmp/arena-bench-public.sqlite3")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install -y wrk (or build github.com/wg/wrk)")

    # The embedded default: SQLite, no Redis (the cache is this process's memory).
    os.environ.pop("REDIS_URL", None)
    os.environ["DATABASE_URL"] = f"sqlite:///{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    seed(Path(args.database))
    log_dir = Path("/tmp/arena-bench-public")
    log_dir.mkdir(exist_ok=True)

    print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, one daphne, "
          f"embedded default; logs in {log_dir}")  # fmt: skip
    print(f"{'URL':<20} {'cache':<5} {'req/s':>8} {'mean ms':>8} {'p99 ms':>8} "
          f"{'CPU ms/req':>10} {'non-2xx':>7}  Cache-Control")  # fmt: skip
    table = {}
    for cached in (False, True):
        for path, f in run_mode(cached, args, log_dir).items():
            table[path, cached] = f
            print(f"{path:<20} {'on' if cached else 'off':<5} {f['rps']:>8.1f} "
                  f"{f['mean_ms']:>8.1f} {f['p99_ms']:>8.1f} {f['cpu_ms']:>10.2f} "
                  f"{f['errors']:>7}  {f['cache_control']} {f['socket_errors']}")  # fmt: skip
    print()
    for path in URLS:
        before, after = table[path, False], table[path, True]
        print(f"{path}: {before['rps']:.0f} -> {after['rps']:.0f} requests/s "
              f"(x{after['rps'] / max(before['rps'], 0.1):.1f}); target >= {TARGET_RPS}: "
              f"{common.verdict(after['rps'] >= TARGET_RPS and not after['errors'])}")  # fmt: skip


if __name__ == "__main__":
    main()
