"""Calibration through the real HTTP path: voted battles whose answers carry known strengths,
a judge server that reads them and (when told) picks whichever answer it saw first; its
verdicts are stored apart and measured against the human votes."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse

from arena.battles.prompts import prompt_create
from arena.battles.simulation import votes_simulate
from arena.catalog.models import ModelEntry
from arena.devtools.mock_server import MockServer
from arena.evals import battle_judging as calibration
from arena.evals.agreement import calibration_report
from arena.evals.models import BattleVerdict
from arena.records.models import Vote
from ranking.services import leaderboard_recompute
from tests.helpers import calm_vote, make_model

pytestmark = pytest.mark.usefixtures("generation")  # a Celery worker where CI runs one
STRENGTHS = {"Strong": 1.5, "Middling": 0.3, "Weak": -1.2}
INJECTED = 0.3  # the judge picks the first answer in this share of calls


@pytest.fixture
async def server():
    server = await MockServer(default={"ttft_ms": 0, "tokens_per_s": 0}).start()
    yield server
    await server.stop()


def judge_on(server, **mock) -> ModelEntry:
    server.models["judge-1"] = {"judge": True, **mock}
    return ModelEntry.objects.create(
        public_name="Pair Judge",
        vendor="judgevendor",
        model_id="judge-1",
        backend=ModelEntry.Backend.OPENAI_COMPATIBLE,
        backend_settings={"base_url": server.url},
        active=False,
    )


def voted_battles(n: int) -> None:
    """``n`` battles among three models with votes drawn from STRENGTHS, on two categories;
    "Strong" is of the judge's own family (its vendor)."""
    for name in STRENGTHS:
        vendor = "judgevendor" if name == "Strong" else f"{name.lower()}vendor"
        make_model(name, f"{name.lower()}-1", vendor=vendor)
    for i in range(6):
        prompt_create(text=f"Prompt {i}: explain it.", category=("science", "coding")[i % 2])
    votes_simulate(n=n, strengths=STRENGTHS)


async def judge_all(judge: ModelEntry, limit: int) -> int:
    ids = await database_sync_to_async(calibration.verdicts_claim)(
        judge=judge, limit=limit, include_simulated=True
    )
    return await calibration.verdicts_judge(verdict_ids=ids)


async def test_calibration_reports_the_injected_position_bias_within_its_interval(server, staff):
    await database_sync_to_async(voted_battles)(300)
    judge = await database_sync_to_async(judge_on)(server, judge_position_bias=INJECTED)
    assert await judge_all(judge, 300) == 600
    client = Client()
    await database_sync_to_async(client.force_login)(staff)
    page = await database_sync_to_async(client.get)(reverse("calibration-json"))
    report = page.json()["judges"]
    assert [j["judge"] for j in report] == ["Pair Judge"]
    overall = report[0]["overall"]
    bias = overall["position_bias"]
    assert bias["n"] == 300 and bias["lower"] <= INJECTED <= bias["upper"]
    # The judge reads the strengths the votes were drawn from: it agrees well above chance.
    assert overall["agreement"]["lower"] > 0.5 and overall["missing"] == 0
    assert set(report[0]["categories"]) == {"science", "coding"}
    assert report[0]["categories"]["science"]["battles"] > 100
    assert overall["self_family"]["n"] > 0  # battles with "Strong" in them
    assert overall["length_coefficient"]["judge"] is not None
    assert overall["length_coefficient"]["human"] is not None
    # Claimed once: judging again finds nothing to do.
    assert await judge_all(judge, 300) == 0


async def test_judge_verdicts_never_enter_the_human_leaderboard(server):
    await database_sync_to_async(voted_battles)(120)
    before = await database_sync_to_async(leaderboard_recompute)(include_simulated=True)
    judge = await database_sync_to_async(judge_on)(server)
    await judge_all(judge, 120)
    after = await database_sync_to_async(leaderboard_recompute)(include_simulated=True)
    assert (after.votes_used, after.content_hash) == (before.votes_used, before.content_hash)
    assert after.votes_used == await database_sync_to_async(Vote.objects.count)() == 120
    names = await database_sync_to_async(
        lambda: set(after.rows.values_list("model_name", flat=True))
    )()
    assert names == set(STRENGTHS)


