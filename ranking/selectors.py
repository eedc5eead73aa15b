"""Reads for ranking: the counted vote log as arrays."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.models import Max, Min, Q, QuerySet
from django.db.models.expressions import RawSQL

from arena.catalog.models import ModelEntry
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import counted_votes, vote_flagged
from arena.records.models import Vote
from arena.tagging.selectors import vote_tags
from ranking.battle_log import (
    OUTCOME,
    STYLE_KEYS,
    Record,
    arrays_from_columns,
    arrays_from_records,
)
from ranking.compute import VoteArrays
from ranking.tag_sets import NO_TAGS, tag_codes, used_sets


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
    # Per model: its answers in these votes and how many were cut at the length limit.
    answers: dict[str, dict[str, int]]

    def untagged(self) -> int:
        """How many of these votes have no tags yet (`manage.py tag_prompts` tags them)."""
        return int((self.arrays.tags == NO_TAGS).sum()) if self.arrays.tags is not None else 0


def votes_excluded(*, votes: QuerySet[Vote], include_simulated: bool) -> dict[str, int]:
    """Of ``votes``, those that do not count, per reason (the first in ``exclusion_rules``
    that applies), zero counts omitted."""
    out: dict[str, int] = {}
    earlier = Q(pk__in=[])
    for reason, rule in exclusion_rules(include_simulated=include_simulated):
        n = votes.filter(rule).exclude(earlier).count()
        if n:
            out[reason] = n
        earlier |= rule
    return out


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
    excluded = votes_excluded(
        votes=Vote.objects.filter(created_at__lte=cutoff), include_simulated=include_simulated
    )
    entries = {m.public_name: m for m in ModelEntry.objects.all()}
    names = {m.pk: name for name, m in entries.items()}
    counted = (
        counted_votes(include_simulated=include_simulated)
        .filter(created_at__lte=cutoff)
        .order_by("pk")
    )
    connection = connections[counted.db]
    if connection.vendor == "postgresql":
        with ThreadPoolExecutor(1) as pool:
            # Decoding the tags is Python's work, the COPY mostly the server's: read side by
            # side, the tags over a connection of their own (so never inside a transaction,
            # where another connection would not see its rows).
            tags = None if connection.in_atomic_block else pool.submit(_every_tag, counted.db)
            arrays, answers = arrays_by_copy(counted, names=names, tags=tags)
    else:
        arrays, answers = arrays_by_rows(counted, names=names)
    return LoadedVotes(arrays, excluded, entries, answers)


def _answers(
    a: np.ndarray, b: np.ndarray, cut_a: np.ndarray, cut_b: np.ndarray, names: dict[int, str]
) -> dict[str, dict[str, int]]:
    """Per model (public name): its answers among these votes (keys ``a``/``b``) and how many
    were cut at the length limit (finish reason "length", flagged in ``cut_a``/``cut_b``)."""
    keys = np.unique(np.concatenate([a, b]))
    answers = np.zeros(keys.size, np.int64)
    truncated = np.zeros(keys.size, np.int64)
    for side, cut in ((a, cut_a), (b, cut_b)):
        at = np.searchsorted(keys, side)
        answers += np.bincount(at, minlength=keys.size)
        truncated += np.bincount(at, weights=cut, minlength=keys.size).astype(np.int64)
    return {
        names[k]: {"answers": int(n), "truncated": int(t)}
        for k, n, t in zip(keys.tolist(), answers.tolist(), truncated.tolist(), strict=True)
    }


# A vote's columns every read of the log takes, before its style numbers.
VOTE_FIELDS = (
    "model_a_id",
    "model_b_id",
    "choice",
    "prompt_category",
    "prompt_language",
    "sampling_probability",
)


def arrays_by_rows(
    votes: QuerySet, *, names: dict[int, str]
) -> tuple[VoteArrays, dict[str, dict[str, int]]]:
    """The portable read: one row a vote, the style numbers picked out of side_a/side_b. With
    the arrays, each model's answers and truncated answers (``_answers``)."""
    fields = [
        *VOTE_FIELDS,
        *(f"side_a__{k}" for k in STYLE_KEYS),
        *(f"side_b__{k}" for k in STYLE_KEYS),
        "side_a__finish_reason",
        "side_b__finish_reason",
        "id",
    ]
    keys: list[tuple[int, int, bool, bool, int]] = []

    def records():
        for r in votes.values_list(*fields).iterator(chunk_size=20_000):
            keys.append((r[0], r[1], r[14] == "length", r[15] == "length", r[16]))
            yield Record(names[r[0]], names[r[1]], r[2], _style(r[6:10]), _style(r[10:14]), *r[3:6])

    arrays = arrays_from_records(records())
    a, b, cut_a, cut_b, ids = np.array(keys, dtype=np.int64).reshape(-1, 5).T
    _tag(arrays, ids)
    return arrays, _answers(a, b, cut_a, cut_b, names)


