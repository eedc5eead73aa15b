"""A million synthetic battles and votes, written straight into the real tables with COPY.

For bench/nightly.py. Outcomes are drawn from known strengths plus a taste for long answers,
~8% ties and ~4% "both bad"; ~40 prompts over 6 categories and 3 languages; side_a/side_b JSON
as the vote log stores it. Everything the bench wrote before is truncated first (TRUNCATE
passes the append-only trigger).
"""

from __future__ import annotations

import json
import os
import time

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
            raise SystemExit(f"bench/vote_rows.py does not fill {model.__name__}.{field.name}")
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
    from django.conf import settings
    from django.db import connection, transaction

    from accounts.models import User
    from arena.catalog.models import ModelEntry, standard_params
    from arena.core.text import prompt_hash
    from arena.records.models import Battle, Prompt, Vote
    from ranking.models import LeaderboardSnapshot as Snapshot

    # Each battle's and vote's params, and each model's supported ones, as JSON in COPY text.
    params = json.dumps(settings.ARENA["DEFAULT_PARAMS"])
    supported = json.dumps(standard_params())
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
                f"{names[i]}-v1\tmock\t{{}}\t{supported}\t"
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
                    f"{i:032x}\t{r}\t{pr + 1}\t{ma + 1}\t{mb + 1}\t\t{params}\tvoted\t\t"
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
                    f"{cat}\t{lang}\t{ma + 1}\t{mb + 1}\t{choice}\t{dec}\t1\t{params}\t\t"
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
