"""A battle start: what it costs the database, and what its per-process cache may never get
wrong (a retired model drawn, a new model or snapshot missed, a name left unredacted)."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from arena.battles.consumers import _battle_begin
from arena.battles.prompts import prompt_create
from arena.battles.services import battle_begin, battle_pick_models, battle_start
from arena.catalog.models import ModelEntry
from arena.catalog.services import models_set_active
from arena.core.errors import ServiceError
from arena.core.statements import ONE_STATEMENT
from arena.records.models import Answer, Battle
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from tests.helpers import make_model, make_user, run_together

# A start whose prompt exists already (a drawn prompt, or one typed before): the transaction's
# savepoint and its release (BEGIN and COMMIT outside a test); the rater's row locked, with
# every check; two reads (the cache's stamps and any battle to abandon; the prompt); one
# write on PostgreSQL (the battle, the prompt's use count, the turn and both answers, in one
# statement: arena.battles.start_writes). Before issue 28 the socket's start made 18 (11
# reads), 19 once a snapshot was published; 9 before the writes were one statement.
# Where a statement's WITH clause cannot write (SQLite, the embedded default), the ORM's four
# writes: 9, and a new prompt's insert in place of the use count's update.
ONE_WRITE = connection.vendor in ONE_STATEMENT
START_QUERIES = 6 if ONE_WRITE else 9
SELECTS = 3
# A prompt typed for the first time adds its insert (ON CONFLICT DO NOTHING, counted as it is
# written; the write then counts no use). Before, with get_or_create's savepoint, 12.
NEW_PROMPT_QUERIES = START_QUERIES + 1 if ONE_WRITE else START_QUERIES


def _selects(queries: list[dict]) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("SELECT")]


@pytest.fixture
def three_models(db) -> list[ModelEntry]:
    return [make_model(f"Model {c}", f"model-{c}") for c in "ABC"]


def _warm(three_models: list[ModelEntry]) -> None:
    """One start by someone else first: this process's cache holds the catalog and draw."""
    battle_start(rater=make_user("warm@example.com"), text="Warm up.")


def test_a_start_locks_reads_twice_and_writes_once_per_row(alice, three_models):
    _warm(three_models)
    prompt, _ = prompt_create(text="Explain DNS.")
    with CaptureQueriesContext(connection) as drawn:
        battle_begin(rater=alice, text="Explain DNS.", prompt_id=prompt.pk)
    assert len(drawn.captured_queries) <= START_QUERIES
    assert len(_selects(drawn.captured_queries)) == SELECTS
    bob = make_user("bob@example.com")
    with CaptureQueriesContext(connection) as typed:
        battle_begin(rater=bob, text="A prompt nobody typed before.")
    assert len(typed.captured_queries) <= NEW_PROMPT_QUERIES
    assert len(_selects(typed.captured_queries)) == SELECTS


def test_the_sockets_start_makes_no_read_of_its_own(
    alice, three_models, django_assert_max_num_queries
):
    """The consumer's one database call: the sides and the names to redact come with the
    start, not from reads after it."""
    _warm(three_models)
    battle_start(rater=alice, text="Explain DNS.")  # the prompt exists from here on
    bob = make_user("bob@example.com")
    with django_assert_max_num_queries(START_QUERIES):
        started = _battle_begin(rater=bob, text="Explain DNS.", prompt_id=None)
    answers = Answer.objects.filter(turn__battle=started.battle)
    assert started.turn.sides == {a.pk: a.side for a in answers}
    assert started.turn.finished == {} and started.turn.index == 0
    assert "Model A" in started.terms and "model-B" in started.terms


def test_a_start_that_abandons_another_battle_reads_it_only_then(alice, three_models):
    """Only a rater with a battle still generating pays for voiding it (its id, the void, its
    answers' streams): five statements more."""
    _warm(three_models)
    first = battle_start(rater=alice, text="Explain DNS.")
    with CaptureQueriesContext(connection) as ctx:
        battle_begin(rater=alice, text="Explain DNS.")
    first.refresh_from_db()
    assert first.status == Battle.Status.VOID
    assert len(ctx.captured_queries) <= START_QUERIES + 5


