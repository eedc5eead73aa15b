"""The product's own knobs: the arena's, compare mode's, evaluations', calibration's, tagging's,
ranking's, sampling's and integrity's, each from the environment (README's config table)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured

from arena.settings.environment import REDIS_URL, env

ARENA = {
    "PROMPT_MAX_CHARS": env.int("ARENA_PROMPT_MAX_CHARS", default=32_000),
    "WS_MESSAGE_MAX_BYTES": env.int("ARENA_WS_MESSAGE_MAX_BYTES", default=256_000),
    # Battle sockets one rater may hold open at once, over every web process.
    "SOCKETS_PER_RATER": env.int("ARENA_SOCKETS_PER_RATER", default=8),
    "MAX_TURNS": env.int("ARENA_MAX_TURNS", default=8),
    "ANSWER_MAX_CHARS": env.int("ARENA_ANSWER_MAX_CHARS", default=100_000),
    "DEFAULT_PARAMS": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 1024},
    "SYSTEM_PROMPT": env.str("ARENA_SYSTEM_PROMPT", default=""),
    # Pacing: both panes advance together, PACE_CHARS characters every PACE_TICK_MS.
    "PACE_TICK_MS": env.int("ARENA_PACE_TICK_MS", default=40),
    "PACE_CHARS": env.int("ARENA_PACE_CHARS", default=12),
    "TURN_DEADLINE_S": env.float("ARENA_TURN_DEADLINE_S", default=180.0),
    # Which model variants may be tested (docs/publication.md): "publish_all", every variant
    # with counted votes is published; "limit", also at most MODEL_PREVIEW_LIMIT previews per
    # organisation in 90 days.
    "MODEL_PUBLICATION": env.str("ARENA_MODEL_PUBLICATION", default="publish_all"),
    "MODEL_PREVIEW_LIMIT": env.int("ARENA_MODEL_PREVIEW_LIMIT", default=3),
}
if ARENA["MODEL_PUBLICATION"] not in ("publish_all", "limit"):
    raise ImproperlyConfigured(
        f"ARENA_MODEL_PUBLICATION is {ARENA['MODEL_PUBLICATION']!r}: publish_all or limit."
    )

# Backends: where keys may be read from and which addresses models may be served from. Whoever
# may edit a model chooses its settings, so these are the operator's, in the environment.
# Keys: variables whose names start with one of these (the server's own settings never
# qualify), and files inside these folders (arena.backends.secrets).
ARENA_SECRET_ENV_PREFIXES = env.list(
    "ARENA_SECRET_ENV_PREFIXES",
    default=["ARENA_KEY_", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"],
)
ARENA_SECRET_DIRS = env.list("ARENA_SECRET_DIRS", default=["/run/secrets"])
# Host names (".example" for every name under it), addresses and networks a model's URLs may
# reach beyond the public internet: loopback, private, link-local and metadata addresses are
# refused otherwise (arena.backends.outbound), e.g. "127.0.0.1,localhost,10.0.0.0/8".
ARENA_BACKEND_ALLOW_HOSTS = env.list("ARENA_BACKEND_ALLOW_HOSTS", default=[])

# What a rater accepts once before their first battle (empty TEXT: nothing to accept). A new
# VERSION asks every rater to accept again.
TERMS = {
    "TEXT": env.str(
        "ARENA_TERMS_TEXT",
        default="Your prompts and votes may be published as an open dataset, without your email "
        "address, to help research. Do not enter personal or confidential information.",
    ),
    "VERSION": env.str("ARENA_TERMS_VERSION", default="1"),
}
if len(TERMS["VERSION"]) > 32:  # it is stored with each rater who accepts it
    raise ImproperlyConfigured("ARENA_TERMS_VERSION is longer than 32 characters.")

# Compare mode: named models side by side, judged blind; never the leaderboard.


def _compare_usd(name: str, default: str):
    """A sum of money from the environment, as Decimal (never float): refused when unreadable
    or negative, so a typo cannot lift the limit."""
    raw = env.str(name, default=default)
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be an amount in USD, not {raw!r}.") from None
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name} must be an amount of 0 or more, not {raw!r}.")
    return value


COMPARE = {
    # Who may use compare mode, always with the arena.use_compare permission (superusers have
    # every permission): "staff" (staff accounts given it) or "team" (any account given it).
    "ACCESS": env.str("COMPARE_ACCESS", default="staff"),
    "JUDGE_MODEL": env.str("COMPARE_JUDGE_MODEL", default="Mock Judge"),  # a public name
    # More public names that may judge though not active in battles (judges usually are not);
    # any other inactive model is refused as a judge.
    "JUDGES": env.list("COMPARE_JUDGES", default=[]),
    "JUDGE_TERMS": env.list("COMPARE_JUDGE_TERMS", default=[]),  # more names to mask
    "JUDGE_SAME_FAMILY": env.bool("COMPARE_JUDGE_SAME_FAMILY", default=False),
    # Judge answers cut at the length limit (as they stand, marked truncated in the verdict's
    # scope line); false: leave them out, "not judged", like partial answers.
    "JUDGE_TRUNCATED": env.bool("COMPARE_JUDGE_TRUNCATED", default=True),
    "RUN_DEADLINE_S": env.float("COMPARE_RUN_DEADLINE_S", default=120.0),
    "PRIORITY": env.int("COMPARE_PRIORITY", default=8),  # after arena traffic (6)
    # Spend, per user: what their runs may cost in a day (the site's time zone), known and
    # estimated costs and the estimate of runs still going (arena.compare.spend)...
    "DAILY_BUDGET_USD": _compare_usd("COMPARE_DAILY_BUDGET_USD", "10"),
    # ...how many of their runs may be queued, running or judging at once...
    "MAX_CONCURRENT_RUNS": env.int("COMPARE_MAX_CONCURRENT_RUNS", default=2),
    # ...and the most output tokens a model may be asked for when its backend settings name no
    # "max_tokens" of its own (its own, where set, is its limit).
    "MAX_TOKENS": env.int("COMPARE_MAX_TOKENS", default=8192),
}

# Evaluation runs: the lowest priority of all generation (arena 6, compare 8).
EVALS_PRIORITY = env.int("EVALS_PRIORITY", default=9)
# A running evaluation whose worker has not beaten for this long is handed to another.
EVALS_STALE_S = env.float("EVALS_STALE_S", default=30.0)

# Calibration: the judge named here (a public name; empty: off) also judges every counted arena
# battle after its human vote, both orders, a batch each sweep. Stored apart from the votes.
CALIBRATION = {
    "JUDGE": env.str("CALIBRATION_JUDGE", default=""),
    "BATCH": env.int("CALIBRATION_BATCH", default=50),
    # A claimed verdict not written after this long lost its worker and is claimed again.
    "STALE_S": env.float("CALIBRATION_STALE_S", default=600.0),
    # The public judge tab's agreement figures may be this old (0: always fresh).
    "PUBLIC_MAX_AGE_S": env.float("CALIBRATION_PUBLIC_MAX_AGE_S", default=600.0),
}

# Tagging (arena.tagging): the LLM labeller's public name (empty: rules alone), its daily budget.
TAGGER_MODEL = env.str("TAGGER_MODEL", default="")
TAGGER_DAILY_BUDGET_USD = _compare_usd("TAGGER_DAILY_BUDGET_USD", "5")

# Ranking: every knob that shapes the numbers is recorded in each snapshot.
RANKING = {
    "method": env.str("RANKING_METHOD", default="bootstrap"),  # or "sandwich"
    "rounds": env.int("RANKING_BOOTSTRAP_ROUNDS", default=1000),
    "style_method": env.str("RANKING_STYLE_METHOD", default="sandwich"),  # or "bootstrap"
    "breakdown_method": env.str("RANKING_BREAKDOWN_METHOD", default="sandwich"),  # or "bootstrap"
    "style_rounds": env.int("RANKING_STYLE_ROUNDS", default=100),
    "seed": env.int("RANKING_SEED", default=0),
    "both_bad": env.str("RANKING_BOTH_BAD", default="tie"),  # or "drop"
    "min_votes": env.int("RANKING_MIN_VOTES", default=300),
    "anchor": env.str("RANKING_ANCHOR_MODEL", default="") or None,
    "anchor_score": env.float("RANKING_ANCHOR_SCORE", default=1000.0),
    "reweight": env.bool("RANKING_REWEIGHT", default=False),
}
# Simulated (demo) votes count only where this is set, i.e. in the demo itself.
RANKING_INCLUDE_SIMULATED = env.bool("RANKING_INCLUDE_SIMULATED", default=False)
# Seconds between the demo server's own leaderboard refreshes (each one only if votes came in
# since the last snapshot): on by default where there is no Redis and so no beat (the embedded
# default); 0 turns it off, as production leaves it, recomputing on beat's schedule.
RANKING_REFRESH_S = env.float("RANKING_REFRESH_S", default=0.0 if REDIS_URL else 300.0)
# Active sampling of battle pairs (ranking/sampling.py).
SAMPLING = {
    "floor": env.float("SAMPLING_FLOOR", default=0.2),
    "boost_votes": env.int("SAMPLING_BOOST_VOTES", default=300),
    "boost": env.float("SAMPLING_BOOST", default=1.0),
}

# Images a rater attaches to a prompt (arena/images): each at most MAX_BYTES as sent and
# MAX_PIXELS once decoded, at most MAX_COUNT on a turn. Each limit is refused with its own
# message, never cut to fit.
IMAGES = {
    "MAX_BYTES": env.int("IMAGES_MAX_BYTES", default=5_000_000),
    "MAX_PIXELS": env.int("IMAGES_MAX_PIXELS", default=25_000_000),
    "MAX_COUNT": env.int("IMAGES_MAX_COUNT", default=4),
}

# Integrity: what makes a vote not count. Every exclusion is a recorded VoteFlag.
INTEGRITY = {
    # Reading-time floor: (characters of both answers) / READING_CHARS_PER_S, at least
    # READING_MIN_MS; a faster vote is flagged too_fast.
    "READING_CHARS_PER_S": env.float("INTEGRITY_READING_CHARS_PER_S", default=150.0),
    "READING_MIN_MS": env.int("INTEGRITY_READING_MIN_MS", default=2000),
    "DAILY_VOTE_CAP": env.int("INTEGRITY_DAILY_VOTE_CAP", default=200),
    "PROMPT_BATTLE_CAP": env.int("INTEGRITY_PROMPT_BATTLE_CAP", default=50),
    "RATER_PROMPT_REUSE_CAP": env.int("INTEGRITY_RATER_PROMPT_REUSE_CAP", default=2),
    "REQUIRE_VERIFIED_EMAIL_FOR_CROWD": env.bool("INTEGRITY_REQUIRE_VERIFIED_EMAIL", default=True),
    "GOLD_SHARE": env.float("INTEGRITY_GOLD_SHARE", default=0.05),
    "GOLD_MIN_ANSWERED": env.int("INTEGRITY_GOLD_MIN_ANSWERED", default=5),
    "GOLD_MIN_AGREEMENT": env.float("INTEGRITY_GOLD_MIN_AGREEMENT", default=0.6),
    # Matched case-insensitively on word boundaries, with every model's public name and id.
    "IDENTITY_TERMS": env.list(
        "INTEGRITY_IDENTITY_TERMS",
        default=[
            "Claude",
            "Anthropic",
            "GPT",
            "ChatGPT",
            "OpenAI",
            "Gemini",
            "Google",
            "Grok",
            "xAI",
            "Llama",
            "Meta",
            "Mistral",
            "Qwen",
            "DeepSeek",
        ],
    ),
}

# The open dataset's rater pseudonyms (arena/datasets/release.py): a keyed hash under this salt.
# Set it to keep pseudonyms stable across releases; empty: a salt drawn per export, never written.
DATASET_SALT = env.str("DATASET_SALT", default="")
# Whether the raters' terms let their attached images be published: only then may the open
# dataset carry the image files (export_dataset --include-images); its rows name them by hash.
DATASET_IMAGES = env.bool("DATASET_IMAGES", default=False)
