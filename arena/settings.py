"""The one settings module. Production differs from the demo only by environment values.

With no environment set the app runs on an embedded default: SQLite in ``var/``, answer streams
in memory and generation running inside the web process. Setting ``REDIS_URL`` switches to
answer streams on Redis and Celery workers; ``DATABASE_URL`` picks the database.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")


def _secret_key() -> str:
    """SECRET_KEY (or SECRET_KEY_FILE); else a random key kept beside the embedded database."""
    if env.str("SECRET_KEY", default=""):
        return env.str("SECRET_KEY")
    if env.str("SECRET_KEY_FILE", default=""):
        return Path(env.str("SECRET_KEY_FILE")).read_text().strip()
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "allauth",
    "allauth.account",
    "accounts",
    "arena",
    "ranking",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "arena.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "arena.middleware.ServiceUnavailableMiddleware",
]

ROOT_URLCONF = "arena.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "arena.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'arena.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so the test server subprocess sees the same data; one per test run
    # so two runs side by side do not clobber each other.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
    DATABASES["default"].setdefault("OPTIONS", {})["transaction_mode"] = "IMMEDIATE"
    DATABASES["default"]["OPTIONS"]["timeout"] = 20
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Seconds a connection is kept for the next request or websocket action of its thread (0: a new
# connection each time). Keep-alive saves a connect and a close per action under load; health
# checks replace a connection the database dropped.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_HASHERS = env.list(
    "PASSWORD_HASHERS",
    default=[
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    ],
)

# django-allauth: email + password, no usernames.
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
# "optional": signing in works at once, but crowd raters battle only once their address is
# confirmed (INTEGRITY["REQUIRE_VERIFIED_EMAIL_FOR_CROWD"]).
ACCOUNT_EMAIL_VERIFICATION = env.str("ACCOUNT_EMAIL_VERIFICATION", default="optional")
ACCOUNT_LOGOUT_ON_GET = False
LOGIN_REDIRECT_URL = "/"
LOGIN_URL = "/accounts/login/"
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="arena@localhost")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve straight from the source folders so the demo needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# HTTPS only, when served so: redirect plain HTTP, and tell browsers to keep to HTTPS (HSTS;
# read Django's warning before turning on subdomains or preload: browsers remember it).
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
)

# Redis: answer streams (arena/generation/streams.py), Celery broker and cache. Without it,
# everything stays in-process. No channel layer: nothing is pushed to a particular process.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # Keeps two deployments (or two test runs) on one Redis out of each other's keys,
            # allauth's own rate limits among them.
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default=""),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# "celery": one Celery task per battle turn (one per pool queue when the two sides' models are
# on different pools); "inprocess": asyncio tasks in the web process.
GENERATION_MODE = env.str("GENERATION_MODE", default="celery" if REDIS_URL else "inprocess")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_DEFAULT_QUEUE", default="default")
GENERATION_QUEUE = env.str("GENERATION_QUEUE", default="generation")
# Redis priorities: 0 is served first, 9 last. Arena traffic defaults to below the middle so
# other work on shared queues (judging, probes) goes ahead of it.
GENERATION_PRIORITY = env.int("GENERATION_PRIORITY", default=6)
# The rooms' task modules, imported by a worker as it starts and by a web process when it first
# runs a job itself (arena.core.jobs). No routes: every job_send names its queue.
CELERY_IMPORTS = (
    "arena.battles.tasks",
    "arena.compare.tasks",
    "arena.evals.tasks",
    "arena.tagging.tasks",
    "ranking.tasks",
)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "priority_steps": list(range(10)),
    "sep": ":",
    "queue_order_strategy": "priority",
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "void-stuck-battles": {"task": "arena.tasks.battles_sweep", "schedule": 5.0},
    "fail-stale-compare-runs": {"task": "arena.compare.sweep", "schedule": 60.0},
    "resume-stale-evals": {"task": "arena.evals.sweep", "schedule": 10.0},
    "recompute-leaderboard-nightly": {
        "task": "ranking.tasks.recompute_leaderboard",
        "schedule": crontab(hour=env.int("RANKING_NIGHTLY_HOUR", default=3), minute=0),
    },
}

# The product's own knobs.
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
    from decimal import Decimal, InvalidOperation

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

# Rate limits (accounts/ratelimits.py), per account ("user") and per network ("network": IPv4
# /24, IPv6 /64), as "count/period" with period s, m, h or d, optionally multiplied ("5/5m").
# Each is overridable as RATELIMIT_<ACTION>_<SCOPE>, e.g. RATELIMIT_VOTE_USER=20/m; an empty
# value switches that limit off. On sign-in and password reset "user" is the address typed in.
_RATELIMIT_DEFAULTS = {
    "battle_start": {"user": "30/m", "network": "120/m"},
    "follow_up": {"user": "30/m", "network": "120/m"},
    "vote": {"user": "30/m", "network": "120/m"},
    # Each stop is a database write; a page stops a battle once. Resume counts as a follow-up.
    "battle_stop": {"user": "30/m", "network": "120/m"},
    # Compare mode does not exist yet; its limit is here so it is guarded from day one.
    "compare_run": {"user": "10/m", "network": "40/m"},
    "signup": {"network": "10/h"},
    # Tighter than allauth's own limits (ACCOUNT_RATE_LIMITS: sign-up 20/m, sign-in 30/m and
    # password reset 20/m per address), so ours, which carry Retry-After, are the ones met.
    "login": {"user": "5/5m", "network": "20/m"},
    "password_reset": {"user": "3/h", "network": "5/h"},
}
RATELIMITS = {
    action: {
        scope: env.str(f"RATELIMIT_{action.upper()}_{scope.upper()}", default=rate) or None
        for scope, rate in scopes.items()
    }
    for action, scopes in _RATELIMIT_DEFAULTS.items()
}
RATELIMIT_USE_CACHE = "default"
RATELIMIT_CACHE_PREFIX = env.str("RATELIMIT_CACHE_PREFIX", default="rl:")
# The client address is the peer's (REMOTE_ADDR, the websocket's scope "client") unless a proxy
# we run sets this header, given as in request.META (e.g. HTTP_X_FORWARDED_FOR). Every proxy
# appends the address it received from: the entry TRUSTED_PROXY_COUNT from the right is the
# one our outermost proxy wrote; anything left of it came from the client and is ignored.
TRUSTED_PROXY_HEADER = env.str("TRUSTED_PROXY_HEADER", default="") or None
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=1)
# allauth keeps limits of its own (failed sign-ins); it must see the same client address.
if TRUSTED_PROXY_HEADER == "HTTP_X_FORWARDED_FOR":
    ALLAUTH_TRUSTED_PROXY_COUNT = TRUSTED_PROXY_COUNT
elif TRUSTED_PROXY_HEADER:
    ALLAUTH_TRUSTED_CLIENT_IP_HEADER = TRUSTED_PROXY_HEADER.removeprefix("HTTP_").replace("_", "-")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}