# Up to this many votes, their tags are read by id; beyond, every vote's at once (one pass
# over the tags rather than an IN list per few thousand votes).
_TAGS_BY_ID = 50_000


def _every_tag(db: str) -> dict[int, frozenset[str]]:
    """Every vote's tags, read in a thread of its own (and its own connection)."""
    try:
        return vote_tags()
    finally:
        connections[db].close()


def _tag(
    arrays: VoteArrays, ids: np.ndarray, found: dict[int, frozenset[str]] | None = None
) -> None:
    """Give ``arrays`` (the votes ``ids``, in order) each vote's newest tag set
    (``tagging.selectors.vote_tags``, or ``found``, read already); a vote with none yet has
    `tag_sets.NO_TAGS`."""
    ids = np.asarray(ids, dtype=np.int64)
    if found is None:
        found = vote_tags(vote_ids=ids.tolist() if len(ids) <= _TAGS_BY_ID else None)
    codes = np.full(len(ids), NO_TAGS, dtype=np.int32)
    if found:
        tagged = np.fromiter(found, np.int64, len(found))
        known, sets = tag_codes(found.values(), len(found))
        order = np.argsort(tagged)
        tagged, known = tagged[order], known[order]
        at = np.minimum(np.searchsorted(tagged, ids), len(tagged) - 1)
        hit = tagged[at] == ids
        codes[hit] = known[at[hit]]
    else:
        sets = []
    arrays.tags, arrays.tag_sets = used_sets(codes, sets)


def _style(values: tuple) -> tuple[float, float, float, float]:
    return tuple(float(v) if isinstance(v, int | float) else 0.0 for v in values)  # type: ignore[return-value]


# PostgreSQL: the same arrays without a Python object per vote. The server reduces each vote to
# fixed-width numbers (the style values read exactly as `_style` reads them, texts as codes into
# their distinct values) and streams them with COPY in binary, which numpy reads as it comes.


def _number_sql(column: str, key: str) -> str:
    """A JSON value as `_style` takes it: a number as itself, true/false as 1/0 (Python's bool is
    an int), anything else, JSON null or no such key as 0."""
    # `->` a key at a time: a third cheaper than `#>` with a path array, which PostgreSQL
    # takes apart for every value of every row.
    value = "(" + column + "".join(f" -> '{part}'" for part in key.split("__")) + ")"
    return (
        f"CASE jsonb_typeof({value}) WHEN 'number' THEN ({value})::float8 "
        f"WHEN 'boolean' THEN ({value})::boolean::int::float8 ELSE 0::float8 END"
    )


def _copy_columns(table: str) -> list[tuple[str, str, str]]:
    """(name, SQL of one vote's value, its binary type) per column; none is ever NULL."""

    def col(name: str) -> str:
        return f'{table}."{name}"'

    def code(name: str) -> str:
        # Code i is the i-th value of the list passed as the parameter (`_copy_params`); the
        # first is "" (a NULL reads as "" too); -1 a value not listed (a vote committed since
        # the values were read).
        found = f"array_position(%s::text[], {col(name)})"
        return f"(COALESCE({found}, CASE WHEN {col(name)} IS NULL THEN 1 ELSE 0 END) - 1)::int4"

    outcome = " ".join(f"WHEN '{choice}' THEN {code_}" for choice, code_ in OUTCOME.items())
    return [
        ("id", col("id"), ">i8"),
        ("a", col("model_a_id"), ">i8"),
        ("b", col("model_b_id"), ">i8"),
        ("outcome", f"(CASE {col('choice')} {outcome} ELSE -1 END)::int2", ">i2"),
        # As `arrays_from_records`: no probability, or zero, is NaN.
        ("p", f"COALESCE(NULLIF({col('sampling_probability')}, 0), 'NaN')::float8", ">f8"),
        *(
            (f"{side}{i}", _number_sql(col(f"side_{side}"), key), ">f8")
            for side in "ab"
            for i, key in enumerate(STYLE_KEYS)
        ),
        *(
            (
                f"cut_{side}",
                f"COALESCE(({col(f'side_{side}')} ->> 'finish_reason') = 'length', false)"
                "::int::int2",
                ">i2",
            )
            for side in "ab"
        ),
        ("category", code("prompt_category"), ">i4"),
        ("language", code("prompt_language"), ">i4"),
    ]


