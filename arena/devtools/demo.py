"""Demo data: mock models of visibly different speed and style, curated prompts, two users.

Seeding is idempotent: running it again updates in place and adds nothing twice.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from asgiref.sync import async_to_sync
from django.db import transaction

from accounts.groups import group_ensure
from accounts.models import User
from accounts.services import user_ensure
from arena.battles.prompt_files import ImportReport
from arena.battles.prompts import prompts_import
from arena.battles.simulation import votes_simulate
from arena.catalog.models import ModelEntry, standard_params
from arena.catalog.selectors import model_by_name
from arena.catalog.services import model_upsert
from arena.evals import battle_judging as calibration
from arena.evals import running
from arena.evals import services as eval_services
from arena.evals.models import BattleVerdict, EvalRun

PROMPTS_FILE = Path(__file__).parent / "data" / "demo_prompts.jsonl"


def _mock(
    ttft_ms: int, tokens_per_s: int, answer_tokens: int, style: str, *, vision: bool = False
) -> dict:
    return {
        "ttft_ms": ttft_ms,
        "tokens_per_s": tokens_per_s,
        "answer_tokens": answer_tokens,
        "style": style,
        **({"vision": True} if vision else {}),
    }


DEMO_MODELS = [
    # public name, organisation, model id, mock settings
    ("Swift Falcon", "Demo Labs", "mock-falcon-1", _mock(150, 90, 90, "plain", vision=True)),
    ("Deep Owl", "Demo Labs", "mock-owl-2", _mock(900, 20, 150, "markdown", vision=True)),
    ("Brief Wren", "Example AI", "mock-wren-1", _mock(300, 45, 40, "terse")),
    ("List Heron", "Example AI", "mock-heron-3", _mock(500, 35, 120, "lists", vision=True)),
    ("Steady Otter", "Open Mock Collective", "mock-otter-7b", _mock(400, 28, 100, "plain")),
]

# Lines and previews (docs/publication.md), so the board shows how variants are published.
DEMO_VARIANTS = {
    "List Heron": {"line": "Heron"},
    "Brief Wren": {"line": "Wren", "preview": True},
}

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
DEMO_JUDGE = "Mock Judge"  # COMPARE_JUDGE_MODEL's default
RATER_EMAIL = "rater@demo.arena"
ADMIN_EMAIL = "admin@demo.arena"
# What running the arena takes beyond the admin's model pages, each its own permission (the
# staff flag grants none of them): compare mode and evaluation runs spend money on model calls,
# calibration and the pools page show the judge's and the backends' inner figures. Staff who
# operate the arena join this group; the demo admin, a superuser who holds them all anyway,
# is put in it too so the group is seen in use and still works if the superuser flag is cleared.
OPERATORS_GROUP = "Arena operators"
OPERATOR_PERMISSIONS = (
    "arena.use_compare",
    "arena.run_evals",
    "arena.view_calibration",
    "arena.view_pools",
)


@dataclass(frozen=True)
class DemoSeed:
    rater_password: str
    admin_password: str
    prompts: ImportReport
    models: int
    simulated_votes: int


DEMO_EVAL = "Demo evaluation (mock models, mock judge)"
DEMO_EVAL_BASELINE = "Steady Otter"
DEMO_EVAL_PROMPTS_PER_CATEGORY = 1
DEMO_CALIBRATION_BATTLES = 200


def demo_evaluate() -> tuple[EvalRun, int]:
    """The demo's evaluation run (published on the judge tab) and the demo judge's calibration
    on simulated battles, made once and here, whatever the generation mode: so both pages
    show real figures out of the box, marked as mock. The run, and verdicts written now."""
    run = EvalRun.objects.filter(name=DEMO_EVAL).first()
    if run is None:
        by_category: dict[str, list] = {}
        for prompt in eval_services.prompts_select():
            by_category.setdefault(prompt.category, []).append(prompt)
        chosen = [p for ps in by_category.values() for p in ps[:DEMO_EVAL_PROMPTS_PER_CATEGORY]]
        models = {m.public_name: m for m in ModelEntry.objects.all()}
        run = eval_services.eval_create(
            user=User.objects.get(email=ADMIN_EMAIL),
            name=DEMO_EVAL,
            prompts=[(p.text, p.category) for p in chosen],
            model_ids=[models[n].pk for n, *_ in DEMO_MODELS if n != DEMO_EVAL_BASELINE],
            baseline_id=models[DEMO_EVAL_BASELINE].pk,
            judge_id=models[DEMO_JUDGE].pk,
            seed=1,
            public=True,
        )
    if run.status != EvalRun.Status.DONE:
        run = async_to_sync(running.eval_execute)(run.pk)
    judge = model_by_name(DEMO_JUDGE)
    written = 0
    if not BattleVerdict.objects.filter(judge=judge).exists():
        ids = calibration.verdicts_claim(
            judge=judge, limit=DEMO_CALIBRATION_BATTLES, include_simulated=True
        )
        written = async_to_sync(calibration.verdicts_judge)(verdict_ids=ids)
    return run, written


def _user(email: str, *, admin: bool) -> str:
    password = secrets.token_urlsafe(9)
    user_ensure(email=email, password=password, admin=admin)
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
        model_upsert(
            public_name=name,
            organisation=org,
            vendor="mock",
            model_id=model_id,
            backend=backend,
            backend_settings=settings,
            supported_params=standard_params(),
            # Three of the five read images (their mock's vision), so image battles can be had.
            takes_images=bool(mock.get("vision")),
            **DEMO_VARIANTS.get(name, {}),
        )
    # Compare mode's default judge: a mock that scores deterministically. Not active, so it is
    # never drawn into a battle; a vendor of its own, so it may judge the demo models.
    model_upsert(
        public_name=DEMO_JUDGE,
        organisation="Demo Judges",
        vendor="mock-judge",
        model_id="mock-judge-1",
        backend=ModelEntry.Backend.MOCK,
        # As a pairwise judge (the demo's evaluation run and calibration) it is made to lean a
        # little to the first answer and to longer ones, so the calibration page has biases
        # to show.
        backend_settings={
            "judge": True,
            "ttft_ms": 50,
            "tokens_per_s": 0,
            "judge_position_bias": 0.1,
            "judge_length_bias": 2.0,
            "vision": True,
        },  # fmt: skip
        supported_params=standard_params(),
        takes_images=True,  # so a compare run with images may be judged
        active=False,
    )
    report = prompts_import(data=PROMPTS_FILE.read_bytes(), filename=PROMPTS_FILE.name)
    rater_password = _user(RATER_EMAIL, admin=False)
    admin_password = _user(ADMIN_EMAIL, admin=True)
    group_ensure(
        name=OPERATORS_GROUP,
        permissions=OPERATOR_PERMISSIONS,
        members=[User.objects.get(email=ADMIN_EMAIL)],
    )
    return DemoSeed(
        rater_password=rater_password,
        admin_password=admin_password,
        prompts=report,
        models=len(DEMO_MODELS),
        simulated_votes=votes_simulate(n=SIMULATED_VOTES, strengths=SIMULATED_STRENGTHS),
    )