def test_a_retired_model_is_never_drawn_once_its_retirement_commits(three_models):
    _warm(three_models)
    a, b, c = three_models
    models_set_active(model_ids=[c.pk], active=False)
    rng = random.Random(5)
    drawn = {m.pk for _ in range(200) for m in battle_pick_models(rng=rng)[:2]}
    assert drawn == {a.pk, b.pk}


def test_a_retirement_committed_by_another_connection_is_seen_by_the_next_draw(
    transactional_db,
):
    """As another web process's admin would: its own connection, committed; this process's
    cache, warm, is told nothing."""
    a, b, c = (make_model(f"Model {x}", f"model-{x}") for x in "ABC")
    battle_pick_models(rng=random.Random(3))
    assert run_together(lambda: models_set_active(model_ids=[c.pk], active=False)) == ["ok"]
    rng = random.Random(4)
    drawn = {m.pk for _ in range(200) for m in battle_pick_models(rng=rng)[:2]}
    assert drawn == {a.pk, b.pk}


def test_a_change_no_code_of_ours_saw_is_seen_by_the_next_start(alice, three_models):
    """A queryset update (another process, a shell, a bench) fires no hook of this process:
    the next start reads the catalog's stamp from the database all the same."""
    _warm(three_models)
    a, b, c = three_models
    ModelEntry.objects.filter(pk=a.pk).update(active=False)
    picked = {
        m.pk
        for _ in range(30)
        for m in (lambda x: (x.model_a, x.model_b))(battle_start(rater=alice, text="Hi there."))
    }
    assert picked == {b.pk, c.pk}
    ModelEntry.objects.filter(pk=b.pk).update(supported_params=["max_tokens"])  # sits out
    with pytest.raises(ServiceError) as err:
        battle_start(rater=alice, text="Hi there.")
    assert err.value.code == "no_models"


def test_a_model_added_or_put_back_is_drawn_at_once(three_models):
    _warm(three_models)
    a, b, c = three_models
    models_set_active(model_ids=[c.pk], active=False)
    battle_pick_models(rng=random.Random(1))
    models_set_active(model_ids=[c.pk], active=True)
    d = make_model("Model D", "model-d")
    rng = random.Random(2)
    drawn = {m.pk for _ in range(300) for m in battle_pick_models(rng=rng)[:2]}
    assert drawn == {a.pk, b.pk, c.pk, d.pk}


def test_a_renamed_model_is_redacted_from_the_next_start(alice, three_models):
    _warm(three_models)
    ModelEntry.objects.filter(public_name="Model A").update(public_name="Quillfeather")
    started = battle_begin(rater=alice, text="Who are you?")
    assert "Quillfeather" in started.terms and "Model A" not in started.terms


def _snapshot(rows: dict[str, tuple[float, float, int]]) -> None:
    snapshot = LeaderboardSnapshot.objects.create(
        cutoff=timezone.now(), method="sandwich", settings={}, votes_used=0, content_hash="x"
    )
    for name, (lower, upper, votes) in rows.items():
        LeaderboardRow.objects.create(
            snapshot=snapshot,
            view="raw",
            breakdown="all",
            model_name=name,
            section=LeaderboardRow.Section.RANKED,
            score=(lower + upper) / 2,
            lower=lower,
            upper=upper,
            votes=votes,
        )


def _pair_probability(first: str, second: str) -> float:
    rng = random.Random(9)
    for _ in range(500):
        a, b, p = battle_pick_models(rng=rng)
        if {a.public_name, b.public_name} == {first, second}:
            return p
    raise AssertionError("the pair was never drawn")


def test_a_new_snapshot_weighs_the_next_draw(three_models):
    _warm(three_models)
    assert _pair_probability("Model A", "Model C") == pytest.approx(1 / 3)
    # A and B overlap; C is far from both, so A-C and B-C teach little and get the floor.
    _snapshot(
        {"Model A": (990, 1010, 5000), "Model B": (995, 1015, 5000), "Model C": (1200, 1220, 5000)}
    )
    assert _pair_probability("Model A", "Model C") < 1 / 3
    assert _pair_probability("Model A", "Model B") > 1 / 3
