"""Snapshots from the real vote log, the public page and its downloads, the offline tool."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from arena.catalog.models import ModelEntry
from ranking import services
from ranking.models import LeaderboardRow, LeaderboardSnapshot
from tests.helpers import make_user


def rows(snapshot, view="raw", breakdown="all"):
    return {r.model_name: r for r in snapshot.rows.filter(view=view, breakdown=breakdown)}


def test_snapshot_ranks_models_with_intervals_and_rank_ranges(voted):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=200, min_votes=300)
    board = rows(snapshot)
    assert set(board) == set(voted)  # the model with no votes is not invented a score
    alpha, delta = board["Alpha"], board["Delta"]
    assert alpha.section == "ranked" and alpha.rank_best == 1
    assert alpha.lower < alpha.score < alpha.upper
    assert delta.score < alpha.score and delta.rank_worst == 4
    assert snapshot.votes_used == 1600 and snapshot.includes_simulated
    assert snapshot.method == "bootstrap" and snapshot.settings["rounds"] == 200
    assert sum(r.both_bad for r in board.values()) > 0
    assert 0 < alpha.both_bad_rate < 0.2
    assert {"raw", "style"} == set(snapshot.rows.values_list("view", flat=True))
    breakdowns = set(snapshot.rows.values_list("breakdown", flat=True))
    assert {"all", "category:general", "language:en", "language:es"} <= breakdowns
    assert snapshot.style_coefs["all"]


def test_real_leaderboards_leave_simulated_votes_out_and_say_so(voted):
    snapshot = services.leaderboard_recompute(rounds=50)
    assert snapshot.votes_used == 0 and snapshot.votes_excluded == {"simulated": 1600}
    assert not snapshot.includes_simulated


def test_models_below_the_vote_minimum_are_listed_apart(voted):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=50, min_votes=900)
    sections = {r.model_name: r.section for r in rows(snapshot).values()}
    assert set(sections.values()) == {"provisional"}  # 1600 votes / 4 models: ~800 each
    assert all(r.rank_best is None for r in rows(snapshot).values())


def test_retired_models_stay_visible_in_their_own_list(voted):
    ModelEntry.objects.filter(public_name="Delta").update(active=False)
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=50)
    assert rows(snapshot)["Delta"].section == LeaderboardRow.Section.RETIRED


def test_same_votes_and_settings_give_the_same_numbers(voted):
    one = services.leaderboard_recompute(include_simulated=True, rounds=100)
    two = services.leaderboard_recompute(include_simulated=True, rounds=100, cutoff=one.cutoff)
    assert one.content_hash == two.content_hash


def test_a_failed_recompute_leaves_the_previous_snapshot_published(voted, client):
    good = services.leaderboard_recompute(include_simulated=True, rounds=50)
    with pytest.raises(ValueError):
        services.leaderboard_recompute(include_simulated=True, method="no-such-method")
    assert LeaderboardSnapshot.objects.count() == 1
    assert client.get("/leaderboard.json").json()["snapshot"]["id"] == good.pk


def test_public_page_json_and_csv_come_from_the_stored_snapshot(
    voted, client, django_assert_max_num_queries
):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=100)
    with django_assert_max_num_queries(8):  # reads rows; never refits per request
        page = client.get("/leaderboard/")
    html = page.content.decode()
    assert page.status_code == 200 and "Alpha" in html and "<svg" in html
    assert f"snapshot #{snapshot.pk}" in html and "Simulated votes" in html
    assert "<script" not in html.split("<main>")[1]  # readable without JavaScript
    style = client.get("/leaderboard/?view=style").content.decode()
    assert "What raters reward" in style and "length" in style
    assert client.get("/leaderboard/?breakdown=language:es").status_code == 200
    missing = client.get("/leaderboard/?breakdown=category:nope")
    assert missing.status_code == 404 and "No such breakdown" in missing.content.decode()
    assert "<nav" in missing.content.decode()  # the site's own page, not a bare error
    # Raw and style-controlled side by side, with the places each model moves.
    assert "Style-controlled score (rank)" in html and "Raw score (rank)" in style
    assert "%</td>" in html  # rates as percentages

    data = client.get("/leaderboard.json").json()
    assert data["schema"] == "arena.leaderboard/1"
    assert data["snapshot"]["content_hash"] == snapshot.content_hash
    raw_all = next(b for b in data["boards"] if b["view"] == "raw" and b["breakdown"] == "all")
    alpha = next(r for r in raw_all["rows"] if r["model"] == "Alpha")
    assert alpha["rank_best"] == 1 and alpha["lower"] < alpha["score"] < alpha["upper"]
    csv_text = client.get(f"/leaderboard/{snapshot.pk}.csv").content.decode()
    assert csv_text.splitlines()[0].startswith('"snapshot","view","breakdown","model_name"')
    assert len(csv_text.splitlines()) == snapshot.rows.count() + 1


def test_leaderboard_json_without_any_snapshot_is_404(client, db):
    assert client.get("/leaderboard.json").status_code == 404
    assert client.get("/leaderboard/").status_code == 200  # raw counts, labelled as such


def test_recompute_from_the_exported_log_gives_the_same_numbers(voted, tmp_path):
    snapshot = services.leaderboard_recompute(include_simulated=True, rounds=200, seed=5)
    log = tmp_path / "votes.jsonl"
    with log.open("w") as out:
        call_command("export_votes", format="jsonl", stdout=out)
    result = tmp_path / "rank.json"
    call_command(
        "rank",
        str(log),
        format="jsonl",
        bootstrap=200,
        seed=5,
        include_simulated=True,
        json=result,
        stdout=open(tmp_path / "out.txt", "w"),
    )
    ranked = json.loads(result.read_text())
    assert ranked["schema"] == "arena.rank/1" and ranked["input"]["read"] == 1600
    offline = {r["model"]: r for r in ranked["boards"][0]["rows"]}
    for name, row in rows(snapshot).items():
        assert offline[name]["score"] == pytest.approx(row.score, abs=1e-6)
        assert offline[name]["lower"] == pytest.approx(row.lower, abs=1e-6)
        assert offline[name]["upper"] == pytest.approx(row.upper, abs=1e-6)


def test_rank_reads_a_public_arena_log_and_reports_unreadable_rows(tmp_path):
    rows_in = [
        {"model_a": "x", "model_b": "y", "winner": "model_a"},
        {"model_a": "y", "model_b": "z", "winner": "tie (bothbad)"},
        {
            "model_a": "x",
            "model_b": "z",
            "winner": "model_b",
            "conv_metadata": {"sum_assistant_a_tokens": 10, "sum_assistant_b_tokens": 30},
        },
        {"model_a": "x", "model_b": "x", "winner": "tie"},
        {"model_a": "x", "model_b": "y", "winner": "nobody"},
        "not an object",
    ]
    log = tmp_path / "public.json"
    log.write_text(json.dumps(rows_in))
    result = tmp_path / "out.json"
    errors = tmp_path / "err.txt"
    with errors.open("w") as err:
        call_command(
            "rank",
            str(log),
            ci="sandwich",
            min_votes=1,
            json=result,
            stdout=open(tmp_path / "o.txt", "w"),
            stderr=err,
        )
    data = json.loads(result.read_text())
    assert data["input"]["read"] == 3
    assert [r["line"] for r in data["input"]["rejected"]] == [4, 5, 6]
    assert "nobody" in errors.read_text()


def test_the_nightly_recompute_is_scheduled_in_code(settings):
    from celery.schedules import crontab

    entry = settings.CELERY_BEAT_SCHEDULE["recompute-leaderboard-nightly"]
    assert entry["task"] == "ranking.tasks.recompute_leaderboard"
    assert isinstance(entry["schedule"], crontab)


def test_the_recompute_task_and_command_store_snapshots(voted):
    from ranking.tasks import recompute_leaderboard

    recompute_leaderboard.run()
    call_command(
        "recompute_leaderboard", include_simulated=True, rounds=20, stdout=open("/dev/null", "w")
    )
    assert LeaderboardSnapshot.objects.count() == 2


def test_admins_can_recompute_from_the_admin(voted, client):
    client.force_login(make_user("root@example.com", is_staff=True, is_superuser=True))
    response = client.post("/admin/ranking/leaderboardsnapshot/recompute/", follow=True)
    assert response.status_code == 200
    assert LeaderboardSnapshot.objects.count() == 1


def test_battles_record_the_probability_of_their_pair(voted):
    from arena.battles.services import battle_start

    services.leaderboard_recompute(include_simulated=True, rounds=50)
    battle = battle_start(rater=make_user("p@example.com"), text="Which pair?")
    assert 0 < battle.sampling_probability <= 1
    assert battle.created_at <= timezone.now()


def test_a_plain_recompute_keeps_counting_simulated_votes_a_board_already_counted(voted):
    empty = services.leaderboard_recompute(rounds=50)
    assert empty.votes_used == 0  # nothing but simulated votes, and none asked for
    demo = services.leaderboard_recompute(include_simulated=True, rounds=50)
    again = services.leaderboard_recompute(rounds=50)  # as `recompute_leaderboard` does
    assert again.votes_used == demo.votes_used == 1600
    assert again.settings["include_simulated"] is True


def test_rank_leaves_out_named_and_duplicate_battles_as_the_public_pipeline_does(tmp_path):
    # y wins every anonymous battle; x "wins" only those the filters should drop.
    rows_in = [{"model_a": "x", "model_b": "y", "winner": "model_b", "anony": True}] * 3 + [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "anony": False},
        {"model_a": "x", "model_b": "y", "winner": "model_a", "anony": False},
        {"model_a": "x", "model_b": "y", "winner": "model_a", "dedup_tag": {"sampled": False}},
        {"model_a": "x", "model_b": "y", "winner": "model_b", "dedup_tag": {"sampled": True}},
    ]
    log = tmp_path / "public.json"
    log.write_text(json.dumps(rows_in))

    errors = io.StringIO()

    def rank(**flags) -> dict:
        out = tmp_path / "out.json"
        call_command("rank", str(log), ci="sandwich", min_votes=1, json=out,
                     stdout=io.StringIO(), stderr=errors, **flags)  # fmt: skip
        return json.loads(out.read_text())["input"]

    default = rank()
    assert default["read"] == 4
    assert default["rejected_by_reason"] == {
        "not anonymous (anony: false)": 2,
        "a duplicate (dedup_tag.sampled: false)": 1,
    }
    assert "skipped 2: not anonymous" in errors.getvalue()
    assert rank(keep_named=True)["read"] == 6
    assert rank(keep_named=True, keep_duplicates=True)["read"] == 7
