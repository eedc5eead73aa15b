"""Progress bars of the long ranking commands: drawn on a terminal (a real pseudo-terminal
here), never into a pipe or a file, and not with --quiet."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import random
import struct
import subprocess
import sys
import termios
import threading

import pytest
from django.core.management import call_command

from tests.helpers import ROOT


@pytest.fixture
def battle_log(tmp_path):
    rng = random.Random(3)
    rows = [
        {"model_a": a, "model_b": b, "winner": rng.choice(["model_a", "model_b", "tie"])}
        for a, b in (rng.sample(["x", "y", "z"], 2) for _ in range(600))
    ]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(rows))
    return path


def _rank_on_a_terminal(log, *flags: str) -> str:
    """What ``manage.py rank`` writes to standard error when that is a terminal."""
    main, child = pty.openpty()
    # A terminal has a size (tqdm draws nothing on one of 0 columns).
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    seen: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child's end is closed: nothing more
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc = subprocess.run(
        [sys.executable, "manage.py", "rank", str(log), "--bootstrap", "300", "--min-votes", "1",
         "--style-control", *flags],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=child,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings"}, timeout=120,
    )  # fmt: skip
    os.close(child)
    reader.join(timeout=10)
    os.close(main)
    assert proc.returncode == 0
    return b"".join(seen).decode(errors="replace")


def test_rank_draws_reading_and_fitting_bars_on_a_terminal_and_none_with_quiet(battle_log):
    shown = _rank_on_a_terminal(battle_log)
    assert "reading" in shown and "600" in shown
    # Every step of both boards: 300 raw bootstrap rounds, then the style board's fit.
    assert "fitting" in shown and "100%" in shown
    assert "fitting" not in _rank_on_a_terminal(battle_log, "--quiet")


def test_rank_draws_nothing_into_a_pipe(battle_log, capfd):
    call_command("rank", str(battle_log), min_votes=1, stdout=io.StringIO(), stderr=io.StringIO())
    assert "fitting" not in capfd.readouterr().err
