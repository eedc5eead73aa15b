"""Where settings come from: the environment (and a ``.env`` file beside the code, if any)."""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

# Redis: answer streams (arena/generation/streams.py), Celery broker and cache. Without it,
# everything stays in-process. No channel layer: nothing is pushed to a particular process.
REDIS_URL = env.str("REDIS_URL", default="")
