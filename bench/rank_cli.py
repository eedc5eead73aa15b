"""`manage.py rank` on a battle log file, end to end, beside one plain reference fit of the same
file measured in the same run (run by bench/ranking.py --cli, or on its own).

Not a test: it prints figures. Each job runs in a fresh process, timed from start to exit, its
peak memory read from the kernel (wait4's ru_maxrss for that process alone), on a file read once
beforehand so that every job reads it from the page cache (a disk's speed is not rank's):

- reference: the plain way to one Bradley–Terry fit of the file: the whole file decoded at once
  (msgspec into typed rows of the three fields needed: faster than the standard library's json,
  which takes ~17 s on the million-battle file, so the ratio below is the strict one), names
  mapped to codes, then scipy's L-BFGS on the per-vote log-likelihood (bench/ranking.py's
  `PerVote`), no intervals;
- `rank FILE` (1,000 bootstrap rounds)            target ≤ 2.5× the reference, ≤ 1 GB;
- `rank FILE --style-control`                     target ≤ 15 s;
- with --ten-million: `rank` on ten times the file (10,000,000 battles, the same rows
  repeated, written once next to it)              target ≤ 60 s, ≤ 4 GB.

    uv run python bench/rank_cli.py [--battles 1000000] [--dir /tmp/arena-bench] [--ten-million]
        [--checkout DIR]   (time another checkout's `rank`, e.g. an older commit, on the same file)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import battle_file  # noqa: E402
from bench.common import verdict  # noqa: E402

REFERENCE = """
import sys, msgspec, numpy as np
sys.path.insert(0, sys.argv[2])
from bench.ranking import PerVote

class Row(msgspec.Struct):
    model_a: str
    model_b: str
    winner: str

rows = msgspec.json.decode(open(sys.argv[1], "rb").read(), type=list[Row])
names = {}
a = np.array([names.setdefault(r.model_a, len(names)) for r in rows])
b = np.array([names.setdefault(r.model_b, len(names)) for r in rows])
y = np.array([{"model_a": 1.0, "model_b": 0.0}.get(r.winner, 0.5) for r in rows])
del rows
theta = PerVote(a, b, y, len(names)).fit(np.ones(a.size), np.zeros(len(names)))
print(len(names), "models, spread", round(float(np.ptp(theta)), 3))
"""


def run(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB and the last line of output of one fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{out[-2000:]}")
    lines = [line for line in out.splitlines() if line.strip()]
    return wall, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def ten_times(log: Path) -> Path:
    """The log's elements ten times over, as one JSON array, written once."""
    big = log.with_name(log.stem + "-x10.json")
    if big.exists():
        return big
    body = log.read_bytes().strip()[1:-1].strip()
    with big.open("wb") as out:
        out.write(b"[\n")
        for i in range(10):
            out.write((b",\n" if i else b"") + body)
        out.write(b"\n]\n")
    return big


def cached(path: Path) -> float:
    """Read ``path`` once, untimed, so each job reads it from the page cache as the reference
    does, not from the disk (the ten-million file is 7 GB: a cold read of it here takes half a
    minute by itself). Seconds it took."""
    started = time.perf_counter()
    with path.open("rb") as f:
        while f.read(64 << 20):
            pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/arena-bench"))
    parser.add_argument("--ten-million", action="store_true")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="whose `rank` to time")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    log = args.dir / f"battles-{args.battles}.json"
    if not log.exists():
        started = time.perf_counter()
        battle_file.write(log, args.battles, args.models)
        print(f"wrote {log} in {time.perf_counter() - started:.0f} s")
    size = log.stat().st_size / 2**20
    print(f"{log}: {args.battles:,} battles, {size:,.0f} MiB (public arena format, a JSON array)")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    python = str(args.checkout / ".venv" / "bin" / "python")
    rank = [python, "manage.py", "rank", "--quiet"]

    print(f"read once into the page cache in {cached(log):.1f} s")
    ref, ref_rss, ref_out = run([sys.executable, "-c", REFERENCE, str(log), str(ROOT)], ROOT)
    label = "reference fit (decode, codes, L-BFGS)"
    print(f"\n{label:<40} {ref:6.1f} s  {ref_rss:6.0f} MiB  ({ref_out})")
    wall, rss, out = run([*rank, str(log)], args.checkout)
    print(
        f"rank, 1,000 bootstrap rounds             {wall:6.1f} s  {rss:6.0f} MiB  "
        f"{wall / ref:4.1f}x the reference   target ≤ 2.5x: {verdict(wall <= 2.5 * ref)}, "
        f"≤ 1 GB: {verdict(rss <= 1024)}   ({out})"
    )
    wall, rss, _ = run([*rank, str(log), "--style-control"], args.checkout)
    print(
        f"rank --style-control                     {wall:6.1f} s  {rss:6.0f} MiB  "
        f"target ≤ 15 s: {verdict(wall <= 15)}"
    )
    if args.ten_million:
        big = ten_times(log)
        print(f"{big.name} read once into the page cache in {cached(big):.1f} s")
        wall, rss, out = run([*rank, str(big)], args.checkout)
        print(
            f"rank, 10× the file                       {wall:6.1f} s  {rss:6.0f} MiB  "
            f"target ≤ 60 s: {verdict(wall <= 60)}, ≤ 4 GB: {verdict(rss <= 4096)}   ({out})"
        )
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
