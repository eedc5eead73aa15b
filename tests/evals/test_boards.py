"""Judge boards say where their intervals mean nothing: too few games, an interval too wide,
and a style-controlled fit whose style features only say which model played (the demo's
"84 - 40792" baseline)."""

from __future__ import annotations

import numpy as np
import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from arena.battles.prompts import prompt_create
from arena.evals import running, services
from ranking.judged import MAX_WIDTH, MIN_GAMES, interval_doubt, style_tracks_models
from tests.helpers import make_judge, make_model, make_two_models

pytestmark = pytest.mark.usefixtures("generation")


def test_a_row_with_too_few_games_or_too_wide_an_interval_is_doubted_with_the_reason():
    assert interval_doubt(MIN_GAMES - 1, 900.0, 1100.0).startswith("too few games (19, under 20)")
    assert interval_doubt(58, 84.0, 40792.0) == (
        "interval 40,708 points wide (over 400): cannot be ranked"
    )
    assert interval_doubt(58, 900.0, None) == "no interval could be fitted"
    assert interval_doubt(58, 900.0, 900.0 + MAX_WIDTH) == ""


def test_style_that_only_tells_which_model_played_is_found_and_varied_style_is_not():
    rng = np.random.default_rng(0)
    a = np.repeat([0, 1, 2], 20)
    b = np.full(60, 3)  # every game against the baseline, as an evaluation run plays
    per_model = np.array([[0.5, 0.1], [-0.2, 0.3], [0.1, -0.4]])
    tracked = per_model[a] + rng.normal(0, 0.01, (60, 2))  # each model: one style
    assert style_tracks_models(a, b, tracked, 4)
    varied = rng.normal(0, 0.5, (60, 2))  # style varies answer to answer
    assert not style_tracks_models(a, b, varied, 4)


def test_the_judge_tab_greys_rows_it_cannot_rank_and_says_why(client, transactional_db, staff):
    quill, lantern = make_two_models()
    otter = make_model("Steady Otter", "so-1", vendor="Otters")
    judge = make_judge()
    for i in range(3):
        prompt_create(text=f"Is {i * 7 + 3} a prime number?", category="math")
    run = services.eval_create(
        user=staff, name="few", prompts=[(p.text, p.category) for p in services.prompts_select()],
        model_ids=[quill.pk, lantern.pk], baseline_id=otter.pk, judge_id=judge.pk, public=True,
        seed=1,
    )  # fmt: skip
    async_to_sync(running.eval_execute)(run.pk)
    page = client.get(reverse("leaderboard-judge")).content.decode()
    assert 'class="unsure help"' in page and "not ranked: too few games (6, under 20)" in page
    assert "A greyed row is not ranked" in page
    data = client.get(reverse("leaderboard-judge-json")).json()
    (shown,) = data["runs"]
    assert {r["model"]: r["doubt"] for r in shown["overall"]}["Zephyr Quill"].startswith(
        "too few games"
    )
    assert "style_note" in shown  # the demo's mock models: ranking.judged.style_tracks_models


def test_the_agreements_counts_add_up_decisive_of_judged_and_simulated_of_judged(rf):
    from django.template.loader import render_to_string

    run = {
        "name": "demo", "judge": "Mock Judge", "baseline": "Steady Otter", "pairs": 8,
        "position_bias": 0.1, "missing_verdicts": 0, "overall": [], "style": [],
        "agreement": {"value": 0.7, "lower": 0.6, "upper": 0.8, "n": 149},
        "calibration_battles": 200, "simulated_battles": 200,
    }  # fmt: skip
    page = render_to_string("evals/leaderboard_judge.html", {"runs": [run]}, request=rf.get("/"))
    assert (
        "over the 149 battles where both the rater and the judge took a side, of 200 judged; "
        "200 of the 200 are simulated"
    ) in " ".join(page.split())
