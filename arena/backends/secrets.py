"""Where a backend's key may come from, and what settings may never hold.

Keys never live in the database: settings name an environment variable (``api_key_env``) or a
file (``api_key_file``). Whoever may edit a model chooses those names, so they are held to what
an operator allowed: variables whose names start with one of ``ARENA_SECRET_ENV_PREFIXES``
(by default ``ARENA_KEY_`` and the vendors' own key variables) and files inside one of
``ARENA_SECRET_DIRS`` (by default ``/run/secrets``). The server's own configuration (PATH,
DATABASE_URL, SECRET_KEY, DJANGO_*, connection URLs) is never a key, whatever the prefixes say.
The rules are checked when settings are saved and again when a key is read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from arena.backends.outbound import explicitly_allowed, shown_url

ENV_SETTING = "ARENA_SECRET_ENV_PREFIXES"
DIRS_SETTING = "ARENA_SECRET_DIRS"
DEFAULT_ENV_PREFIXES = ("ARENA_KEY_", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
DEFAULT_DIRS = ("/run/secrets",)
# The server's own configuration: never a model's key, whatever an operator's prefixes say.
_NEVER_NAMES = frozenset({
    "PATH", "HOME", "PWD", "USER", "SHELL", "SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL",
    "REDIS_URL", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH",
})  # fmt: skip
_NEVER_PREFIXES = ("DJANGO_", "SECRET_", "DATABASE_", "POSTGRES_", "PG", "REDIS_", "CELERY_",
                   "EMAIL_", "SENTRY_")  # fmt: skip
_NEVER_SUFFIXES = ("_URL", "_DSN")  # connection strings carry passwords of their own
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "credential"}
)
_REFERENCE_SUFFIXES = ("_env", "_file")
# Header names that carry credentials (Authorization, X-Api-Key, X-Auth-Token, Cookie...).
_SECRET_HEADER_PARTS = ("auth", "key", "token", "secret", "cookie", "session", "password",
                        "passwd", "credential", "signature")  # fmt: skip
# What keys look like: vendors' prefixes, an auth scheme, or a long random-looking token.
_KEY_SHAPES = re.compile(
    r"^\s*(bearer|basic|token|digest)\s+\S|^(sk|rk|pk)[-_]|^(AIza|xai-|gsk_|hf_|ghp_|gho_"
    r"|github_pat_|glpat-|xox[abp]-|eyJ)",
    re.IGNORECASE,
)
# Keys whose prefix names their vendor: never anything else, wherever they are.
_VENDOR_KEY = re.compile(
    r"^\s*(sk-(proj-|ant-|live-|or-)?[A-Za-z0-9_\-]{16,}|AIza[A-Za-z0-9_\-]{20,}|xai-|gsk_|hf_"
    r"|ghp_|github_pat_|glpat-|xox[abp]-)"
)
_LONG_TOKEN = re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_\-+/=.~]{32,}$")
POINTER = "name the environment variable in 'api_key_env' (or a file in 'api_key_file')"


# A vendor's own key variable is sent only to that vendor's API (or to a host the operator
# named in ARENA_BACKEND_ALLOW_HOSTS, such as their own gateway): whoever may edit a model must
# not be able to point it elsewhere and receive the key.
VENDOR_KEY_HOSTS = {
    "OPENAI_API_KEY": "api.openai.com",
    "ANTHROPIC_API_KEY": "api.anthropic.com",
    "GEMINI_API_KEY": "generativelanguage.googleapis.com",
}


class SecretMissing(Exception):
    pass


def key_destination_problem(env_name: object, url: object) -> str:
    """Why the key in ``env_name`` may not be sent to ``url``; "" when it may."""
    home = VENDOR_KEY_HOSTS.get(str(env_name or ""))
    if home is None or not isinstance(url, str):
        return ""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        host = ""
    if host == home or explicitly_allowed(host):
        return ""
    return (
        f"The key in {env_name} is sent only to {home} (or a host named in "
        f"ARENA_BACKEND_ALLOW_HOSTS), not to {host or 'this URL'}: put this server's key in "
        "a variable of its own (for example ARENA_KEY_...) and name it in 'api_key_env'."
    )


def _listed(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = getattr(settings, name, None)
    if value is None:
        return default
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(v).strip() for v in value if str(v).strip())


def env_problem(name: str) -> str:
    """Why a backend may not read the variable ``name``; "" when it may."""
    if not _ENV_NAME.match(name):
        # Not echoed: a pasted key is the likeliest thing to be here.
        return "That is not the name of an environment variable (letters, digits, underscores)."
    upper = name.upper()
    never = (
        upper in _NEVER_NAMES
        or upper.startswith(_NEVER_PREFIXES)
        or (upper.startswith("ARENA_") and not upper.startswith("ARENA_KEY_"))
        or upper.endswith(_NEVER_SUFFIXES)
    )
    prefixes = _listed(ENV_SETTING, DEFAULT_ENV_PREFIXES)
    if never or not name.startswith(prefixes):
        return (
            f"The environment variable {name} is not one a backend may read: its name must "
            f"start with one of {ENV_SETTING} ({', '.join(prefixes) or 'none set'}), and the "
            "server's own settings (PATH, DATABASE_URL, SECRET_KEY, DJANGO_*...) never qualify."
        )
    return ""


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _servers_own(path: Path) -> bool:
    """A file the server itself reads its settings from (SECRET_KEY_FILE and any other
    ``*_FILE`` variable not named for backends' keys), or a cluster's service-account token,
    even inside an allowed folder (/run/secrets holds Docker's secrets of every service)."""
    if "kubernetes.io" in path.parts:
        return True
    prefixes = _listed(ENV_SETTING, DEFAULT_ENV_PREFIXES)
    for variable, value in os.environ.items():
        if variable.endswith("_FILE") and value and not variable.startswith(tuple(prefixes)):
            try:
                if Path(value).resolve() == path:
                    return True
            except (OSError, RuntimeError, ValueError):
                continue
    return False


def file_problem(name: str) -> str:
    """Why a backend may not read the file ``name``; "" when it may. The path is resolved
    (links and ``..`` followed) before it is compared with ``ARENA_SECRET_DIRS``."""
    dirs = _listed(DIRS_SETTING, DEFAULT_DIRS)
    try:
        path = Path(name).resolve()
        folders = [Path(d).resolve() for d in dirs if Path(d).is_absolute()]
    except (OSError, RuntimeError, ValueError):
        folders, path = [], Path("/")
    var_dir = Path(str(getattr(settings, "BASE_DIR", "/nonexistent"))).resolve() / "var"
    if not Path(name).is_absolute() or _within(path, var_dir) or _servers_own(path):
        folders = []
    if not any(_within(path, folder) and path != folder for folder in folders):
        return (
            f"The secret file {name} is not one a backend may read: it must be an absolute "
            f"path inside one of {DIRS_SETTING} ({', '.join(dirs) or 'none set'})."
        )
    return ""


def secret(conf: dict, name: str = "api_key") -> str | None:
    """A credential named by ``<name>_env`` (environment) or ``<name>_file`` (a secret file),
    read only where the rules above allow; SecretMissing says why not."""
    env_name = conf.get(f"{name}_env")
    if env_name:
        if problem := env_problem(str(env_name)):
            raise SecretMissing(problem)
        value = os.environ.get(env_name)
        if not value:
            raise SecretMissing(f"The environment variable {env_name} is not set.")
        return value.strip()
    file_name = conf.get(f"{name}_file")
    if file_name:
        if problem := file_problem(str(file_name)):
            raise SecretMissing(problem)
        try:
            return Path(file_name).read_text().strip()
        except OSError:
            raise SecretMissing(f"The secret file {file_name} cannot be read.") from None
    return None


def _names_a_secret(name: str) -> bool:
    """True for api_key, apiKey, access_token, client-secret...; not for answer_tokens."""
    # Whole words only, so length settings like max_tokens or tokens_per_s stay allowed.
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return bool(_SECRET_WORDS.intersection(re.split(r"[^a-z0-9]+", spaced)))


def looks_like_key(value: object) -> bool:
    """Whether a string looks like a credential: a vendor's key prefix, an auth scheme
    ("Bearer ..."), a JWT, or a long random token."""
    return isinstance(value, str) and bool(
        _KEY_SHAPES.search(value) or _LONG_TOKEN.match(value.strip())
    )


def header_problems(headers: object, where: str = "headers") -> list[str]:
    """Extra headers may not carry a credential, by their name or by the look of their value."""
    if not isinstance(headers, dict):
        return []
    problems = []
    for header, value in headers.items():
        lowered = str(header).lower()
        if any(part in lowered for part in _SECRET_HEADER_PARTS) or looks_like_key(value):
            problems.append(
                f"'{where}.{header}' looks like a credential. Never store a key in a header: "
                f"{POINTER}, and the backend sends it as its API expects."
            )
    return problems


# How deep settings may nest (the model form refuses more): few enough levels that reading
# them, as the admin's redacted display does, never runs out of stack.
MAX_DEPTH = 20


def secret_problems(value: object, where: str = "") -> list[str]:
    """What is wrong with backend settings that would store a secret instead of naming where
    it is, or name a place no key may come from; empty when they are fine."""
    problems: list[str] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            problems += secret_problems(item, f"{where}[{i}]")
    if not isinstance(value, dict):
        return problems
    for key, item in value.items():
        name = f"{where}.{key}" if where else str(key)
        lowered = str(key).lower()
        if lowered.endswith(_REFERENCE_SUFFIXES):
            if lowered.endswith("_env"):
                # A pasted key in the *_env slot would be exactly the leak this check prevents.
                if not (isinstance(item, str) and _ENV_NAME.match(item)):
                    problems.append(
                        f"'{name}' must be the name of an environment variable (letters, "
                        "digits and underscores), not its value."
                    )
                elif problem := env_problem(item):
                    problems.append(f"'{name}': {problem}")
            elif isinstance(item, str) and (problem := file_problem(item)):
                problems.append(f"'{name}': {problem}")
            continue
        if _names_a_secret(str(key)):
            problems.append(
                f"'{name}' looks like a secret. Never store a key here: put it in an environment "
                f"variable and give its name as '{key}_env' (or a file path as '{key}_file')."
            )
        elif isinstance(item, str) and _VENDOR_KEY.match(item):
            problems.append(
                f"'{name}' holds what looks like an API key. Never store one: {POINTER}."
            )
        if lowered == "headers" and isinstance(item, dict):
            problems += header_problems(item, name)  # each header once, by its own rule
            continue
        problems += secret_problems(item, name)
    return problems


REDACTED = "[redacted]"


def redacted(value: object, key: str = "", *, in_headers: bool = False, depth: int = 0) -> object:
    """Settings as the admin shows them: any value that is, or looks like, a key replaced,
    and URLs without user names, passwords or query strings (older rows may hold them); what
    nests deeper than MAX_DEPTH (a form refused for it shows what was typed) hidden whole."""
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        return REDACTED
    if isinstance(value, dict):
        return {
            k: redacted(
                v, str(k), in_headers=in_headers or str(k).lower() == "headers", depth=depth + 1
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redacted(v, key, depth=depth + 1) for v in value]
    if not isinstance(value, str):
        return value
    lowered = key.lower()
    if lowered.endswith(_REFERENCE_SUFFIXES):
        return value if _ENV_NAME.match(value) or lowered.endswith("_file") else REDACTED
    if _names_a_secret(key) or _VENDOR_KEY.match(value):
        return REDACTED
    # By its look only in a header: elsewhere a long queue name or a mock's "Token ..."
    # prefix would be replaced, and saved so, by an admin who changed nothing.
    if in_headers and (any(p in lowered for p in _SECRET_HEADER_PARTS) or looks_like_key(value)):
        return REDACTED
    if "://" in value:
        return shown_url(value)
    return value
