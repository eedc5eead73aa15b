"""The nightly leaderboard recompute from PostgreSQL on a million votes, end to end.

Not a test: it prints figures. A database of its own is filled (once) with 1,000,000 complete
battles and votes among 100 models, written straight into the real tables with PostgreSQL COPY
by bench/vote_rows.py (how outcomes, prompts, categories and languages are drawn: see there).

Then `ranking.services.leaderboard_recompute()` runs with the default settings (1,000 bootstrap
rounds raw, 100 style-controlled; every category and language) in a fresh child process, so its
peak memory is the recompute's alone. Phases: read (query + arrays), compute (every board),
hash, write (snapshot + rows). Targets: ≤ 15 s wall and ≤ 1 GB peak RSS (before the COPY read
and the breakdowns' sandwich intervals: 64 s, 639 MiB on this machine).

Beside it, in another fresh process, the straightforward read: `Vote.objects.values(...)` with
the whole side_a/side_b JSON decoded per row, then the same arrays built from it; both reads
must give the same arrays (compared by fingerprint). That process then times one plain
reference fit of the votes (bench/ranking.py's per-vote L-BFGS, no intervals).

    uv run python bench/nightly.py [--votes 1000000] [--models 100] [--regenerate]
        [--no-baseline] [--repeat N]

Other work on the machine slows every figure: the load average is printed, CPU seconds beside
wall seconds, and --repeat N keeps the fastest of N recomputes.

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/arena_bench_nightly) is created if
missing and migrated. Generation is skipped when it already holds enough votes; --regenerate
truncates the bench tables (TRUNCATE passes the append-only trigger) and starts again.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import multiprocessing.forkserver
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from bench.vote_rows import generate  # noqa: E402

common.django_environment(database="arena_bench_nightly")

TARGET_S = 15.0
TARGET_RSS_MIB = 1024.0


def setup() -> None:
    import django

    django.setup()


def rss_mib() -> float:
    """Peak RSS of this process so far, in MiB (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hwm_mib() -> float:
    """The kernel's high-water mark of this process's own address space (a cross-check)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# The recompute and the baseline, each in a fresh process ----------------------------------


def fingerprint(arrays) -> str:
    """The same votes read two ways must give byte-identical arrays."""
    import numpy as np

    digest = hashlib.sha256("\x1f".join(arrays.model_names).encode())
    for name in ("a", "b", "outcome", "style_a", "style_b"):
        digest.update(np.ascontiguousarray(getattr(arrays, name)).tobytes())
    for name in ("category", "language"):  # texts, whether held as texts or as codes
        codes, labels = arrays.coded(name)
        digest.update("\x1f".join(labels[i] for i in codes.tolist()).encode())
    if arrays.weights is not None:
        digest.update(np.round(arrays.weights, 12).tobytes())
    return digest.hexdigest()[:16]


def backend_cpu_s() -> float:
    """CPU seconds of this connection's PostgreSQL backend, when the server runs here."""
    from django.db import connection

    connection.ensure_connection()
    try:
        with open(f"/proc/{connection.connection.info.backend_pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, IndexError, ValueError):
        return float("nan")


def recompute_child(queue) -> None:
    setup()
    from ranking import services

    phases: dict[str, float] = {}
    cpu: dict[str, float] = {}
    peaks: dict[str, float] = {}
    out: dict = {"rss_start_mib": rss_mib()}

    def timed(name, func):
        def wrapper(*args, **kwargs):
            started, cpu_started = time.perf_counter(), time.process_time()
            result = func(*args, **kwargs)
            phases[name] = time.perf_counter() - started
            cpu[name] = time.process_time() - cpu_started
            peaks[name] = rss_mib()
            return result

        return wrapper

    read = services.selectors.vote_arrays

    def read_and_fingerprint(**kwargs):
        server_started = backend_cpu_s()
        loaded = timed("read", read)(**kwargs)
        out["read_server_cpu"] = backend_cpu_s() - server_started
        started = time.perf_counter()
        out["fingerprint"] = fingerprint(loaded.arrays)
        phases["bench"] = time.perf_counter() - started  # ours, taken off the total
        return loaded

    services.selectors.vote_arrays = read_and_fingerprint
    services.compute_all = timed("compute", services.compute_all)
    services.boards_hash = timed("hash", services.boards_hash)

    started, cpu_started = time.perf_counter(), time.process_time()
    snapshot = services.leaderboard_recompute()
    total = time.perf_counter() - started - phases.pop("bench")
    cpu_total = time.process_time() - cpu_started
    phases["write"] = total - sum(phases.values())
    cpu["write"] = cpu_total - sum(cpu.values())  # the fingerprint's CPU is in here, ~0.1 s
    rows = snapshot.rows.all()
    out |= {
        "total": total,
        "cpu_total": cpu_total,
        "phases": phases,
        "cpu": cpu,
        "peaks": peaks,
        "rss_peak_mib": rss_mib(),
        "hwm_mib": hwm_mib(),
        "snapshot": snapshot.pk,
        "votes_used": snapshot.votes_used,
        "votes_excluded": snapshot.votes_excluded,
        "boards": rows.values("view", "breakdown").distinct().count(),
        "rows": rows.count(),
        "breakdowns": sorted(set(rows.values_list("breakdown", flat=True))),
        "ranked_raw_all": rows.filter(view="raw", breakdown="all", section="ranked").count(),
        "content_hash": snapshot.content_hash,
    }
    queue.put(out)


def baseline_child(queue) -> None:
    """The obvious read: whole rows as dicts, JSON decoded, then the same arrays."""
    setup()
    from django.utils import timezone

    from arena.catalog.models import ModelEntry
    from arena.records.models import Vote
    from ranking.battle_log import Record, arrays_from_records, side_style
    from ranking.selectors import VOTE_FIELDS

    out: dict = {"rss_start_mib": rss_mib()}
    started, cpu_started = time.perf_counter(), time.process_time()
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    rows = list(
        Vote.objects.filter(created_at__lte=timezone.now(), simulated=False)
        .order_by("pk")
        .values(*VOTE_FIELDS, "side_a", "side_b")
    )
    out["fetch"] = time.perf_counter() - started
    arrays = arrays_from_records(
        Record(
            names[r["model_a_id"]],
            names[r["model_b_id"]],
            r["choice"],
            side_style(r["side_a"]),
            side_style(r["side_b"]),
            r["prompt_category"],
            r["prompt_language"],
            r["sampling_probability"],
        )
        for r in rows
    )
    out["total"] = time.perf_counter() - started
    out["cpu"] = time.process_time() - cpu_started
    import numpy as np

    from bench.ranking import PerVote

    y = np.select([arrays.outcome == 0, arrays.outcome == 1], [1.0, 0.0], 0.5)
    started = time.perf_counter()
    m = len(arrays.model_names)
    PerVote(arrays.a, arrays.b, y, m).fit(np.ones(len(y)), np.zeros(m))
    out["reference_fit"] = time.perf_counter() - started
    out["rss_peak_mib"] = rss_mib()
    out["hwm_mib"] = hwm_mib()
    out["votes"] = len(arrays.a)
    out["fingerprint"] = fingerprint(arrays)
    queue.put(out)


def in_fresh_process(target) -> dict:
    # From the fork server started while this process was still small: Linux carries
    # ru_maxrss over fork and exec, so a child spawned from here after generating would
    # report our peak, not its own.
    context = multiprocessing.get_context("forkserver")
    queue = context.Queue()
    process = context.Process(target=target, args=(queue,))
    process.start()
    result = queue.get()
    process.join()
    if process.exitcode:
        raise SystemExit(f"{target.__name__} failed with exit code {process.exitcode}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--regenerate", action="store_true", help="truncate and generate anew")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline read")
    parser.add_argument(
        "--repeat", type=int, default=1, help="recompute this many times; the fastest counts"
    )
    args = parser.parse_args()
    multiprocessing.get_context("forkserver")
    multiprocessing.forkserver.ensure_running()

    if common.setup_database(require_postgres=True):
        print(f"created database {os.environ['DATABASE_URL'].rsplit('/', 1)[1]}")
    from django.db import connection

    from arena.records.models import Vote

    have = Vote.objects.count()
    if have >= args.votes and not args.regenerate:
        print(f"{connection.settings_dict['NAME']} already holds {have:,} votes: not generating")
    else:
        print(f"generating {args.votes:,} votes among {args.models} models (had {have:,})")
        generate(args.votes, args.models)
    connection.close()

    import django.conf

    conf = django.conf.settings.RANKING
    print(
        f"recompute: method {conf['method']}, {conf['rounds']} rounds raw, "
        f"{conf['style_rounds']} style, min_votes {conf['min_votes']}; "
        f"{os.cpu_count()} CPUs, load average {load()}"
    )
    runs = []
    for i in range(args.repeat):
        runs.append(in_fresh_process(recompute_child))
        if args.repeat > 1:
            print(f"  run {i + 1}: {runs[-1]['total']:.1f} s (load average {load()})", flush=True)
    res = min(runs, key=lambda r: r["total"])
    ph, cpu = res["phases"], res["cpu"]
    print()
    print(
        f"leaderboard_recompute()          {res['total']:7.1f} s wall  "
        f"{res['cpu_total']:7.1f} s CPU (this process)"
        + (f"   fastest of {len(runs)}" if len(runs) > 1 else "")
    )
    for name, label in (
        ("read", "read + arrays"),
        ("compute", "compute (all boards)"),
        ("hash", "content hash"),
        ("write", "write snapshot + rows"),
    ):
        peak = f"   peak RSS so far {res['peaks'][name]:6.0f} MiB" if name in res["peaks"] else ""
        print(f"  {label:<30} {ph[name]:7.2f} s wall  {cpu[name]:7.2f} s CPU{peak}")
    print(
        f"  (the read also took {res['read_server_cpu']:.2f} s CPU in this connection's "
        "PostgreSQL backend; the COPY's own connections are not counted)"
    )
    print(
        f"  peak RSS {res['rss_peak_mib']:.0f} MiB (VmHWM {res['hwm_mib']:.0f} MiB; after "
        f"imports and setup: {res['rss_start_mib']:.0f} MiB)"
    )
    print(
        f"  snapshot {res['snapshot']}: {res['votes_used']:,} votes used, excluded "
        f"{res['votes_excluded'] or 'none'}; {res['boards']} boards, {res['rows']:,} rows "
        f"written; {res['ranked_raw_all']} ranked on raw/all; hash {res['content_hash'][:12]}"
    )
    print(f"  breakdowns: {', '.join(res['breakdowns'])}")
    print(
        f"  target ≤ {TARGET_S:g} s: {common.verdict(res['total'] <= TARGET_S)}   "
        f"target ≤ {TARGET_RSS_MIB / 1024:g} GB peak RSS: "
        f"{common.verdict(max(r['rss_peak_mib'] for r in runs) <= TARGET_RSS_MIB)}"
    )
    hashes = {r["content_hash"] for r in runs}
    if len(hashes) > 1:
        print(f"  DIFFERENT content hashes across runs: {sorted(hashes)}")

    if not args.no_baseline:
        base = in_fresh_process(baseline_child)
        same = base["fingerprint"] == res["fingerprint"]
        print()
        print(
            f"baseline read (values() + JSON decoded + the same arrays) {base['total']:7.1f} s "
            f"wall {base['cpu']:.1f} s CPU (fetch {base['fetch']:.1f} s), "
            f"peak RSS {base['rss_peak_mib']:.0f} MiB"
        )
        print(
            f"  ours {ph['read']:.2f} s vs baseline {base['total']:.1f} s: "
            f"ratio {base['total'] / ph['read']:.1f}x; arrays identical: "
            f"{'yes' if same else 'NO'} ({res['fingerprint']} / {base['fingerprint']})"
        )
        print(
            f"one plain reference BT fit of the same votes (L-BFGS, per vote, no intervals) "
            f"{base['reference_fit']:.1f} s: the whole recompute, every board with intervals, "
            f"is {res['total'] / base['reference_fit']:.1f}x that"
        )
    print(f"\nload average at the end {load()} (other work on this machine slows every figure)")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
