"""Reading tags: the newest labeller version's tag set per vote."""

from __future__ import annotations

from collections.abc import Iterable

from arena.tagging.models import VoteTags

# The known tags in the order boards show them. A curated prompt's category is a tag of its
# own too (its category string), so a vote's set may hold names not listed here.
TAGS = (
    "code",
    "math",
    "creative_writing",
    "instruction_following",
    "hard",
    "long_query",
    "multi_turn",
    "vision",
)

_CHUNK = 5000


def vote_tags(*, vote_ids: Iterable[int] | None = None) -> dict[int, frozenset[str]]:
    """vote id -> its tags from its newest version (the latest row within that version);
    a vote with no tag row yet is absent. ``None`` reads every vote's."""
    if vote_ids is None:
        return _newest(VoteTags.objects.all())
    ids = list(vote_ids)
    out: dict[int, frozenset[str]] = {}
    # Chunked: a board over every vote would otherwise send one huge IN list.
    for start in range(0, len(ids), _CHUNK):
        out.update(_newest(VoteTags.objects.filter(vote_id__in=ids[start : start + _CHUNK])))
    return out


def _newest(rows) -> dict[int, frozenset[str]]:
    # Ascending by (version, id): a later row overwrites an earlier one per vote, which reads
    # no more than the rows once and needs no DISTINCT ON (SQLite has none).
    out: dict[int, frozenset[str]] = {}
    for vote_id, tags in (
        rows.order_by("version", "id").values_list("vote_id", "tags").iterator(chunk_size=_CHUNK)
    ):
        out[vote_id] = frozenset(tags)
    return out
