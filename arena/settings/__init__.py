"""The settings. Production differs from the demo only by environment values: the framework's
wiring here, the product's own knobs in ``arena/settings/product.py``.

With no environment set the app runs on an embedded default: SQLite in ``var/``, answer streams
in memory and generation running inside the web process. Setting ``REDIS_URL`` switches to
answer streams on Redis and Celery workers; ``DATABASE_URL`` picks the database.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from arena.settings.environment import BASE_DIR, REDIS_URL, VAR_DIR, env


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
# How often (ms) a web process's interpreter may pass from one thread to another
# (sys.setswitchinterval, set in arena/asgi.py). Database work runs on threads beside the event
# loop; at CPython's default of 5 ms, a thread that wants the interpreter back after a database
# reply waits up to 5 ms each time, so a crowd's starts hold their threads longer and queue
# (bench/battle_latency.py: start p99 at 20 / 100 / 200 starts 0.31 / 0.86 / 1.57 s at 5 ms,
# 0.22 / 0.47 / 1.36 s at 1 ms).
WEB_SWITCH_INTERVAL_MS = env.float("WEB_SWITCH_INTERVAL_MS", default=1.0)
# Threads a web process starts battles on (arena/battles/consumers.py: why few). One keeps the
# event loop's text on time while a crowd starts at once (bench/battle_latency.py, 100 starts:
# text released while both panes show, p99 over ideal pacing 38-41 ms with one, 41-53 with two,
# 49-137 with the six of the loop's default pool); more suit a database far enough away that a
# start mostly waits on it.
WEB_START_THREADS = env.int("WEB_START_THREADS", default=1)
if WEB_START_THREADS < 1:
    raise ImproperlyConfigured(f"WEB_START_THREADS must be 1 or more, not {WEB_START_THREADS}.")
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
# Images raters attach (arena/images) are kept by the SHA-256 of their bytes in the "images"
# storage: the file system under var/images on the embedded default; in production any Django
# storage backend (IMAGES_STORAGE_BACKEND, e.g. django-storages' S3 or GCS class, with its
# options as JSON in IMAGES_STORAGE_OPTIONS). Never served as static or media files: only
# through the view that checks who sent them.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "images": {
        "BACKEND": env.str(
            "IMAGES_STORAGE_BACKEND", default="django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": env.json(
            "IMAGES_STORAGE_OPTIONS",
            default={"location": str(VAR_DIR / "images"), "allow_overwrite": True},
        ),
    },
}
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

# The cache (rate limits among others): on Redis where there is one, else this process's memory.
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
# Sessions read from Redis first, the database on a miss (arena/sessions.py): a socket's connect
# and a page cost no session query. Without Redis, each process's cache would be its own, so a
# logout in one would leave the session standing in another's: the database alone, then.
SESSION_ENGINE = "arena.sessions" if REDIS_URL else "django.contrib.sessions.backends.db"
# The public leaderboard pages and exports, rendered once per snapshot and kept in that cache
# (ranking/public_cache.py); off renders every request, as before (the bench's baseline).
PUBLIC_PAGE_CACHE = env.bool("PUBLIC_PAGE_CACHE", default=True)
# How long browsers and shared caches may show a visitor's copy without asking again: a new
# snapshot reaches them at most this late (the server's own cache follows it at once).
PUBLIC_PAGE_MAX_AGE_S = env.int("PUBLIC_PAGE_MAX_AGE_S", default=60)
# How long a rendering is kept: an old snapshot's pages are not asked for again, and go.
PUBLIC_PAGE_CACHE_TTL_S = env.int("PUBLIC_PAGE_CACHE_TTL_S", default=86_400)

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


# The product's own knobs: arena/settings/product.py.
from arena.settings.product import *  # noqa: E402, F403

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
    "image_upload": {"user": "30/m", "network": "120/m"},
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
