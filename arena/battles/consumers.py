"""The websocket edge of a battle: parse, call a service, relay paced text. Nothing else.

Frames sent to the browser carry sides ("a"/"b"), never models; both sides travel in one frame
per tick so not even frame timing tells them apart. Names go out only after the vote. The text
comes from the answer streams through this process's one pacing schedule (``live``), not a
channel layer, so any web process can show any battle.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.urls import reverse
from redis import RedisError

from accounts import ratelimits
from accounts.models import User
from arena.battles import frames, selectors, services
from arena.battles.ending import battle_void, battle_void_overdue, turn_deadline_s
from arena.battles.live import Watch, schedule, socket_closed
from arena.battles.sockets import registry
from arena.battles.turn_shown import turn_shown
from arena.core.errors import ServiceError
from arena.core.text import text_clean
from arena.integrity.checks import has_finding, redact
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import identity_terms
from arena.records.models import Battle, Turn

log = logging.getLogger(__name__)

# Battle starts run on threads of their own, few of them (settings.WEB_START_THREADS): a start
# is mostly Python under the interpreter's lock, so on a busy machine more threads start no more
# battles a second; they only take the interpreter from the event loop that paces every battle
# already streaming, whose text then waits. The price: a start stalled on the database (a row
# lock) or the broker holds up the process's next starts until it ends or times out. Not
# asgiref's one thread-sensitive thread either: a crowd's starts would queue ahead of every
# other database call of the process.
_STARTS = ThreadPoolExecutor(settings.WEB_START_THREADS, thread_name_prefix="battle-start")

# Delta frames, compact (no spaces after separators): they are most of what is sent.
_FRAME = json.JSONEncoder(separators=(",", ":"))

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
        self.watch: Watch | None = None
        self.terms: tuple[str, ...] = ()
        self.leak_noticed = False
        self.question_noticed = False
        self.tasks: set[asyncio.Task] = set()
        self.end_work: asyncio.Task | None = None  # the last of _in_order's
        self.socket_id = uuid.uuid4().hex
        # Frames straight to daphne's socket where the server is daphne (battles.frames).
        self._write = frames.writer(self.base_send)
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=4401)  # before accept: the handshake is refused
            return
        cap = settings.ARENA["SOCKETS_PER_RATER"]
        try:
            allowed = await registry().add(user_id=self.user.pk, socket_id=self.socket_id, cap=cap)
        except RedisError:
            allowed = True  # nothing can be counted; each action will say Redis is away
        await self.accept()
        if not allowed:
            # Accepted first, so the page is told why rather than left reconnecting.
            await self._error(
                "too_many_sockets",
                f"You have {cap} battle pages open already. Close one, then reload this page.",
            )
            await self.close(code=4429)

    async def disconnect(self, code: int) -> None:
        self._leave()
        try:
            await registry().remove(self.socket_id)
        except RedisError:  # the entry lapses on its own
            log.warning("could not count a closed socket out")

    # Browser -> server -------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        limit = settings.ARENA["WS_MESSAGE_MAX_BYTES"]
        if text_data is None:
            return await self._error("binary_frame", "Send messages as text, not binary.")
        if len(text_data) > limit:
            return await self._error(
                "message_too_large", f"Messages are limited to {limit:,} bytes."
            )
        try:
            message = json.loads(text_data)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
            return await self._error("malformed", "That message was not valid JSON.")
        if not isinstance(message, dict) or not isinstance(message.get("action"), str):
            return await self._error("malformed", "A message needs an 'action'.")
        handler = {
            "start": self._start,
            "resume": self._resume,
            "follow_up": self._follow_up,
            "vote": self._vote,
            "stop": self._stop,
        }.get(message["action"])
        if handler is None:
            action = text_clean(message["action"])[:40]
            return await self._error("unknown_action", f"Unknown action {action!r}.")
        try:
            await handler(message)
        except ServiceError as exc:
            await self._error(exc.code, exc.message)
        except (DatabaseError, RedisError, OSError):
            # The database or Redis is briefly gone: say so and keep the socket; the page may
            # try again.
            log.exception("a battle action failed for want of the database or Redis")
            await self._error(
                "unavailable", "The arena is briefly unavailable. Try again in a moment."
            )

    async def _start(self, message: dict) -> None:
        prompt_id = message.get("prompt_id")
        if isinstance(prompt_id, bool) or not isinstance(prompt_id, int):
            prompt_id = None
        # Counted first, so a refusal writes nothing and leaves this socket's battle as it was.
        if limited := await ratelimits.check_websocket("battle_start", self.scope):
            return await self._send(limited.frame())
        # The rater's battle still generating or waiting, on this socket or any other, is
        # abandoned by the new one (battle_start): this socket stops showing it first.
        self._leave()
        # The battle, its first turn's sides and the names to redact (which hold for the whole
        # battle), on this process's start threads (_STARTS: why so few).
        started = await database_sync_to_async(
            _battle_begin, thread_sensitive=False, executor=_STARTS
        )(
            rater=self.user,
            text=message.get("prompt"),
            prompt_id=prompt_id,
            images=message.get("images"),
        )
        battle, turn, self.terms = started.battle, started.turn, started.terms
        self.battle_id = battle.pk
        self.leak_noticed = False
        await self._send({"type": "battle", "battle": str(battle.pk), "turn": 0})
        if has_finding(battle.integrity_flags, QUESTION):
            await self._notice(QUESTION, IDENTITY_QUESTION_NOTICE)
        self._watch(turn)

    async def _resume(self, message: dict) -> None:
        """Show a battle of this rater's again, from the start of its last turn: the answer
        streams (or, once an answer has ended, the database) hold its text, whichever web
        process started it. A refusal leaves the socket's current battle as it was."""
        if limited := await ratelimits.check_websocket("follow_up", self.scope):
            return await self._send(limited.frame())
        if not isinstance(message.get("battle"), str):
            raise ServiceError("no_battle", "Say which battle to resume.")
        battle, turn, terms, earlier, text = await database_sync_to_async(_battle_rejoin)(
            battle_id=message["battle"], rater=self.user
        )
        self._leave()
        self.battle_id, self.terms = battle.pk, terms
        self.leak_noticed = False
        # A page that lost its panes (reloaded, reopened) rebuilds the earlier turns from these:
        # answers as they were shown, redacted.
        for past in earlier:
            for side in ("a", "b"):
                past[side] = redact(past.get(side, ""), terms)
        await self._send(
            {
                "type": "battle",
                "battle": str(battle.pk),
                "turn": turn.index,
                "resumed": True,
                "earlier": earlier,
                "text": text,
                # An image battle's images: the same for both sides, the rater's own.
                **_images_shown(battle),
            }
        )
        self._watch(turn)

    async def _follow_up(self, message: dict) -> None:
        if limited := await ratelimits.check_websocket("follow_up", self.scope):
            return await self._send(limited.frame())
        if self.battle_id is None:
            raise ServiceError("no_battle", "Start a battle first.")
        turn, sides = await database_sync_to_async(_turn_add)(
            battle_id=self.battle_id, rater=self.user, text=message.get("text")
        )
        await self._send({"type": "turn", "turn": turn.index})
        if has_finding(turn.battle.integrity_flags, QUESTION) and not self.question_noticed:
            await self._notice(QUESTION, IDENTITY_QUESTION_NOTICE)
        self._watch(sides)

    async def _named(self, message: dict, action: str, missing: str) -> object | None:
        """The battle an action names (else this socket's), once the action's rate limit lets
        it through; None when the limit refused it (the refusal is sent)."""
        if limited := await ratelimits.check_websocket(action, self.scope):
            await self._send(limited.frame())
            return None
        battle_id = message.get("battle") or self.battle_id
        if battle_id is None:
            raise ServiceError("no_battle", missing)
        return battle_id

    async def _vote(self, message: dict) -> None:
        if (battle_id := await self._named(message, "vote", "Start a battle first.")) is None:
            return
        # Off the thread every thread-sensitive call of this process queues for, as a start
        # is: a vote's transaction locks only its own rater's, battle's and prompt's rows, so a
        # crowd's votes run side by side, each thread on its own connection.
        reveal = await database_sync_to_async(_vote_cast, thread_sensitive=False)(
            battle_id=battle_id, rater=self.user, choice=message.get("choice")
        )
        await self._send({"type": "revealed", **reveal})

    async def _stop(self, message: dict) -> None:
        battle_id = await self._named(message, "battle_stop", "There is no battle to stop.")
        if battle_id is None:
            return
        battle = await database_sync_to_async(services.battle_stop)(
            battle_id=battle_id, rater=self.user
        )
        if self.battle_id == battle.pk:
            self._leave()
        await self._send({"type": "stopped", "battle": str(battle.pk)})

    # The turn being shown (live.Viewer) ----------------------------------------------------

    def _watch(self, turn: selectors.TurnSides) -> None:
        self.watch = Watch.for_turn(
            viewer=self,
            battle_id=self.battle_id,
            turn=turn,
            terms=self.terms,
            deadline_s=turn_deadline_s(),
        )
        schedule().add(self.watch)

    async def send_frame(self, payload: dict) -> None:
        # Raises when the socket has closed: the schedule then leaves this turn (never voids it).
        # Straight to the server (what self.send does, less its checks), or to daphne's socket
        # itself: frames are most of what a crowd's sockets are sent.
        text = _FRAME.encode(payload)
        if self._write is not None and self._write(text.encode()):
            return
        await self.base_send({"type": "websocket.send", "text": text})

    def answer_failed(self, watch: Watch) -> None:
        self._spawn(self._void(watch, VOID_MESSAGE))

    def answer_redacted(self, watch: Watch) -> None:
        if not self.leak_noticed:
            self.leak_noticed = True
            self._in_order(partial(self._note_redaction, watch))

    def turn_shown(self, watch: Watch) -> None:
        self._in_order(partial(self._complete, watch))

    def turn_overdue(self, watch: Watch) -> None:
        self._in_order(partial(self._check_deadline, watch))

    def pacing_failed(self, watch: Watch) -> None:
        self._in_order(partial(self._end_unpaceable, watch))

    # The database work below runs off the thread every thread-sensitive call of this process
    # queues for (a crowd's shown turns would wait there for each other, one at a time), in
    # the order the schedule reported it (_in_order): a leak is noted before its turn is shown.

    async def _note_redaction(self, watch: Watch) -> None:
        await database_sync_to_async(services.battle_note_redaction, thread_sensitive=False)(
            battle_id=watch.battle_id
        )
        if watch is self.watch:
            await self._notice(VoteFlag.Reason.IDENTITY_LEAK, IDENTITY_LEAK_NOTICE)

    async def _complete(self, watch: Watch) -> None:
        await database_sync_to_async(turn_shown, thread_sensitive=False)(turn_id=watch.turn_id)
        if watch is self.watch:
            await self._send({"type": "turn_complete"})

    async def _check_deadline(self, watch: Watch) -> None:
        overdue = database_sync_to_async(battle_void_overdue, thread_sensitive=False)
        if await overdue(turn_id=watch.turn_id):
            schedule().remove(watch)
            await self._void(watch, TIMEOUT_MESSAGE)

    async def _end_unpaceable(self, watch: Watch) -> None:
        void = database_sync_to_async(battle_void, thread_sensitive=False)
        await void(battle_id=watch.battle_id, reason="pacing failed")
        await self._void(watch, VOID_MESSAGE)

    async def _notice(self, code: str, message: str) -> None:
        if code == QUESTION:
            self.question_noticed = True
        await self._send({"type": "notice", "code": code, "message": message})

    async def _void(self, watch: Watch, message: str) -> None:
        if watch is self.watch:
            await self._send({"type": "void", "message": message})

    # Plumbing ----------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task:
        """Work of this socket's that the schedule must not wait for; a failure is logged."""
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _in_order(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """This socket's end work, each piece once the one before it has ended (failed or
        not), so one socket's pieces never overtake each other while sockets run side by side."""
        before = self.end_work

        async def after() -> None:
            if before is not None:
                await asyncio.wait([before])  # its failure is _done's to log
            await work()

        self.end_work = self._spawn(after())

    def _done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("battle socket work failed", exc_info=task.exception())

    def _leave(self) -> None:
        if self.watch is not None:
            schedule().remove(self.watch)
        self.watch = None
        self.battle_id = None

    async def _send(self, payload: dict) -> None:
        try:
            await self.send(text_data=json.dumps(payload))
        except Exception as exc:
            if not socket_closed(exc):
                raise
            # Closed under a reply (a reload): nobody is left to tell, and what the action did
            # stands; the page that comes back resumes from the database.
            log.info("a battle socket closed before a reply: %r", exc)

    async def _error(self, code: str, message: str) -> None:
        await self._send({"type": "error", "code": code, "message": message})


# Each action's database work, in one call each, so an action costs one trip to a database
# thread and one connection (a counted start a second trip first, for its rate limit).


def _images_shown(battle: Battle) -> dict:
    """The page shows an image battle's images above both panes again: their addresses."""
    if not battle.images:
        return {}
    return {"images": [reverse("image", args=[i["sha256"]]) for i in battle.images]}


def _battle_begin(
    *, rater: User, text: object, prompt_id: int | None, images: object = None
) -> services.Started:
    return services.battle_begin(rater=rater, text=text, prompt_id=prompt_id, images=images)


def _battle_rejoin(
    *, battle_id: object, rater: User
) -> tuple[Battle, selectors.TurnSides, tuple[str, ...], list[dict], str]:
    battle = services.battle_rejoin(battle_id=battle_id, rater=rater)
    turn = selectors.turn_sides(battle_id=battle.pk)
    earlier, text = selectors.turns_before(battle_id=battle.pk, index=turn.index)
    return battle, turn, identity_terms(), earlier, text


def _turn_add(*, battle_id: object, rater: User, text: object) -> tuple[Turn, selectors.TurnSides]:
    turn = services.battle_follow_up(battle_id=battle_id, rater=rater, text=text)
    return turn, selectors.turn_sides(battle_id=battle_id, index=turn.index)


def _vote_cast(*, battle_id: object, rater: User, choice: object) -> dict:
    vote = services.vote_cast(battle_id=battle_id, rater=rater, choice=choice)
    return selectors.vote_reveal(vote=vote)
