"""Reading the vote log for ranking: on PostgreSQL the votes come over a column at a time, and
that must give exactly the arrays of the portable row-by-row read, odd JSON included."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from arena.battles.simulation import votes_simulate
from arena.catalog.models import ModelEntry
from arena.records.models import Battle, Vote
from arena.tagging.models import VoteTags
from ranking import selectors
from tests.helpers import make_model

STRENGTHS = {"Alpha": 0.5, "Beta": 0.0, "Gamma": -0.5}

# Whatever a side's JSON holds, the style value is a number as itself, true/false as 1/0 and
# anything else (or nothing) as 0.
ODD_SIDES = [
    {"output_tokens": 12.5, "style": {"headers": True, "list_items": False, "bold": "3"}},
    {"output_tokens": None, "style": None},
    {"style": {"headers": {"h1": 2}, "list_items": [1, 2], "bold": 1e-3}},
    {},
    {"output_tokens": 2**53 + 1, "style": "plain"},
    {
        "output_tokens": -4,
        "style": {"headers": 0.1, "list_items": 2, "bold": None},
        "finish_reason": "length",
    },
    {"output_tokens": "40", "style": {"headers": 1.5e300, "list_items": 3, "bold": 0}},
    {"finish_reason": ["length"]},
]
ODD_TEXTS = [("", ""), ("chat ☕", "fr"), ("50% 'harder'", "en"), ("a\ttab", "x\ny")]


@pytest.fixture
def log(db):
    from arena.battles.prompts import prompt_create

    for name in STRENGTHS:
        make_model(name, name.lower())
    make_model("Unused", "unused")
    prompt_create(text="Anything?", category="general", language="en")
    prompt_create(text="¿Algo?", category="general", language="es")
    votes_simulate(n=60, strengths=STRENGTHS, once=False)
    template = Vote.objects.order_by("pk").first()
    models = list(ModelEntry.objects.filter(public_name__in=STRENGTHS).order_by("pk"))
    for i, side in enumerate(ODD_SIDES):
        model_a, model_b = models[i % 3], models[(i + 1) % 3]
        battle = Battle.objects.create(
            rater=template.rater,
            prompt=template.prompt,
            model_a=model_a,
            model_b=model_b,
            params={},
            status=Battle.Status.VOTED,
        )
        category, language = ODD_TEXTS[i % len(ODD_TEXTS)]
        Vote.objects.create(
            **Vote.fields_for(
                battle=battle,
                prompt=template.prompt,
                choice=["a", "b", "tie", "both_bad"][i % 4],
                decision_ms=1000,
                turns=1,
                side_a=side,
                side_b=ODD_SIDES[-1 - i],
                prompt_category=category,
                prompt_language=language,
                sampling_probability=[None, 0.0, 0.25, 1e-9][i % 4],
                simulated=i % 2 == 0,
            )
        )
    # Tags on some votes: two versions on one, an empty set on another, none on the rest.
    votes = list(Vote.objects.order_by("pk"))
    for vote, tags, version in [
        (votes[0], ["code"], 1),
        (votes[0], ["code", "hard"], 2),
        (votes[1], [], 1),
        (votes[-1], ["math"], 1),
        (votes[-2], ["math"], 1),
    ]:
        VoteTags.objects.create(
            vote=vote, prompt_hash=vote.prompt_hash, tags=tags, labeller="rules", version=version
        )


def tag_sets(arrays) -> list[frozenset[str] | None]:
    return [arrays.tag_sets[c] if c >= 0 else None for c in arrays.tags.tolist()]


def assert_same(one, two) -> None:
    assert one.model_names == two.model_names
    for name in ("a", "b", "outcome", "style_a", "style_b"):
        x, y = getattr(one, name), getattr(two, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name
    for name in ("category", "language"):  # codes or texts: the same text for every vote
        (cx, lx), (cy, ly) = one.coded(name), two.coded(name)
        assert [lx[i] for i in cx] == [ly[i] for i in cy], name
        assert sorted(filter(None, lx)) == sorted(filter(None, ly)), name  # no unused values
    assert tag_sets(one) == tag_sets(two)
    assert one.style_a.flags.c_contiguous and one.style_b.flags.c_contiguous
    if two.weights is None:
        assert one.weights is None
    else:
        assert np.array_equal(one.weights, two.weights)


def both_reads(votes):
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    (fast, fast_answers), (portable, portable_answers) = (
        selectors.arrays_by_copy(votes, names=names),
        selectors.arrays_by_rows(votes, names=names),
    )
    assert fast_answers == portable_answers
    return fast, portable


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("the column-wise read is PostgreSQL's")


def test_the_column_wise_read_gives_the_row_by_row_arrays(log, postgresql):
    fast, portable = both_reads(Vote.objects.order_by("pk"))
    assert len(fast.a) == 60 + len(ODD_SIDES)
    assert_same(fast, portable)
    tags = tag_sets(portable)
    assert tags[:3] == [frozenset({"code", "hard"}), frozenset(), None]  # the newest version
    assert tags[-2:] == [frozenset({"math"})] * 2
    odd = portable.style_a[-len(ODD_SIDES) :]
    assert odd[0].tolist() == [12.5, 1.0, 0.0, 0.0]
    assert odd[4][0] == float(2**53 + 1) and odd[6].tolist() == [0.0, 1.5e300, 3.0, 0.0]


def test_the_column_wise_read_of_no_votes(log, postgresql):
    assert_same(*both_reads(Vote.objects.none()))


def test_vote_arrays_counts_and_reads_the_same_votes_either_way(log, postgresql, monkeypatch):
    cutoff = timezone.now()
    for include_simulated in (True, False):
        fast = selectors.vote_arrays(cutoff=cutoff, include_simulated=include_simulated)
        with monkeypatch.context() as patch:
            patch.setattr(
                selectors,
                "arrays_by_copy",
                lambda votes, names, tags=None: selectors.arrays_by_rows(votes, names=names),
            )
            portable = selectors.vote_arrays(cutoff=cutoff, include_simulated=include_simulated)
        assert fast.excluded == portable.excluded
        assert len(fast.arrays.a) == (
            60 + len(ODD_SIDES) if include_simulated else len(ODD_SIDES) // 2
        )
        assert_same(fast.arrays, portable.arrays)


@pytest.mark.django_db(transaction=True)
def test_the_column_wise_read_over_several_connections_gives_the_same_arrays(log, postgresql):
    names = dict(ModelEntry.objects.values_list("pk", "public_name"))
    votes = Vote.objects.order_by("pk")
    one = selectors.arrays_by_copy(votes, names=names, streams=1)
    for streams in (2, 3):
        many = selectors.arrays_by_copy(votes, names=names, streams=streams)
        assert_same(many[0], one[0])
        assert many[1] == one[1]


def test_a_large_read_takes_every_votes_tags_at_once_and_keeps_its_own(
    log, postgresql, monkeypatch
):
    first = list(Vote.objects.order_by("pk").values_list("pk", flat=True)[:3])
    votes = Vote.objects.filter(pk__in=first).order_by("pk")
    by_id = both_reads(votes)
    monkeypatch.setattr(selectors, "_TAGS_BY_ID", 0)  # every vote's tags, not an IN list
    at_once = both_reads(votes)
    for arrays in (*by_id, *at_once):
        assert tag_sets(arrays) == [frozenset({"code", "hard"}), frozenset(), None]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_tags_are_read_beside_the_votes(log, postgresql, monkeypatch):
    beside = []
    every_tag = selectors._every_tag
    monkeypatch.setattr(selectors, "_every_tag", lambda db: beside.append(db) or every_tag(db))
    loaded = selectors.vote_arrays(cutoff=timezone.now(), include_simulated=True)
    assert beside == ["default"]
    tags = tag_sets(loaded.arrays)
    assert tags[:3] == [frozenset({"code", "hard"}), frozenset(), None]
    assert tags[-2:] == [frozenset({"math"})] * 2 and loaded.untagged() == len(tags) - 4
