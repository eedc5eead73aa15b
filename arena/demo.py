"""Demo data: mock models of visibly different speed and style, curated prompts, two users.

Seeding is idempotent: running it again updates in place and adds nothing twice.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts.models import User
from arena import services
from arena.models import ModelEntry
from arena.prompt_import import ImportReport

PROMPTS_FILE = Path(__file__).parent / "data" / "demo_prompts.jsonl"
ALL_PARAMS = ["temperature", "top_p", "max_tokens"]

DEMO_MODELS = [
    # public name, organisation, model id, mock settings
    (
        "Swift Falcon",
        "Demo Labs",
        "mock-falcon-1",
        {"ttft_ms": 150, "tokens_per_s": 90, "answer_tokens": 90, "style": "plain"},
    ),
    (
        "Deep Owl",
        "Demo Labs",
        "mock-owl-2",
        {"ttft_ms": 900, "tokens_per_s": 20, "answer_tokens": 150, "style": "markdown"},
    ),
    (
        "Brief Wren",
        "Example AI",
        "mock-wren-1",
        {"ttft_ms": 300, "tokens_per_s": 45, "answer_tokens": 40, "style": "terse"},
    ),
    (
        "List Heron",
        "Example AI",
        "mock-heron-3",
        {"ttft_ms": 500, "tokens_per_s": 35, "answer_tokens": 120, "style": "lists"},
    ),
    (
        "Steady Otter",
        "Open Mock Collective",
        "mock-otter-7b",
        {"ttft_ms": 400, "tokens_per_s": 28, "answer_tokens": 100, "style": "plain"},
    ),
]

# True strengths of the simulated votes (natural-log Bradley–Terry), for a leaderboard with real
# intervals out of the box. Simulated votes are marked so, on the page and in every export.
SIMULATED_STRENGTHS = {
    "Deep Owl": 0.9,
    "List Heron": 0.55,
    "Steady Otter": 0.45,
    "Swift Falcon": 0.2,
    "Brief Wren": -0.4,
}
SIMULATED_VOTES = 4000
SIMULATED_EMAIL = "simulated@demo.arena"
RATER_EMAIL = "rater@demo.arena"
ADMIN_EMAIL = "admin@demo.arena"


@dataclass(frozen=True)
class DemoSeed:
    rater_password: str
    admin_password: str
    prompts: ImportReport
    models: int
    simulated_votes: int


def _user(email: str, *, admin: bool) -> str:
    password = secrets.token_urlsafe(9)
    from allauth.account.models import EmailAddress

    user = User.objects.filter(email=email).first()
    if user is None:
        create = User.objects.create_superuser if admin else User.objects.create_user
        user = create(email, password)
    else:
        user.set_password(password)
        user.save(update_fields=["password"])
    EmailAddress.objects.update_or_create(
        user=user, email=email, defaults={"verified": True, "primary": True}
    )
    return password


def demo_mock_config() -> dict[str, dict]:
    """Per-model settings for ``manage.py mock_backend --demo``: the same models over HTTP."""
    return {model_id: mock for _, _, model_id, mock in DEMO_MODELS}


@transaction.atomic
def demo_seed(*, mock_replicas: list[str] | None = None) -> DemoSeed:
    """``mock_replicas``: base URLs of mock HTTP servers; the demo models are then served
    through the OpenAI-compatible adapter and a replica pool instead of in-process."""
    for name, org, model_id, mock in DEMO_MODELS:
        if mock_replicas:
            backend = ModelEntry.Backend.OPENAI_COMPATIBLE
            settings = {"replicas": [{"base_url": u} for u in mock_replicas], "max_concurrency": 8}
        else:
            backend, settings = ModelEntry.Backend.MOCK, mock
        ModelEntry.objects.update_or_create(
            public_name=name,
            defaults={
                "organisation": org,
                "vendor": "mock",
                "model_id": model_id,
                "backend": backend,
                "backend_settings": settings,
                "supported_params": ALL_PARAMS,
            },
        )
    report = services.prompts_import(data=PROMPTS_FILE.read_bytes(), filename=PROMPTS_FILE.name)
    return DemoSeed(
        rater_password=_user(RATER_EMAIL, admin=False),
        admin_password=_user(ADMIN_EMAIL, admin=True),
        prompts=report,
        models=len(DEMO_MODELS),
        simulated_votes=votes_simulate(n=SIMULATED_VOTES),
    )


def votes_simulate(
    *, n: int, seed: int = 7, strengths: dict[str, float] | None = None, once: bool = True
) -> int:
    """Add ``n`` simulated votes among the models named in ``strengths`` (default: the demo's);
    with ``once``, only if there are none yet. Returns how many were added.

    Each is a complete battle (turn, two answers, vote) marked ``simulated``, cast by a
    dedicated inactive user, with outcomes drawn from the strengths.
    """
    import math
    import random

    from django.utils import timezone

    from arena.models import Answer, Battle, Prompt, Turn, Vote
    from arena.text import style_counts

    strengths = strengths or SIMULATED_STRENGTHS
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
    params = dict(services._shared_params())
    now = timezone.now()
    battles, turns, answers, votes = [], [], [], []
    for _ in range(n):
        model_a, model_b = rng.sample(models, 2)
        prompt = rng.choice(prompts)
        d = strengths[model_a.public_name] - strengths[model_b.public_name]
        roll = rng.random()
        if roll < 0.08:
            choice = "tie"
        elif roll < 0.12:
            choice = "both_bad"
        else:
            choice = "a" if rng.random() < 1 / (1 + math.exp(-d)) else "b"
        battle = Battle(
            rater=user,
            prompt=prompt,
            model_a=model_a,
            model_b=model_b,
            params=params,
            status=Battle.Status.VOTED,
        )
        turn = Turn(battle=battle, index=0, text=prompt.text, shown_at=now)
        sides = {}
        for side, model in (("a", model_a), ("b", model_b)):
            tokens = rng.randint(40, 400)
            text = f"(simulated answer of {tokens} tokens)"
            answers.append(
                Answer(
                    turn=turn,
                    side=side,
                    model=model,
                    status=Answer.Status.OK,
                    text=text,
                    output_tokens=tokens,
                    input_tokens=20,
                    finish_reason="stop",
                    started_at=now,
                    finished_at=now,
                )
            )
            sides[side] = {
                "model": model.public_name,
                "model_id": model.model_id,
                "output_tokens": tokens,
                "input_tokens": 20,
                "tokens_estimated": False,
                "finish_reason": "stop",
                "ttft_ms": [None],
                "total_ms": [None],
                "style": {
                    **style_counts(text),
                    "headers": rng.randint(0, 3),
                    "list_items": rng.randint(0, 6),
                    "bold": rng.randint(0, 4),
                },
            }
        battles.append(battle)
        turns.append(turn)
        votes.append(
            Vote(
                battle=battle,
                rater=user,
                rater_pool=user.rater_pool,
                prompt=prompt,
                prompt_hash=prompt.text_hash,
                prompt_category=prompt.category,
                prompt_language=prompt.language,
                model_a=model_a,
                model_b=model_b,
                choice=choice,
                decision_ms=rng.randint(4000, 60000),
                turns=1,
                params=params,
                side_a=sides["a"],
                side_b=sides["b"],
                simulated=True,
            )
        )
    Battle.objects.bulk_create(battles, batch_size=1000)
    Turn.objects.bulk_create(turns, batch_size=1000)
    for answer in answers:
        answer.turn_id = answer.turn.pk
    Answer.objects.bulk_create(answers, batch_size=1000)
    Vote.objects.bulk_create(votes, batch_size=1000)
    return n
