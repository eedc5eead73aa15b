"""The websocket edge of a battle: parse, call a service, relay paced text. Nothing else.

Frames sent to the browser carry sides ("a"/"b"), never models; both sides travel in one frame
per tick so not even frame timing tells them apart. Names go out only after the vote.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from functools import partial

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from accounts import ratelimits
from arena.battles import selectors, services
from arena.battles.pacing import Pacer
from arena.core.errors import ServiceError
from arena.generation.services import battle_void_overdue, turn_deadline_s
from arena.generation.worker import battle_group
from arena.integrity.checks import has_finding, name_tail, redact
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import identity_terms
from arena.integrity.services import battle_note_redaction

QUESTION = VoteFlag.Reason.IDENTITY_QUESTION
VOID_MESSAGE = (
    "One of the models could not finish its answer, so this battle is void and will not "
    "count. Start a new battle."
)
IDENTITY_QUESTION_NOTICE = (
    "Asking a model who it is would unblind the battle, so this battle's vote will be recorded "
    "but will not count toward the leaderboard."
)
IDENTITY_LEAK_NOTICE = (
    "One of the answers named a model or its maker (hidden here), so this battle's vote will be "
    "recorded but will not count toward the leaderboard."
)
TIMEOUT_MESSAGE = (
    "The answers took too long, so this battle is void and will not count. Start a new battle."
)


class BattleConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.battle_id: uuid.UUID | None = None
        self.turn_id: int | None = None
        self.sides: dict[int, str] = {}
        self.pacer: Pacer | None = None
        self.ticker: asyncio.Task | None = None
        self.void = False
        self.terms: tuple[str, ...] = ()
        self.leak_noticed = False
        self.question_noticed = False
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=4401)  # before accept: the handshake is refused
            return
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self._leave()

    # Browser -> server -------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        limit = settings.ARENA["WS_MESSAGE_MAX_BYTES"]
        raw = text_data if text_data is not None else bytes_data
        if raw is None or len(raw) > limit:
            return await self._error(
                "message_too_large", f"Messages are limited to {limit:,} bytes."
            )
        try:
            message = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return await self._error("malformed", "That message was not valid JSON.")
        if not isinstance(message, dict) or not isinstance(message.get("action"), str):
            return await self._error("malformed", "A message needs an 'action'.")
        handler = {
            "start": self._start,
            "follow_up": self._follow_up,
            "vote": self._vote,
        }.get(message["action"])
        if handler is None:
            return await self._error("unknown_action", f"Unknown action {message['action']!r}.")
        try:
            await handler(message)
        except ServiceError as exc:
            await self._error(exc.code, exc.message)

    async def _start(self, message: dict) -> None:
        if limited := await ratelimits.check_websocket("battle_start", self.scope):
            return await self._send(limited.frame())  # first, so a refusal writes nothing
        prompt_id = message.get("prompt_id")
        if prompt_id is not None and not isinstance(prompt_id, int):
            prompt_id = None
        await self._leave()
        battle_id = uuid.uuid4()
        # Join the group before the battle exists, so no delta can be published unheard.
        await self.channel_layer.group_add(battle_group(battle_id), self.channel_name)
        self.battle_id = battle_id
        try:
            battle = await database_sync_to_async(services.battle_start)(
                rater=self.user,
                text=message.get("prompt"),
                prompt_id=prompt_id,
                battle_id=battle_id,
            )
        except ServiceError:
            await self._leave()
            raise
        turn = await database_sync_to_async(selectors.turn_sides)(battle_id=battle.pk, index=0)
        self.terms = await database_sync_to_async(identity_terms)()
        self.leak_noticed = False
        await self._send({"type": "battle", "battle": str(battle.pk), "turn": 0})
        if has_finding(battle.integrity_flags, QUESTION):
            await self._notice(QUESTION, IDENTITY_QUESTION_NOTICE)
        self._watch(turn)

    async def _follow_up(self, message: dict) -> None:
        if limited := await ratelimits.check_websocket("follow_up", self.scope):
            return await self._send(limited.frame())
        if self.battle_id is None:
            raise ServiceError("no_battle", "Start a battle first.")
        turn = await database_sync_to_async(services.battle_follow_up)(
            battle_id=self.battle_id, rater=self.user, text=message.get("text")
        )
        sides = await database_sync_to_async(selectors.turn_sides)(
            battle_id=self.battle_id, index=turn.index
        )
        await self._send({"type": "turn", "turn": turn.index})
        if has_finding(turn.battle.integrity_flags, QUESTION) and not self.question_noticed:
            await self._notice(QUESTION, IDENTITY_QUESTION_NOTICE)
        self._watch(sides)

    async def _vote(self, message: dict) -> None:
        if limited := await ratelimits.check_websocket("vote", self.scope):
            return await self._send(limited.frame())
        battle_id = message.get("battle") or self.battle_id
        if battle_id is None:
            raise ServiceError("no_battle", "Start a battle first.")
        vote = await database_sync_to_async(services.vote_cast)(
            battle_id=battle_id, rater=self.user, choice=message.get("choice")
        )
        reveal = await database_sync_to_async(selectors.vote_reveal)(vote_id=vote.pk)
        await self._send({"type": "revealed", **reveal})

    # Generation -> server (channel layer) --------------------------------------------------

    async def answer_delta(self, event: dict) -> None:
        side = self.sides.get(event["answer"])
        if side is not None and self.pacer is not None:
            self.pacer.feed(side, event["text"], seq=event.get("seq"))
            if self.pacer.redactions and not self.leak_noticed:
                self.leak_noticed = True
                await database_sync_to_async(battle_note_redaction)(battle_id=self.battle_id)
                await self._notice(VoteFlag.Reason.IDENTITY_LEAK, IDENTITY_LEAK_NOTICE)

    async def answer_done(self, event: dict) -> None:
        side = self.sides.get(event["answer"])
        if side is None or self.pacer is None:
            return
        self.pacer.finish(side)
        if event["status"] != "ok" and not self.void:
            await self._void(VOID_MESSAGE)

    # Pacing ------------------------------------------------------------------------------

    def _watch(self, turn: selectors.TurnSides) -> None:
        self.turn_id = turn.turn_id
        self.sides = turn.sides
        conf = settings.ARENA
        self.pacer = Pacer(
            chars_per_tick=conf["PACE_CHARS"],
            redact=partial(redact, terms=self.terms),
            hold=partial(name_tail, terms=self.terms),
        )
        self.void = False
        self.ticker = asyncio.create_task(self._tick_loop(conf["PACE_TICK_MS"] / 1000))

    async def _tick_loop(self, period: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + turn_deadline_s()
        pacer = self.pacer
        while pacer is self.pacer and not self.void:
            out = pacer.tick()
            if out["a"] or out["b"]:
                await self._send({"type": "delta", "a": out["a"], "b": out["b"]})
            if pacer.all_shown:
                await database_sync_to_async(services.turn_mark_shown)(turn_id=self.turn_id)
                await self._send({"type": "turn_complete"})
                return
            if loop.time() > deadline and await database_sync_to_async(battle_void_overdue)(
                turn_id=self.turn_id
            ):
                await self._void(TIMEOUT_MESSAGE)
                return
            await asyncio.sleep(period)

    async def _notice(self, code: str, message: str) -> None:
        if code == QUESTION:
            self.question_noticed = True
        await self._send({"type": "notice", "code": code, "message": message})

    async def _void(self, message: str) -> None:
        self.void = True
        await self._send({"type": "void", "message": message})

    # Plumbing ----------------------------------------------------------------------------

    async def _leave(self) -> None:
        if self.ticker is not None and self.ticker is not asyncio.current_task():
            self.ticker.cancel()
        self.ticker = None
        self.pacer = None
        self.sides = {}
        if self.battle_id is not None:
            await self.channel_layer.group_discard(battle_group(self.battle_id), self.channel_name)
            self.battle_id = None

    async def _send(self, payload: dict) -> None:
        await self.send(text_data=json.dumps(payload))

    async def _error(self, code: str, message: str) -> None:
        await self._send({"type": "error", "code": code, "message": message})
