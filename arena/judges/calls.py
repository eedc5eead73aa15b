"""The judge's calls, one loop for every strategy: a request sent (at temperature 0 unless the
judge refuses it, with the reply's JSON schema where its backend takes one), its reply read by
the strategy, asked again when it cannot be read, and every call kept with its cost."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeVar

from channels.db import database_sync_to_async

from arena.backends.base import ChatRequest, Image, Message
from arena.backends.registry import backend_class, backend_for
from arena.catalog import costs
from arena.catalog.models import ModelEntry
from arena.generation.runner import discard, stream_answer

RETRIES = 2  # a reply that cannot be read is asked for again this many times
ATTEMPTS = 1 + RETRIES  # the most calls one question can take

T = TypeVar("T")


class ReplyError(ValueError):
    """A judge reply that does not follow the form asked for; the message says how."""


def json_object(reply: str) -> dict:
    """The JSON object a reply holds (bare, or in one fenced code block)."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ReplyError("the reply is not JSON") from None
    if not isinstance(data, dict):
        raise ReplyError("the reply is not a JSON object")
    return data


@dataclass(frozen=True)
class Usage:
    """What the requests of one call used: tokens (None where a backend sent no count and no
    text came back), and the cost's status as an answer's is counted (catalog.costs)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool = False
    cost: Decimal | None = None  # None: it cannot be told
    cost_status: str = ""

    def plus(self, result, cost: Decimal | None, status: str) -> Usage:
        """This usage with one more request's ``result`` (a StreamResult) and its cost."""
        first = not self.cost_status

        def add(mine: int | None, theirs: int | None) -> int | None:
            return theirs if first else None if mine is None or theirs is None else mine + theirs

        return Usage(
            input_tokens=add(self.input_tokens, result.input_tokens),
            output_tokens=add(self.output_tokens, result.output_tokens),
            tokens_estimated=self.tokens_estimated or result.tokens_estimated,
            cost=cost if first else None if cost is None or self.cost is None else cost + self.cost,
            cost_status=status if first else costs.combined_status([self.cost_status, status]),
        )


@dataclass(frozen=True)
class Call:
    """One request to the judge and its reply, kept for audit; ``problem`` empty: it was used."""

    purpose: str
    attempt: int
    order: list[str]
    request: str
    reply: str
    problem: str
    temperature_sent: bool
    schema_sent: bool
    cost: Decimal  # at the judge's list price (0 where it has none)
    usage: Usage = field(default_factory=Usage)  # its tokens and cost status


class JudgeCaller:
    """Calls to one judge model for one judgement; every call is kept in ``calls``."""

    def __init__(
        self,
        model: ModelEntry,
        *,
        system: str,
        max_chars: int,
        on_call: Callable[[Call], Awaitable[None]] | None = None,
        temperature_fallback: bool = True,
        images: tuple[Image, ...] = (),
    ) -> None:
        self.model, self.system, self.max_chars = model, system, max_chars
        self.images = images  # what the judged models were shown, shown to the judge with each ask
        self.on_call = on_call  # told of each call as it ends (a record that outlives a crash)
        self.backend = backend_for(model.backend, model.backend_settings)
        self.calls: list[Call] = []
        self.temperature = True
        self.temperature_dropped = False
        # Asked once without it after a refusal: not again (never, where the strategy says so).
        self.temperature_tried = not temperature_fallback
        # The backend's class says whether it takes a JSON schema for the reply; the model's
        # settings say whether this provider honours it ("structured_output": true).
        self.structured = bool(model.backend_settings.get("structured_output")) and (
            backend_class(model.backend).takes_json_schema
        )

    async def ask(
        self,
        text: str,
        parse: Callable[[str], T],
        *,
        schema: dict | None = None,
        purpose: str = "",
        order: list[str] | None = None,
    ) -> T | None:
        """The parsed reply, or None when it could not be read every time (ATTEMPTS calls);
        ``parse`` raises ReplyError for a reply it cannot read."""
        for attempt in range(1, ATTEMPTS + 1):
            reply, problem, sent_temperature, usage = await self._call(text, schema)
            parsed = None
            if not problem:
                try:
                    parsed = parse(reply)
                except ReplyError as exc:
                    problem = str(exc)
            call = Call(purpose, attempt, list(order or []), text, reply, problem,
                        sent_temperature, self.structured and schema is not None,
                        usage.cost or Decimal("0"), usage)  # fmt: skip
            self.calls.append(call)
            if self.on_call is not None:
                await self.on_call(call)
            if not problem:
                return parsed
        return None

    async def _call(self, text: str, schema: dict | None) -> tuple[str, str, bool, Usage]:
        """(reply, problem, whether the request that answered carried temperature, the usage
        and cost of every request this took)."""
        spent = Usage()
        for attempt in range(2):
            sent_temperature = self.temperature
            params: dict = {"temperature": 0} if sent_temperature else {}
            if self.structured and schema is not None:
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "verdict", "strict": True, "schema": schema},
                }
            request = ChatRequest(
                model_id=self.model.model_id,
                messages=(Message("system", self.system), Message("user", text, self.images)),
                params=params,
            )
            result = await stream_answer(
                self.backend,
                request,
                on_delta=discard,
                max_chars=self.max_chars,
                timeout_s=self.model.timeout_s,
            )
            cost, status = await database_sync_to_async(costs.cost_now)(
                model=self.model, result=result
            )
            spent = spent.plus(result, cost, status)
            # A backend never passes on an upstream's error text (backends.errors), so a refused
            # temperature reads as any refused request: asked once more without it, and left
            # out from then on (the judgement records that) only when that works.
            refused = result.error_kind == "bad_request"
            if attempt == 0 and refused and self.temperature and not self.temperature_tried:
                self.temperature, self.temperature_tried = False, True
                continue
            if attempt == 1:
                self.temperature_dropped = result.status == "ok"
                self.temperature = not self.temperature_dropped  # else it was not the cause
            if result.status != "ok":
                problem = f"the judge failed: {result.error_message}"
                return result.text, problem, sent_temperature, spent
            return result.text, "", sent_temperature, spent
        return "", "the judge rejected the request", self.temperature, spent
