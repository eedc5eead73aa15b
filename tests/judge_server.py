"""A judge's side of the wire for tests: the mock model server, keeping every chat request it
receives, and the pattern of the tags a judge prompt's blocks may carry."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field

from arena.devtools.mock_server import MockServer

TAG = re.compile(r"<\s*/?\s*(?:answer|prompt)[^>\n]*>", re.IGNORECASE)


@dataclass
class RecordingServer(MockServer):
    """The mock model server, keeping the body of every chat request it receives."""

    bodies: list[dict] = field(default_factory=list)

    async def respond(self, request, writer) -> None:
        if request.path == "/v1/chat/completions" and request.method == "POST":
            with contextlib.suppress(ValueError):
                self.bodies.append(json.loads(request.body))
        await super().respond(request, writer)

    def judged(self, model_id: str = "judge-1") -> list[tuple[str, str]]:
        """(system, user) of every request the judge received."""
        return [
            (b["messages"][0]["content"], b["messages"][-1]["content"])
            for b in self.bodies
            if b["model"] == model_id
        ]
