"""A rater's battle socket to a real server that behaves as the page does after a fault, for
fault tests and ``bench/faults.py``: an action answered ``unavailable`` is sent again with
backoff, and a socket that drops is opened again and the unanswered action sent again (a vote
always names its battle, so a repeat means the same and is answered with the reveal).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0)  # the page's (arena.js), here capped and repeated


@dataclass
class Tally:
    """What a client went through: sends, retries after 'unavailable', reconnects."""

    sent: int = 0
    unavailable: int = 0
    reconnects: int = 0
    first_trouble: float | None = None  # monotonic time of the first failure
    recovered: float | None = None  # of the first success after it
    log: list[str] = field(default_factory=list)

    def trouble(self) -> None:
        if self.first_trouble is None:
            self.first_trouble = time.monotonic()

    def success(self) -> None:
        if self.first_trouble is not None and self.recovered is None:
            self.recovered = time.monotonic()


class RaterSocket:
    def __init__(self, url: str, cookie: str, *, patience_s: float = 60.0) -> None:
        self.url = url
        self.cookie = cookie
        self.patience_s = patience_s
        self.sock = None
        self.tally = Tally()

    async def __aenter__(self) -> RaterSocket:
        await self._open()
        return self

    async def __aexit__(self, *exc) -> None:
        if self.sock is not None:
            await self.sock.close()

    async def _open(self) -> None:
        from websockets.asyncio.client import connect

        self.sock = await connect(
            f"ws://{urlsplit(self.url).netloc}/ws/battle/",
            additional_headers={"Cookie": self.cookie, "Origin": self.url},
            open_timeout=10,
        )

    async def _reopen(self, deadline: float) -> None:
        """Open the socket again, as the page does, until the server takes it."""
        self.tally.reconnects += 1
        for attempt in range(1_000_000):
            try:
                await self._open()
                return
            except Exception as exc:  # refused, reset, timed out: the server is not back yet
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the server did not come back: {exc}") from exc
                await asyncio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])

    async def request(self, payload: dict, *until: str) -> list[dict]:
        """Send ``payload``; every frame up to the first whose type is one of ``until`` or an
        error that is not ``unavailable`` (the last frame), through any retries."""
        from websockets.exceptions import ConnectionClosed

        deadline = time.monotonic() + self.patience_s
        frames: list[dict] = []
        tries = 0
        while True:
            try:
                await self.sock.send(json.dumps(payload))
                self.tally.sent += 1
                while True:
                    left = max(0.1, deadline - time.monotonic())
                    frame = json.loads(await asyncio.wait_for(self.sock.recv(), left))
                    frames.append(frame)
                    if frame["type"] == "error" and frame.get("code") == "unavailable":
                        break
                    if frame["type"] in until or frame["type"] == "error":
                        self.tally.success()
                        return frames
            except (ConnectionClosed, OSError):
                self.tally.trouble()
                self.tally.log.append("dropped")
                await self._reopen(deadline)
                continue
            self.tally.trouble()
            self.tally.unavailable += 1
            if time.monotonic() > deadline:
                raise TimeoutError(f"still unavailable after {self.patience_s:g} s")
            await asyncio.sleep(BACKOFF_S[min(tries, len(BACKOFF_S) - 1)])
            tries += 1

    async def vote(self, battle_id: str, choice: str) -> dict:
        frames = await self.request(
            {"action": "vote", "battle": battle_id, "choice": choice}, "revealed"
        )
        return frames[-1]

    async def battle(self, prompt: str) -> tuple[str, dict]:
        """Start a battle and wait for it to be shown whole: its id and the last frame."""
        frames = await self.request({"action": "start", "prompt": prompt}, "turn_complete", "void")
        started = [f for f in frames if f["type"] == "battle"]
        return (started[-1]["battle"] if started else ""), frames[-1]
