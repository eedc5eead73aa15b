"""Reads for ranking: the counted vote log as arrays."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.models import Count, Q, QuerySet
from django.db.models.expressions import RawSQL

from arena.battles.models import Vote
from arena.catalog.models import ModelEntry
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import counted_votes, vote_flagged
from ranking.battle_log import (
    OUTCOME,
    STYLE_KEYS,
    Record,
    arrays_from_columns,
    arrays_from_records,
)
from ranking.compute import VoteArrays


def exclusion_rules(*, include_simulated: bool) -> list[tuple[str, Q]]:
    """Why a vote in the log does not count, in order; the first matching reason is reported.

    For the report only: which votes count is ``counted_votes``, whose open flags these are.
    """
    rules: list[tuple[str, Q]] = []
    if not include_simulated:
        rules.append(("simulated", Q(simulated=True)))
    for reason in VoteFlag.Reason.values:
        rules.append((reason, Q(vote_flagged(reason))))
    return rules


@dataclass
class LoadedVotes:
    arrays: VoteArrays
    excluded: dict[str, int]
    models: dict[str, ModelEntry]  # public name -> entry


def votes_since(*, cutoff: datetime | None) -> bool:
    """Whether any vote was cast after ``cutoff`` (None: ever)."""
    votes = Vote.objects.all() if cutoff is None else Vote.objects.filter(created_at__gt=cutoff)
    return votes.exists()


def simulated_votes_exist(*, cutoff: datetime) -> bool:
    """Whether the log holds a simulated vote (the demo's) up to ``cutoff``, counted or not."""
    return Vote.objects.filter(simulated=True, created_at__lte=cutoff).exists()


def vote_arrays(*, cutoff: datetime, include_simulated: bool) -> LoadedVotes:
    """Every counted vote up to ``cutoff`` as arrays: on PostgreSQL a column at a time (the
    same arrays, a fraction of the time and memory), elsewhere one row a vote."""
    votes = Vote.objects.filter(created_at__lte=cutoff)
    excluded: dict[str, int] = {}
    seen = Q(pk__in=[])
    for reason, rule in exclusion_rules(include_simulated=include_simulated):
        count = votes.filter(rule).exclude(seen).count()
        if count:
            excluded[reason] = count
        seen |= rule
    entries = {m.public_name: m for m in ModelEntry.objects.all()}
    names = {m.pk: name for name, m in entries.items()}
    counted = (
        counted_votes(include_simulated=include_simulated)
        .filter(created_at__lte=cutoff)
        .order_by("pk")
    )
    if connections[counted.db].vendor == "postgresql":
        arrays = arrays_by_aggregate(counted, names=names)
    else:
        arrays = arrays_by_rows(counted, names=names)
    return LoadedVotes(arrays, excluded, entries)


def answer_counts(*, cutoff: datetime, include_simulated: bool) -> dict[str, dict[str, int]]:
    """Per model (public name): its answers in the counted votes up to ``cutoff`` and how many
    were cut at the length limit (finish reason "length")."""
    counted = counted_votes(include_simulated=include_simulated).filter(created_at__lte=cutoff)
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    out: dict[str, dict[str, int]] = {}
    for side in ("a", "b"):
        rows = (
            counted.order_by()
            .values(f"model_{side}")
            .annotate(
                answers=Count("pk"),
                truncated=Count("pk", filter=Q(**{f"side_{side}__finish_reason": "length"})),
            )
        )
        for row in rows:
            stats = out.setdefault(names[row[f"model_{side}"]], {"answers": 0, "truncated": 0})
            stats["answers"] += row["answers"]
            stats["truncated"] += row["truncated"]
    return out


def arrays_by_rows(votes: QuerySet, *, names: dict[int, str]) -> VoteArrays:
    """The portable read: one row a vote, the style numbers picked out of side_a/side_b."""
    fields = [
        "model_a_id",
        "model_b_id",
        "choice",
        "prompt_category",
        "prompt_language",
        "sampling_probability",
        *(f"side_a__{k}" for k in STYLE_KEYS),
        *(f"side_b__{k}" for k in STYLE_KEYS),
    ]
    rows = votes.values_list(*fields)
    records = (
        Record(names[r[0]], names[r[1]], r[2], _style(r[6:10]), _style(r[10:14]), r[3], r[4], r[5])
        for r in rows.iterator(chunk_size=20_000)
    )
    return arrays_from_records(records)


def _style(values: tuple) -> tuple[float, float, float, float]:
    return tuple(float(v) if isinstance(v, int | float) else 0.0 for v in values)  # type: ignore[return-value]


# PostgreSQL: the same arrays without a Python object per vote. The server reduces each vote to
# numbers (the style values read exactly as `_style` reads them) and hands them over a column at a
# time, each column one binary string per chunk of votes, which numpy reads as it is.

_CHUNK_VOTES = 250_000  # ~30 MB of values a chunk (twice that as hex on the wire)


def _number_sql(column: str, key: str) -> str:
    """A JSON value as `_style` takes it: a number as itself, true/false as 1/0 (Python's bool is
    an int), anything else, JSON null or no such key as 0."""
    value = f"({column} #> '{{{key.replace('__', ',')}}}')"
    return (
        f"CASE jsonb_typeof({value}) WHEN 'number' THEN ({value})::float8 "
        f"WHEN 'boolean' THEN ({value})::boolean::int::float8 ELSE 0::float8 END"
    )


def _aggregate_columns(table: str) -> list[tuple[str, str, str]]:
    """(name, SQL for one vote's value as binary, numpy type of that binary) per column."""

    def col(name: str) -> str:
        return f'{table}."{name}"'

    outcome = " ".join(f"WHEN '{choice}' THEN {code}" for choice, code in OUTCOME.items())
    return [
        ("id", f"int8send({col('id')})", ">i8"),
        ("a", f"int8send({col('model_a_id')})", ">i8"),
        ("b", f"int8send({col('model_b_id')})", ">i8"),
        ("outcome", f"int2send((CASE {col('choice')} {outcome} ELSE -1 END)::int2)", ">i2"),
        # As `arrays_from_records`: no probability, or zero, is NaN.
        (
            "p",
            f"float8send(COALESCE(NULLIF({col('sampling_probability')}, 0), 'NaN')::float8)",
            ">f8",
        ),
        *(
            (f"{side}{i}", f"float8send({_number_sql(col(f'side_{side}'), key)})", ">f8")
            for side in "ab"
            for i, key in enumerate(STYLE_KEYS)
        ),
        # Texts end in a zero byte, which PostgreSQL text never holds.
        ("category", f"convert_to({col('prompt_category')}, 'UTF8') || '\\x00'::bytea", ""),
        ("language", f"convert_to({col('prompt_language')}, 'UTF8') || '\\x00'::bytea", ""),
    ]


def arrays_by_aggregate(votes: QuerySet, *, names: dict[int, str]) -> VoteArrays:
    """The arrays `arrays_by_rows` gives, read in chunks of votes in primary-key order: per
    chunk one row holding each column's values back to back (``string_agg`` of the values'
    binary forms), read by numpy without a Python object per vote. PostgreSQL only."""
    connection = connections[votes.db]
    table = connection.ops.quote_name(Vote._meta.db_table)
    columns = _aggregate_columns(table)
    parts: dict[str, list[np.ndarray]] = {name: [] for name, _, _ in columns}
    codes: dict[str, dict[bytes, int]] = {"category": {}, "language": {}}
    last = None
    with transaction.atomic(using=votes.db), connection.cursor() as cursor:
        # The planner's estimates for the exclusion subqueries are far off, so it would
        # JIT-compile every chunk's query: seconds each, more than the whole read takes.
        cursor.execute("SET LOCAL jit = off")
        while True:
            chunk = votes if last is None else votes.filter(pk__gt=last)
            inner = chunk.order_by("pk").values_list(*(RawSQL(sql, ()) for _, sql, _ in columns))[
                :_CHUNK_VOTES
            ]
            try:
                sql, params = inner.query.sql_with_params()
            except EmptyResultSet:
                break
            aggregates = ", ".join(f"string_agg(v.c{i}, ''::bytea)" for i in range(len(columns)))
            aliases = ", ".join(f"c{i}" for i in range(len(columns)))
            cursor.execute(f"SELECT count(*), {aggregates} FROM ({sql}) AS v ({aliases})", params)
            count, *blobs = cursor.fetchone()
            if not count:
                break
            for (name, _, kind), blob in zip(columns, blobs, strict=True):
                blob = bytes(blob)
                if kind:
                    values = np.frombuffer(blob, dtype=kind)
                else:  # texts: dictionary codes, the same text the same code in every chunk
                    texts = blob.split(b"\x00")[:-1]
                    known = codes[name]
                    for text in dict.fromkeys(texts):
                        known.setdefault(text, len(known))
                    values = np.fromiter(map(known.__getitem__, texts), np.int64, len(texts))
                if len(values) != count:
                    raise RuntimeError(f"vote log column {name} came back short")
                parts[name].append(values)
            last = int(parts["id"][-1].max())
            if count < _CHUNK_VOTES:
                break
    col: dict[str, np.ndarray] = {}
    for name, _, kind in columns:  # dropping each column's chunks once joined
        chunks = parts.pop(name)
        col[name] = np.concatenate(chunks) if chunks else np.zeros(0, kind or np.int64)
        del chunks
    ids = col.pop("id")
    if (np.diff(ids) <= 0).any():  # each chunk was read in order; this only makes sure
        order = np.argsort(ids, kind="stable")
        col = {name: values[order] for name, values in col.items()}
    if (col["outcome"] < 0).any():
        raise ValueError("a vote in the log has an unknown choice")
    n = len(ids)
    style = {side: np.empty((n, 4)) for side in "ab"}
    for side in "ab":
        for i in range(4):
            style[side][:, i] = col.pop(f"{side}{i}")

    def decoded(name: str) -> np.ndarray:
        known = np.empty(len(codes[name]), dtype=object)
        known[:] = [text.decode() for text in codes[name]]
        return known[col.pop(name)]

    return arrays_from_columns(
        model_a=col.pop("a").astype(np.int64),
        model_b=col.pop("b").astype(np.int64),
        model_names=names,
        outcome=col.pop("outcome").astype(np.int64),
        style_a=style["a"],
        style_b=style["b"],
        category=decoded("category"),
        language=decoded("language"),
        probabilities=col.pop("p").astype(np.float64),
    )
