"""The top of a py-spy profile: ``py-spy record --format raw`` writes collapsed stacks (one
line per stack, frames joined by ";" and the sample count last); this adds them up per
function, as time spent in the function itself and in it or anything it called.

    python bench/stacks.py profile.txt [--top 15]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

# py-spy's frame: "function (path/to/file.py:line)"; the line goes, so a function is one row.
_LINE = re.compile(r":\d+\)$")


def spies_start(profile: Path, label: str, web: list, workers: list) -> list[subprocess.Popen]:
    """py-spy sampling each server and worker (active threads only) into ``profile`` until told
    to stop (SIGINT), one raw file each: ``<web|worker>-<label>-<i>.txt``."""
    profile.mkdir(parents=True, exist_ok=True)
    spy = str(Path(sys.executable).with_name("py-spy"))
    spies = []
    for kind, procs in (("web", web), ("worker", workers)):
        for i, proc in enumerate(procs):
            out = profile / f"{kind}-{label}-{i}.txt"
            args = [spy, "record", "--pid", str(proc.pid), "--format", "raw", "-o", str(out)]
            args += ["--rate", "200", "--nonblocking"]
            spies.append(
                subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
    time.sleep(1.0)  # py-spy attached before the load begins
    return spies


def frame_name(frame: str) -> str:
    frame = _LINE.sub(")", frame.strip())
    for marker in ("site-packages/", "/work/main/", "python3.11/"):
        if marker in frame:
            head, tail = frame.split("(", 1)
            return f"{head}({tail.split(marker, 1)[1]}"
    return frame


def summary(paths: list[Path]) -> tuple[int, Counter, Counter]:
    """Samples in all, and per function: its own samples and those with it on the stack."""
    total, own, inclusive = 0, Counter(), Counter()
    for path in paths:
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            frames = [frame_name(f) for f in stack.split(";")]
            # The thread's name leads each stack when py-spy says it; it is no function.
            frames = [f for f in frames if not f.startswith(("process ", "thread "))]
            if not frames:
                continue
            total += n
            own[frames[-1]] += n
            for name in set(frames):
                inclusive[name] += n
    return total, own, inclusive


def top(paths: list[Path], n: int = 15) -> str:
    total, own, inclusive = summary(paths)
    if not total:
        return "  (no samples)"
    lines = [f"  {total} samples; own time:"]
    lines += [f"  {100 * c / total:5.1f}%  {name}" for name, c in own.most_common(n)]
    lines.append("  with what it called:")
    lines += [f"  {100 * c / total:5.1f}%  {name}" for name, c in inclusive.most_common(n)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(top(args.paths, args.top))


if __name__ == "__main__":
    main()