async def test_missing_verdicts_are_counted_never_guessed(server):
    await database_sync_to_async(voted_battles)(10)
    judge = await database_sync_to_async(judge_on)(server, misbehaviour="judge_bad_json_always")
    await judge_all(judge, 10)
    verdicts = await database_sync_to_async(lambda: list(BattleVerdict.objects.all()))()
    assert len(verdicts) == 20 and {(v.level, v.attempts, v.done) for v in verdicts} == {
        ("", 3, True)
    }
    overall = (await database_sync_to_async(calibration_report)())["judges"][0]["overall"]
    assert overall["missing"] == 10 and overall["agreement"]["value"] is None


async def test_with_calibration_on_new_votes_are_judged_once_and_the_vote_is_untouched(
    server, settings, alice, two_models
):
    judge = await database_sync_to_async(judge_on)(server)
    settings.CALIBRATION = {**settings.CALIBRATION, "JUDGE": judge.public_name}
    vote = await database_sync_to_async(calm_vote)(alice, "Why is the sky blue?", "b")
    claimed = await database_sync_to_async(calibration.calibration_sweep)()
    assert len(claimed) == 2
    for _ in range(300):  # a worker judges them where CI runs one; here, the sweep itself
        done = await database_sync_to_async(BattleVerdict.objects.filter(done=True).count)()
        if done == 2:
            break
        await asyncio.sleep(0.1)
    assert done == 2
    assert await database_sync_to_async(calibration.calibration_sweep)() == []
    again = await database_sync_to_async(Vote.objects.get)(pk=vote.pk)
    assert (again.choice, again.model_a_id, again.model_b_id) == ("b", vote.model_a_id,
                                                                  vote.model_b_id)  # fmt: skip
    verdict = await database_sync_to_async(BattleVerdict.objects.first)()
    assert "Why is the sky blue?" in verdict.request
    assert "Zephyr" not in verdict.request and "zq-large" not in verdict.request


async def test_a_half_judged_battle_is_claimed_again_and_a_flagged_vote_leaves_the_figures(
    server, staff
):
    from datetime import timedelta

    from django.utils import timezone

    from arena.integrity.services import vote_flag

    await database_sync_to_async(voted_battles)(4)
    judge = await database_sync_to_async(judge_on)(server)
    assert await judge_all(judge, 4) == 8

    def one_order_lost_and_one_vote_flagged() -> Vote:
        # A worker died on one order of one battle: its claim, taken long ago, never written.
        lost = BattleVerdict.objects.order_by("pk").first()
        long_ago = timezone.now() - timedelta(hours=1)
        BattleVerdict.objects.filter(pk=lost.pk).update(done=False, level="", taken_at=long_ago)
        flagged = Vote.objects.exclude(pk=lost.vote_id).first()
        vote_flag(vote=flagged, by=staff)
        return lost.vote_id

    lost_vote = await database_sync_to_async(one_order_lost_and_one_vote_flagged)()
    assert await judge_all(judge, 4) == 1  # only the lost order is asked for again
    verdicts = await database_sync_to_async(
        lambda: list(BattleVerdict.objects.filter(vote_id=lost_vote, done=True))
    )()
    assert len(verdicts) == 2
    overall = (await database_sync_to_async(calibration_report)())["judges"][0]["overall"]
    assert overall["battles"] == 3  # the flagged vote does not count, here as on the board


async def test_the_sweep_holds_back_while_the_judge_is_behind(server, settings):
    await database_sync_to_async(voted_battles)(30)
    judge = await database_sync_to_async(judge_on)(server)
    settings.CALIBRATION = {**settings.CALIBRATION, "JUDGE": judge.public_name, "BATCH": 5}

    def claims_outstanding() -> int:
        # Claims not yet taken by a worker, as a busy queue leaves them.
        calibration.verdicts_claim(judge=judge, limit=5, include_simulated=True)
        calibration.verdicts_claim(judge=judge, limit=5, include_simulated=True)
        return BattleVerdict.objects.filter(done=False).count()

    assert await database_sync_to_async(claims_outstanding)() == 20
    assert await database_sync_to_async(calibration.calibration_sweep)() == []
