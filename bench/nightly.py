"""The nightly leaderboard recompute from PostgreSQL on a million votes, end to end.

Not a test: it prints figures. A database of its own is filled (once) with 1,000,000 complete
battles and votes among 100 models, written straight into the real tables with PostgreSQL COPY:
outcomes drawn from known strengths plus a taste for long answers, ~8% ties and ~4% "both bad",
~40 prompts over 6 categories and 3 languages, side_a/side_b JSON as the vote log stores it.

Then `ranking.services.leaderboard_recompute()` runs with the default settings (1,000 bootstrap
rounds raw, 100 style-controlled; every category and language) in a fresh child process, so its
peak memory is the recompute's alone. Phases: read (query + arrays), compute (every board),
hash, write (snapshot + rows). Targets: ≤ 60 s wall and ≤ 2 GB peak RSS.

Beside it, in another fresh process, the straightforward read: `Vote.objects.values(...)` with
the whole side_a/side_b JSON decoded per row, then the same arrays built from it; both reads
must give the same arrays (compared by fingerprint).

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

os.environ["DJANGO_SETTINGS_MODULE"] = "arena.settings"
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench_nightly")

TARGET_S = 60.0
TARGET_RSS_MIB = 2048.0

CATEGORIES = ("coding", "math", "writing", "reasoning", "chat", "extraction")
LANGUAGES = ("en", "de", "es")
ORGANISATIONS = (
    "Demo Labs",
    "Example AI",
    "Open Mock Collective",
    "Nimbus",
    "Quill Research",
    "Basalt",
    "Fjord AI",
    "Lumen",
)
RATERS = 12
PARAMS = '{"temperature": 0.7, "top_p": 1.0, "max_tokens": 1024}'


def ensure_database() -> None:
    if common.ensure_database(require_postgres=True):
        print(f"created database {os.environ['DATABASE_URL'].rsplit('/', 1)[1]}")


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


# Generation -------------------------------------------------------------------------------


def _copy(cursor, model, columns: list[str], lines) -> None:
    """COPY text-format lines (already escaped: our values hold no tab, newline or backslash)
    into ``model``'s table. Columns not named get the model's default, so fields added to the
    models later do not break the bench."""
    from django.db import connection
    from django.db.models import AutoField, BigAutoField

    suffix = ""
    names = list(columns)
    for field in model._meta.concrete_fields:
        if field.column in columns or isinstance(field, AutoField | BigAutoField):
            continue
        if field.has_default():
            prepared = field.get_db_prep_save(field.get_default(), connection)
            cursor.execute("SELECT %s::text", [prepared])
            text = cursor.fetchone()[0]
            if text is None:
                text = r"\N"
            else:
                text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        elif field.null:
            text = r"\N"
        else:
            raise SystemExit(f"bench/nightly.py does not fill {model.__name__}.{field.name}")
        names.append(field.column)
        suffix += "\t" + text
    suffix += "\n"
    table = model._meta.db_table
    with cursor.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            chunk.append(suffix)
            if len(chunk) >= 40_000:
                copy.write("".join(chunk))
                chunk = []
        if chunk:
            copy.write("".join(chunk))


def _timestamps(seconds) -> list[str]:
    import numpy as np

    now = np.datetime64("now", "s").astype("datetime64[us]")
    stamps = now - (seconds * 1e6).astype("timedelta64[us]")
    return [s + "+00" for s in np.datetime_as_string(stamps, unit="us")]


def generate(n_votes: int, n_models: int, seed: int = 0) -> None:
    import numpy as np
    from django.db import connection, transaction

    from accounts.models import User
    from arena.models import Battle, ModelEntry, Prompt, Vote
    from arena.text import prompt_hash
    from ranking.models import LeaderboardSnapshot as Snapshot

    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    # CASCADE empties whatever refers to these too (turns, answers, flags, snapshot rows...).
    tables = [m._meta.db_table for m in (Vote, Battle, Prompt, ModelEntry, User, Snapshot)]
    with transaction.atomic(), connection.cursor() as django_cursor:
        cursor = django_cursor.cursor  # the psycopg 3 cursor, for COPY
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")

        # Raters: a dozen, two of them internal.
        joined = _timestamps(np.full(RATERS, 400 * 86400.0))
        _copy(
            cursor,
            User,
            "id password is_superuser first_name last_name is_staff is_active date_joined "
            "email rater_pool".split(),
            (
                f"{i + 1}\t!\tf\t\t\tf\tt\t{joined[i]}\trater{i + 1}@bench.arena\t"
                f"{'internal' if i < 2 else 'crowd'}"
                for i in range(RATERS)
            ),
        )

        # Models: strengths ~ N(0, 0.8); a typical answer length and markdown habit each; two
        # newcomers with few votes; the last three retired.
        theta = rng.normal(0.0, 0.8, n_models)
        typical = rng.uniform(120, 900, n_models)
        markdown = rng.uniform(0.2, 3.0, n_models)
        appeal = rng.uniform(0.4, 1.6, n_models)
        appeal[:2] = 0.01
        names = [f"bench-model-{i:03d}" for i in range(n_models)]
        created = _timestamps(np.full(n_models, 400 * 86400.0))
        _copy(
            cursor,
            ModelEntry,
            "id public_name organisation vendor model_id backend backend_settings "
            "supported_params active created_at".split(),
            (
                f"{i + 1}\t{names[i]}\t{ORGANISATIONS[i % len(ORGANISATIONS)]}\tbench\t"
                f"{names[i]}-v1\tmock\t{{}}\t"
                f'["temperature", "top_p", "max_tokens"]\t'
                f"{'f' if i >= n_models - 3 else 't'}\t{created[i]}"
                for i in range(n_models)
            ),
        )

        # Prompts: 36 curated over 6 categories × 3 languages, 4 typed by raters (no category
        # and no language, so they count only on the overall boards).
        prompts = []
        for i in range(36):
            category = CATEGORIES[i % len(CATEGORIES)]
            language = LANGUAGES[0] if i % 3 else LANGUAGES[1 + (i // 3) % 2]
            prompts.append(
                (
                    f"Bench prompt {i}: a {category} question in {language}.",
                    category,
                    language,
                    "curated",
                )
            )
        for i in range(4):
            prompts.append((f"Something a rater typed, number {i}.", "", "", "rater"))
        created = _timestamps(np.full(len(prompts), 400 * 86400.0))
        _copy(
            cursor,
            Prompt,
            "id text system_prompt category language active source text_hash usage_count "
            "created_at".split(),
            (
                f"{i + 1}\t{text}\t\t{cat}\t{lang}\tt\t{source}\t{prompt_hash(text)}\t0\t"
                f"{created[i]}"
                for i, (text, cat, lang, source) in enumerate(prompts)
            ),
        )
        for table in ("accounts_user", "arena_modelentry", "arena_prompt"):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT max(id) FROM {table}))"
            )

        # Votes: pairs by appeal, prompts weighted, outcome from strengths and length.
        n = n_votes
        pick = appeal / appeal.sum()
        a = rng.choice(n_models, size=n, p=pick)
        b = rng.choice(n_models, size=n, p=pick)
        same = a == b
        while same.any():
            b[same] = rng.choice(n_models, size=int(same.sum()), p=pick)
            same = a == b
        prompt_weight = np.array([1.0 if p[3] == "curated" else 0.5 for p in prompts])
        prompt_weight *= np.array([1.0 if p[2] != "en" else 1.8 for p in prompts])
        prompt = rng.choice(len(prompts), size=n, p=prompt_weight / prompt_weight.sum())
        tokens_a = np.maximum(1, rng.gamma(4.0, typical[a] / 4.0)).astype(np.int64)
        tokens_b = np.maximum(1, rng.gamma(4.0, typical[b] / 4.0)).astype(np.int64)
        headers_a, headers_b = rng.poisson(markdown[a]), rng.poisson(markdown[b])
        lists_a, lists_b = rng.poisson(2 * markdown[a]), rng.poisson(2 * markdown[b])
        bold_a, bold_b = rng.poisson(markdown[a]), rng.poisson(markdown[b])
        length = (tokens_a - tokens_b) / (tokens_a + tokens_b)
        p_a = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + 0.8 * length)))
        outcome = np.where(rng.random(n) < p_a, 0, 1)
        u = rng.random(n)
        outcome[u < 0.08] = 2
        outcome[(u >= 0.08) & (u < 0.12)] = 3
        choices = np.array(["a", "b", "tie", "both_bad"])[outcome]
        # Each pair's sampling probability, as the active sampler records it; the oldest
        # tenth of the log predates the sampler and has none.
        pair_prob = rng.uniform(0.5, 1.5, (n_models, n_models)) / (n_models * (n_models - 1) / 2)
        prob = pair_prob[np.minimum(a, b), np.maximum(a, b)]
        rater = rng.integers(0, RATERS, n) + 1
        decision = rng.integers(3000, 90000, n)
        ttft = rng.uniform(100, 2000, (2, n)).round(1)
        finished = rng.random((2, n)) < 0.97
        ages = np.sort(rng.uniform(3600, 365 * 86400, n))[::-1]
        vote_at = _timestamps(ages)
        battle_at = _timestamps(ages + 90)
        print(f"  drew {n:,} votes in {time.perf_counter() - started:.1f} s", flush=True)

        rater_pool = ["internal" if r <= 2 else "crowd" for r in range(RATERS + 1)]
        hashes = [prompt_hash(p[0]) for p in prompts]
        model_ids = [f"{name}-v1" for name in names]

        def side(model, tokens, ttft_ms, total_ms, reason, headers, lists, bold) -> str:
            return (
                f'{{"model": "{names[model]}", "model_id": "{model_ids[model]}", '
                f'"output_tokens": {tokens}, "input_tokens": 24, "tokens_estimated": false, '
                f'"finish_reason": "{reason}", "ttft_ms": [{ttft_ms}], "total_ms": [{total_ms}], '
                f'"style": {{"chars": {tokens * 4}, "headers": {headers}, '
                f'"list_items": {lists}, "bold": {bold}}}}}'
            )

        columns = (
            a.tolist(),
            b.tolist(),
            prompt.tolist(),
            choices.tolist(),
            rater.tolist(),
            decision.tolist(),
            tokens_a.tolist(),
            tokens_b.tolist(),
            headers_a.tolist(),
            headers_b.tolist(),
            lists_a.tolist(),
            lists_b.tolist(),
            bold_a.tolist(),
            bold_b.tolist(),
            ttft[0].tolist(),
            ttft[1].tolist(),
            finished[0].tolist(),
            finished[1].tolist(),
            prob.tolist(),
        )
        no_prob = n // 10

        def battle_lines():
            for i, (ma, mb, pr, r, p) in enumerate(
                zip(columns[0], columns[1], columns[2], columns[4], columns[18], strict=True)
            ):
                prob_text = r"\N" if i < no_prob else repr(p)
                yield (
                    f"{i:032x}\t{r}\t{pr + 1}\t{ma + 1}\t{mb + 1}\t\t{PARAMS}\tvoted\t\t"
                    f"{prob_text}\t{battle_at[i]}"
                )

        def vote_lines():
            for i, row in enumerate(zip(*columns, strict=True)):
                ma, mb, pr, choice, r, dec, ta, tb, ha, hb, la, lb, ba, bb = row[:14]
                fa, fb, oka, okb, p = row[14:]
                _, cat, lang, _ = prompts[pr]
                sa = side(
                    ma, ta, fa, round(fa + ta * 25.0, 1), "stop" if oka else "length", ha, la, ba
                )
                sb = side(
                    mb, tb, fb, round(fb + tb * 25.0, 1), "stop" if okb else "length", hb, lb, bb
                )
                prob_text = r"\N" if i < no_prob else repr(p)
                yield (
                    f"{i:032x}\t{vote_at[i]}\t{r}\t{rater_pool[r]}\t{pr + 1}\t{hashes[pr]}\t"
                    f"{cat}\t{lang}\t{ma + 1}\t{mb + 1}\t{choice}\t{dec}\t1\t{PARAMS}\t\t"
                    f"{sa}\t{sb}\t{prob_text}\tf"
                )

        _copy(
            cursor,
            Battle,
            "id rater_id prompt_id model_a_id model_b_id system_prompt params status "
            "void_reason sampling_probability created_at".split(),
            battle_lines(),
        )
        print(f"  copied {n:,} battles at {time.perf_counter() - started:.1f} s", flush=True)
        _copy(
            cursor,
            Vote,
            "battle_id created_at rater_id rater_pool prompt_id prompt_hash prompt_category "
            "prompt_language model_a_id model_b_id choice decision_ms turns params "
            "system_prompt side_a side_b sampling_probability simulated".split(),
            vote_lines(),
        )
        print(f"  copied {n:,} votes at {time.perf_counter() - started:.1f} s", flush=True)
    connection.close()
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE arena_battle")
        conn.execute("VACUUM ANALYZE arena_vote")
    print(f"generated {n:,} votes in {time.perf_counter() - started:.1f} s", flush=True)


# The recompute and the baseline, each in a fresh process ----------------------------------


def fingerprint(arrays) -> str:
    """The same votes read two ways must give byte-identical arrays."""
    import numpy as np

    digest = hashlib.sha256("\x1f".join(arrays.model_names).encode())
    for name in ("a", "b", "outcome", "style_a", "style_b"):
        digest.update(np.ascontiguousarray(getattr(arrays, name)).tobytes())
    for name in ("category", "language"):
        digest.update("\x1f".join(map(str, getattr(arrays, name))).encode())
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

    from arena.models import ModelEntry, Vote
    from ranking.logs import Record, _side_style, arrays_from_records

    out: dict = {"rss_start_mib": rss_mib()}
    started, cpu_started = time.perf_counter(), time.process_time()
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    rows = list(
        Vote.objects.filter(created_at__lte=timezone.now(), simulated=False)
        .order_by("pk")
        .values(
            "model_a_id",
            "model_b_id",
            "choice",
            "prompt_category",
            "prompt_language",
            "sampling_probability",
            "side_a",
            "side_b",
        )
    )
    out["fetch"] = time.perf_counter() - started
    arrays = arrays_from_records(
        Record(
            names[r["model_a_id"]],
            names[r["model_b_id"]],
            r["choice"],
            _side_style(r["side_a"]),
            _side_style(r["side_b"]),
            r["prompt_category"],
            r["prompt_language"],
            r["sampling_probability"],
        )
        for r in rows
    )
    out["total"] = time.perf_counter() - started
    out["cpu"] = time.process_time() - cpu_started
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


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


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

    ensure_database()
    setup()
    from django.core.management import call_command
    from django.db import connection

    from arena.models import Vote

    call_command("migrate", verbosity=0)
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
    print(f"  (the read also took {res['read_server_cpu']:.2f} s CPU in the PostgreSQL backend)")
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
        f"  target ≤ {TARGET_S:g} s: {verdict(res['total'] <= TARGET_S)}   "
        f"target ≤ {TARGET_RSS_MIB / 1024:g} GB peak RSS: "
        f"{verdict(max(r['rss_peak_mib'] for r in runs) <= TARGET_RSS_MIB)}"
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
    print(f"\nload average at the end {load()} (other work on this machine slows every figure)")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
