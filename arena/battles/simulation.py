"""Writes of simulated votes: made-up battles that fill an empty leaderboard in the demo.

Each is a complete battle (turn, two answers, vote) marked ``simulated``, cast by a dedicated
inactive user; simulated votes are never counted unless asked for.
"""

from __future__ import annotations

import math
import random

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from arena.battles.services import shared_params
from arena.catalog.models import ModelEntry
from arena.core.bulk import rows_add
from arena.core.text import style_counts
from arena.records.models import Answer, Battle, Prompt, Turn, Vote

SIMULATED_EMAIL = "simulated@demo.arena"


def _simulated_side(rng: random.Random, model: ModelEntry, tokens: int, text: str) -> dict:
    return Vote.side_fields(
        model=model,
        output_tokens=tokens,
        input_tokens=20,
        tokens_estimated=False,
        finish_reason="stop",
        ttft_ms=[None],
        total_ms=[None],
        style={
            **style_counts(text),
            "headers": rng.randint(0, 3),
            "list_items": rng.randint(0, 6),
            "bold": rng.randint(0, 4),
        },
    )


def _choice(rng: random.Random, strength_gap: float, p_a: float | None = None) -> str:
    roll = rng.random()
    if roll < 0.08:
        return Vote.Choice.TIE
    if roll < 0.12:
        return Vote.Choice.BOTH_BAD
    if p_a is None:
        p_a = 1 / (1 + math.exp(-strength_gap))
    return Vote.Choice.A if rng.random() < p_a else Vote.Choice.B


def _p_a_longer(tokens_a: int, tokens_b: int, preference: float) -> float:
    """P(A wins) for raters who pick the longer answer with ``preference`` (a coin at equal
    lengths): a known length bias for the dataset audit to find."""
    if tokens_a == tokens_b:
        return 0.5
    return preference if tokens_a > tokens_b else 1 - preference


@transaction.atomic
def votes_simulate(
    *,
    n: int,
    strengths: dict[str, float],
    seed: int = 7,
    once: bool = True,
    length_preference: float | None = None,
) -> int:
    """Add ``n`` simulated votes among the models named in ``strengths`` (natural-log
    Bradley–Terry strengths); with ``once``, only if there are none yet. Returns how many.
    ``length_preference``: decisive votes pick the longer answer with this probability
    instead of by strength."""
    if once and Vote.objects.filter(simulated=True).exists():
        return 0
    rng = random.Random(seed)
    user = User.objects.filter(email=SIMULATED_EMAIL).first()
    if user is None:
        user = User.objects.create_user(SIMULATED_EMAIL, None, is_active=False)
    models = list(ModelEntry.objects.filter(public_name__in=strengths))
    prompts = list(Prompt.objects.filter(source=Prompt.Source.CURATED, active=True))
    if len(models) < 2 or not prompts:
        return 0
    params = shared_params()
    now = timezone.now()
    battles, turns, answers, votes = [], [], [], []
    for _ in range(n):
        model_a, model_b = rng.sample(models, 2)
        prompt = rng.choice(prompts)
        gap = strengths[model_a.public_name] - strengths[model_b.public_name]
        # Drawn before the answers as it always was, so the demo's votes stay the same votes;
        # a length preference needs the lengths first and draws after them.
        choice = _choice(rng, gap) if length_preference is None else None
        battle = Battle.between(
            (model_a, model_b), rater=user, prompt=prompt, params=params, status=Battle.Status.VOTED
        )
        turn = Turn(battle=battle, index=0, text=prompt.text, shown_at=now)
        sides, tokens = {}, {}
        for side, model in ((Answer.Side.A, model_a), (Answer.Side.B, model_b)):
            tokens[side] = rng.randint(40, 400)
            # The strength marker is what the mock judge reads (calibration in the demo);
            # simulated battles are never shown to a rater.
            text = f"⟦q={strengths[model.public_name]}⟧ (simulated answer of {tokens[side]} tokens)"
            answers.append(
                Answer(
                    turn=turn,
                    side=side,
                    model=model,
                    status=Answer.Status.OK,
                    text=text,
                    output_tokens=tokens[side],
                    input_tokens=20,
                    finish_reason="stop",
                    started_at=now,
                    finished_at=now,
                )
            )
            sides[side] = _simulated_side(rng, model, tokens[side], text)
        if choice is None:
            p_a = _p_a_longer(tokens[Answer.Side.A], tokens[Answer.Side.B], length_preference)
            choice = _choice(rng, gap, p_a)
        battles.append(battle)
        turns.append(turn)
        votes.append(
            Vote(
                **Vote.fields_for(
                    battle=battle,
                    prompt=prompt,
                    choice=choice,
                    decision_ms=rng.randint(4000, 60000),
                    turns=1,
                    side_a=sides[Answer.Side.A],
                    side_b=sides[Answer.Side.B],
                    simulated=True,
                )
            )
        )
    rows_add(battles)
    rows_add(turns, ids=True)
    for answer in answers:
        answer.turn_id = answer.turn.pk
    rows_add(answers)
    rows_add(votes)
    return n
