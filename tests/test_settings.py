"""The one settings module: production values from the environment pass Django's deploy
checks."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT

PRODUCTION = {
    "SECRET_KEY": "a-production-key-" + "x7Qp2" * 12,
    "DEBUG": "false",
    "ALLOWED_HOSTS": "arena.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://arena.example.org",
    "SECURE_COOKIES": "true",
    "BEHIND_TLS_PROXY": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}


def test_production_values_pass_the_deploy_checks_with_no_warning():
    env = {**os.environ, **PRODUCTION}
    check = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    done = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_the_embedded_default_is_not_silently_production():
    # Without those values the same check warns: nothing here turns HTTPS on by itself.
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION}
    check = [sys.executable, "manage.py", "check", "--deploy"]
    done = subprocess.run(check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "security.W004" in done.stdout + done.stderr  # no HSTS


def test_a_web_process_passes_between_its_threads_at_the_configured_interval():
    probe = "import sys, arena.asgi; print(sys.getswitchinterval())"
    for configured, expected in ((None, 0.001), ("2.5", 0.0025)):
        environment = {k: v for k, v in os.environ.items() if k != "WEB_SWITCH_INTERVAL_MS"}
        if configured is not None:
            environment["WEB_SWITCH_INTERVAL_MS"] = configured
        out = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert float(out.stdout.strip().splitlines()[-1]) == expected