def _labels(votes: QuerySet) -> dict[str, list[str]]:
    """Per text column, "" and then every distinct value in the log (a superset of the counted
    votes' values: one cheap pass over the log for both columns, no exclusion rules)."""
    found = (
        Vote.objects.using(votes.db)
        .order_by()
        .values_list("prompt_category", "prompt_language")
        .distinct()
    )
    pairs = list(found)
    return {
        name: ["", *sorted({pair[i] for pair in pairs if pair[i]})]
        for i, name in enumerate(("category", "language"))
    }


def _copy_rows(
    votes: QuerySet, columns: list[tuple[str, str, str]], row: np.dtype, labels: dict
) -> np.ndarray:
    """The votes' rows of ``columns``, in primary-key order, as a record array of ``row``;
    texts coded by ``labels``."""
    connection = connections[votes.db]
    params = {name: (labels[name],) for name in labels}
    inner = votes.order_by("pk").values_list(
        *(RawSQL(sql, params.get(name, ())) for name, sql, _ in columns)
    )
    try:
        sql, params = inner.query.sql_with_params()
    except EmptyResultSet:
        return np.zeros(0, dtype=row)
    connection.ensure_connection()
    with transaction.atomic(using=votes.db), connection.cursor() as cursor:
        # The planner's estimates for the exclusion subqueries are far off, so it would
        # JIT-compile the query: seconds, more than the whole read takes.
        cursor.execute("SET LOCAL jit = off")
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT binary)", params) as copy:
            data = b"".join([bytes(chunk) for chunk in copy])
    header, trailer = 19, 2  # signature, flags, extension length; the -1 field count at the end
    body = len(data) - header - trailer
    if body % row.itemsize:
        raise RuntimeError("the vote log's COPY stream has rows of an unexpected width")
    return np.frombuffer(data, dtype=row, count=body // row.itemsize, offset=header)


def _copy_values(
    votes: QuerySet, columns: list[tuple[str, str, str]], row: np.dtype, labels: dict
) -> dict[str, np.ndarray]:
    """`_copy_rows`, checked and taken apart into one native array per column (where the
    rows are read, so that each connection's thread does its own part)."""
    rows = _copy_rows(votes, columns, row, labels)
    # Every row's field count and field lengths, checked in one pass over the rows' bytes
    # rather than one strided pass per field.
    template = np.zeros(1, dtype=row)
    template["fields"] = len(columns)
    for name, _, kind in columns:
        template[f"{name}_len"] = np.dtype(kind).itemsize
    offsets = [row.fields["fields"][1] + i for i in range(2)]
    for name, _, _ in columns:
        offsets += [row.fields[f"{name}_len"][1] + i for i in range(4)]
    raw = rows.view(np.uint8).reshape(len(rows), row.itemsize)
    if not (raw[:, offsets] == template.view(np.uint8)[offsets]).all():
        raise RuntimeError("the vote log's COPY stream has a field of an unexpected width")
    return {name: rows[name].astype(np.dtype(kind).newbyteorder("=")) for name, _, kind in columns}


_COPY_STREAMS = 2  # connections reading at once, outside a transaction
_STREAM_MIN_VOTES = 100_000  # below this one connection is as fast


def arrays_by_copy(
    votes: QuerySet,
    *,
    names: dict[int, str],
    streams: int | None = None,
    tags: Future | None = None,
    _retry: bool = True,
) -> tuple[VoteArrays, dict[str, dict[str, int]]]:
    """What `arrays_by_rows` gives, the votes in primary-key order, streamed with
    ``COPY (SELECT …) TO STDOUT (FORMAT binary)``: every row has the same fields of the same
    widths, so the stream is one numpy record array. PostgreSQL only. Outside a transaction the
    votes are read in ``streams`` (default ``_COPY_STREAMS``) ranges of primary keys at once,
    over as many connections. ``tags``: every vote's tags being read (``_every_tag``)."""
    connection = connections[votes.db]
    table = connection.ops.quote_name(Vote._meta.db_table)
    labels = _labels(votes)
    columns = _copy_columns(table)
    # Each row: its field count, then each field's length and value (big-endian).
    row = np.dtype(
        [("fields", ">i2")]
        + [f for name, _, kind in columns for f in ((f"{name}_len", ">i4"), (name, kind))]
    )
    parts = [votes]
    auto = streams is None
    if auto:
        # Another connection sees only committed votes: never inside a transaction.
        streams = 1 if connection.in_atomic_block else _COPY_STREAMS
    if streams > 1:
        ends = votes.order_by().aggregate(lo=Min("pk"), hi=Max("pk"))
        many = ends["lo"] is not None and ends["hi"] - ends["lo"] >= _STREAM_MIN_VOTES
        if ends["lo"] is not None and (many or not auto):
            cuts = np.linspace(ends["lo"] - 1, ends["hi"], streams + 1).astype(np.int64).tolist()
            parts = [votes.filter(pk__gt=lo, pk__lte=hi) for lo, hi in pairwise(cuts)]
    if len(parts) == 1:
        rows = _copy_values(votes, columns, row, labels)
    else:
        # The server's work (JSON picked apart, rows encoded) is most of the read's time:
        # one connection per part puts it on as many cores.
        def part_values(part: QuerySet) -> dict[str, np.ndarray]:
            try:
                return _copy_values(part, columns, row, labels)
            finally:
                connections[votes.db].close()  # this thread's own connection

        with ThreadPoolExecutor(len(parts)) as pool:
            read = list(pool.map(part_values, parts))
        rows = {name: np.concatenate([got[name] for got in read]) for name, _, _ in columns}
    if (rows["outcome"] < 0).any():
        raise ValueError("a vote in the log has an unknown choice")
    if (rows["category"] < 0).any() or (rows["language"] < 0).any():
        if _retry:
            return arrays_by_copy(votes, names=names, streams=streams, tags=tags, _retry=False)
        raise RuntimeError("the vote log's categories or languages changed during the read")
    style = {side: np.column_stack([rows[f"{side}{i}"] for i in range(4)]) for side in "ab"}
    codes = {}
    for name in ("category", "language"):  # only the values counted votes have
        used = np.bincount(rows[name], minlength=len(labels[name])) > 0
        used[0] = True
        renumber = np.cumsum(used) - 1
        codes[name] = renumber[rows[name]].astype(np.int32)
        labels[name] = [v for v, keep in zip(labels[name], used, strict=True) if keep]
    a, b = rows["a"], rows["b"]  # 8-byte integers in the stream: int64 already
    arrays = arrays_from_columns(
        model_a=a,
        model_b=b,
        model_names=names,
        outcome=rows["outcome"].astype(np.int64),
        style_a=style["a"],
        style_b=style["b"],
        category=codes["category"],
        language=codes["language"],
        probabilities=rows["p"],
        labels=labels,
    )
    _tag(arrays, rows["id"], None if tags is None else tags.result())
    cuts = (rows[f"cut_{side}"].astype(np.int64) for side in "ab")
    return arrays, _answers(a, b, *cuts, names)


@dataclass(frozen=True)
class ModelCounts:
    name: str
    organisation: str
    active: bool
    battles: int
    wins: int
    ties: int
    losses: int
    both_bad: int


def model_vote_counts() -> list[ModelCounts]:
    """Raw per-model outcome counts from the vote log: what happened, not a ranking."""
    rows = []
    for model in ModelEntry.objects.all():
        as_a = Q(model_a=model)
        as_b = Q(model_b=model)
        votes = Vote.objects.filter(as_a | as_b)
        a_won, b_won = Q(choice=Vote.Choice.A), Q(choice=Vote.Choice.B)
        wins = votes.filter((as_a & a_won) | (as_b & b_won)).count()
        losses = votes.filter((as_a & b_won) | (as_b & a_won)).count()
        rows.append(
            ModelCounts(
                name=model.public_name,
                organisation=model.organisation,
                active=model.active,
                battles=votes.count(),
                wins=wins,
                ties=votes.filter(choice=Vote.Choice.TIE).count(),
                losses=losses,
                both_bad=votes.filter(choice=Vote.Choice.BOTH_BAD).count(),
            )
        )
    rows.sort(key=lambda r: (-r.battles, r.name))
    return rows
