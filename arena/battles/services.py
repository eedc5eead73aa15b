"""Writes of a battle: start it, follow up, mark a turn shown, cast the vote."""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from arena.battles import gold
from arena.battles.answers import answers_send
from arena.battles.draw_cache import battle_pick_models, catalog_for, shared_params
from arena.battles.ending import battle_streams_end, battle_void
from arena.battles.prompts import prompt_clean_text, prompt_for_text
from arena.battles.selectors import TurnSides
from arena.battles.start_reads import rater_read, start_state
from arena.battles.start_writes import start_write
from arena.battles.sweep import answers_resume
from arena.battles.turn_shown import turn_shown
from arena.catalog.services import params_check
from arena.core.errors import ServiceError
from arena.core.text import estimate_tokens, style_counts
from arena.images.selectors import image_records, images_for_turn
from arena.integrity.checks import asks_identity, has_finding
from arena.integrity.models import VoteFlag
from arena.integrity.services import vote_flags_record
from arena.records.models import Answer, Battle, Turn, Vote
from arena.tagging.services import votes_tag_later

log = logging.getLogger(__name__)

NOT_SENT = " Nothing was sent."


def _create_turn(*, battle: Battle, index: int, text: str) -> tuple[Turn, TurnSides]:
    turn = Turn.objects.create(battle=battle, index=index, text=text)
    # One insert for both sides (their ids come back with it).
    answers = Answer.objects.bulk_create(
        Answer(turn=turn, side=side, model=battle.model_for(side))
        for side in (Answer.Side.A, Answer.Side.B)
    )
    return turn, _turn_send(turn=turn, answers=answers)


def _turn_send(*, turn: Turn, answers: list[Answer]) -> TurnSides:
    """Queue a new turn's answers for generation (sent once the transaction commits)."""
    # One generation job per pool queue: both sides together when they share one.
    by_queue: dict[str, list[int]] = {}
    for answer in answers:
        by_queue.setdefault(answer.model.pool_queue, []).append(answer.pk)
    for queue, ids in by_queue.items():
        answers_send(answer_ids=ids, queue=queue)
    # What a viewer of the new turn needs, without reading back what was just written.
    return TurnSides(
        turn_id=turn.pk, index=turn.index, sides={a.pk: a.side for a in answers}, finished={}
    )


@dataclass(frozen=True)
class Started:
    """A battle just started: its first turn's sides and the names to redact from it."""

    battle: Battle
    turn: TurnSides
    terms: tuple[str, ...]


def battle_start(*, rater: User, text: object, **options: object) -> Battle:
    """Start a battle (``battle_begin``, which takes the same ``options``): the battle."""
    return battle_begin(rater=rater, text=text, **options).battle  # type: ignore[arg-type]


@transaction.atomic
def battle_begin(
    *,
    rater: User,
    text: object,
    prompt_id: int | None = None,
    battle_id: uuid.UUID | None = None,
    rng: random.Random | None = None,
    images: object = None,
) -> Started:
    """Start a battle: the rater's row locked, with all its checks; two reads (the stamps and
    whether a battle is to be abandoned; the prompt); the writes. What changes only on admin
    edits or with a new snapshot comes from this process's draw_cache, under those stamps."""
    # Locked first (as a vote does): one rater's starts and follow-ups, from any web process,
    # take turns, so only one battle of theirs is ever generating.
    rater = rater_read(rater=rater, lock=True)
    _rater_refusal(rater=rater)
    state = start_state(rater=rater)
    stamps = state.stamps
    text = prompt_clean_text(text, refused=NOT_SENT)
    prompt, created = prompt_for_text(text=text, prompt_id=prompt_id)
    params = shared_params()
    # The rater's own images, checked before anything is written; an image battle is never a
    # gold battle (gold items are text) and meets only models that read images.
    attached = images_for_turn(user=rater, hashes=images)
    # A gold ticket names an active item's prompt, which existed when it was drawn: with no
    # active item, or a prompt made just now, there is none to redeem, so no trip to the cache.
    gold_possible = state.gold_live and not created and not attached
    item = gold.gold_claim(rater=rater, prompt=prompt) if gold_possible else None
    if item is not None:
        # A gold battle replays a known pair of answers; the rater cannot tell it apart.
        model_a, model_b, probability = item.source.model_a, item.source.model_b, None
        if (rng or random.SystemRandom()).random() < 0.5:
            model_a, model_b = model_b, model_a
    else:
        model_a, model_b, probability = battle_pick_models(
            params=params, rng=rng, stamps=stamps, vision=bool(attached)
        )
        params_check(models=[model_a, model_b], params=params)
    # Noted as the row is written, not by a second write (battle_flag).
    flags = (
        [{"reason": QUESTION, "detail": "asked before generation"}] if asks_identity(text) else []
    )
    battle_id = battle_id or uuid.uuid4()
    if state.unwatched:  # before the new battle is written, which it keeps all the same
        _others_abandon(rater=rater, keep=battle_id)
    battle = Battle.between(
        (model_a, model_b),
        id=battle_id,
        rater=rater,
        prompt=prompt,
        system_prompt=prompt.system_prompt or settings.ARENA["SYSTEM_PROMPT"],
        params=params,
        sampling_probability=probability,
        gold=item,
        integrity_flags=flags,
        images=image_records(attached),
    )
    # In one statement where the database allows (a prompt made just now was counted as it
    # was written).
    turn, answers = start_write(battle=battle, text=text, count_prompt=not created)
    return Started(
        battle=battle,
        turn=_turn_send(turn=turn, answers=answers),
        terms=catalog_for(stamp=stamps.models).terms,
    )


ABANDONED = "abandoned: a new battle was started"


def _others_abandon(*, rater: User, keep: uuid.UUID) -> None:
    """At most one battle of a rater's is generating (or waiting to be watched), whichever web
    process or socket started it: the others are void, never counted, and their answers still
    being generated are stopped. The caller holds the rater's row lock, so two starts cannot
    both miss each other's battle."""
    others = Battle.objects.filter(rater=rater, status__in=Battle.UNWATCHED).exclude(pk=keep)
    for battle_id in others.values_list("pk", flat=True):
        battle_void(battle_id=battle_id, reason=ABANDONED, statuses=Battle.UNWATCHED)


QUESTION = VoteFlag.Reason.IDENTITY_QUESTION


def battle_flag(*, battle: Battle, reason: str, detail: str) -> bool:
    """Note an integrity finding on a running battle (locked by the caller), once per reason;
    each becomes a VoteFlag when the vote is cast. True if it is new."""
    if has_finding(battle.integrity_flags, reason):
        return False
    battle.integrity_flags = [*battle.integrity_flags, {"reason": reason, "detail": detail}]
    battle.save(update_fields=["integrity_flags"])
    return True


@transaction.atomic
def battle_note_redaction(*, battle_id: object) -> bool:
    """A name was redacted from an answer before display: that answer leaked an identity."""
    battle = Battle.objects.select_for_update().get(pk=battle_id)
    return battle_flag(
        battle=battle,
        reason=VoteFlag.Reason.IDENTITY_LEAK,
        detail="an answer named a vendor or model",
    )


def rater_may_battle(*, rater: User) -> None:
    """Refused unless the rater may start a battle now."""
    _rater_refusal(rater=rater_read(rater=rater))


def _rater_refusal(*, rater: User) -> None:
    """Raises unless this rater (a row of ``rater_read``) may start a battle or follow up."""
    if rater.is_banned:
        raise ServiceError("banned", "Your account may not start battles.")
    if (
        settings.INTEGRITY["REQUIRE_VERIFIED_EMAIL_FOR_CROWD"]
        and rater.rater_pool == User.Pool.CROWD
        and not rater.email_verified
    ):
        raise ServiceError(
            "email_unverified",
            "Please confirm your email address first: follow the link we sent you (or ask for "
            "a new one on your account's email page).",
        )
    version = terms_version()
    if version and rater.terms_version != version:
        raise ServiceError(
            "terms_not_accepted", "Please read and accept the arena's terms first (above)."
        )


def terms_version() -> str:
    """The version of the rater's terms in force; empty when there are none to accept."""
    return settings.TERMS["VERSION"] if settings.TERMS["TEXT"] else ""


def _battle_uuid(battle_id: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(battle_id))
    except ValueError:
        raise ServiceError("unknown_battle", "There is no such battle.") from None


def _battle_of(*, battle_id: object, rater: User, lock: bool = False) -> Battle:
    """The rater's battle of that id, locked with ``lock``."""
    battle_id = _battle_uuid(battle_id)
    qs = Battle.objects.select_for_update() if lock else Battle.objects
    try:
        # get, not first: first would order by the model's ordering, which costs a millisecond
        # of compiling for a primary key's one row.
        battle = qs.get(pk=battle_id)
    except Battle.DoesNotExist:
        raise ServiceError("unknown_battle", "There is no such battle.") from None
    if battle.rater_id != rater.pk:
        raise ServiceError("not_your_battle", "This battle belongs to another rater.")
    return battle


def _battle_to_vote(*, battle_id: object, rater: User) -> Battle:
    """The rater's battle with the rater's row and its prompt's, all three locked in one
    statement in the vote's lock order (FOR UPDATE OF locks each row of a result in the order
    it names the tables) and its models read with it; ``battle.rater`` is the locked row. A
    battle that is not there or not theirs is refused as it always was, a ban first."""
    try:
        return (
            Battle.objects.select_related("rater", "prompt", "model_a", "model_b")
            .select_for_update(of=("rater", "self", "prompt"))
            .get(pk=_battle_uuid(battle_id), rater=rater)
        )
    except (ServiceError, Battle.DoesNotExist):
        if User.objects.filter(pk=rater.pk, banned_at__isnull=False).exists():
            raise ServiceError("banned", "Your account may not vote.") from None
        _battle_of(battle_id=battle_id, rater=rater)  # no such battle, or another rater's
        # Theirs after all: written since that statement, so far too new to be voted on.
        raise ServiceError("unknown_battle", "There is no such battle.") from None


def battle_stop(*, battle_id: object, rater: User) -> Battle:
    """The rater stopped the battle before voting: it is void (recorded, never counted) and its
    answers still being generated are stopped. One already voted on stays as it is, and the
    rater is told so."""
    battle = _battle_of(battle_id=battle_id, rater=rater)
    battle_void(battle_id=battle.pk, reason="stopped by the rater")
    battle.refresh_from_db(fields=["status", "void_reason"])
    if battle.status == Battle.Status.VOTED:
        raise ServiceError("already_voted", "This battle has been voted on and is locked.")
    return battle


def battle_rejoin(*, battle_id: object, rater: User) -> Battle:
    """The rater's battle, to be shown again (another tab, another web process, a reconnect);
    refused once it is over. Answers whose worker is gone are handed on, or end the battle,
    now, not at the sweep: what is shown next says so."""
    battle = _battle_of(battle_id=battle_id, rater=rater)
    if battle.status in {Battle.Status.VOTED, Battle.Status.VOID}:
        _require_ready(battle, "resume it")
    answers_resume(battle_id=battle.pk)
    return battle


def _require_ready(battle: Battle, action: str) -> None:
    if battle.status == Battle.Status.VOTED:
        raise ServiceError("already_voted", "This battle has been voted on and is locked.")
    if battle.status == Battle.Status.VOID:
        raise ServiceError("battle_void", "This battle is void. Start a new battle.")
    if battle.status == Battle.Status.WAITING:
        raise ServiceError(
            "answers_incomplete", f"Watch both answers to the end before you {action}."
        )
    if battle.status != Battle.Status.READY:
        raise ServiceError(
            "answers_incomplete", f"Wait until both answers are complete before you {action}."
        )


@transaction.atomic
def battle_follow_up(*, battle_id: object, rater: User, text: object) -> Turn:
    rater = rater_read(rater=rater, lock=True)  # lock order: rater, battle
    _rater_refusal(rater=rater)
    text = prompt_clean_text(text, refused=NOT_SENT)
    battle = _battle_of(battle_id=battle_id, rater=rater, lock=True)
    _require_ready(battle, "send a follow-up")
    index = battle.turns.count()
    if index >= settings.ARENA["MAX_TURNS"]:
        raise ServiceError(
            "too_many_turns", f"A battle has at most {index} turns. Vote, or start a new battle."
        )
    # A follow-up generates too: another battle of the rater's still generating is abandoned.
    _others_abandon(rater=rater, keep=battle.pk)
    battle.status = Battle.Status.GENERATING
    battle.save(update_fields=["status"])
    if asks_identity(text):
        battle_flag(battle=battle, reason=QUESTION, detail=f"asked in turn {index + 1}")
    return _create_turn(battle=battle, index=index, text=text)[0]


def turn_mark_shown(*, turn_id: int, at: datetime | None = None) -> Battle:
    """``turn_shown``, then the battle as it is now."""
    turn_shown(turn_id=turn_id, at=at)
    return Battle.objects.get(turns__pk=turn_id)


def _answer_tokens(answer: Answer) -> int:
    """The tokens of the answer the rater read: a reasoning model's reported count includes
    its thinking, which raters never see (nor may it sway the length style feature), so its
    answer's own are estimated."""
    return estimate_tokens(answer.text) if answer.reasoning else answer.output_tokens or 0


def side_record(battle: Battle, side: str, answers: list[Answer] | None = None) -> dict:
    """What the vote log keeps of one side: the model and its answers' numbers and style.
    ``answers``: the battle's answers in turn order, when the caller has read them already
    (read here without)."""
    if answers is None:
        answers = list(Answer.objects.filter(turn__battle=battle).order_by("turn__index", "side"))
    answers = [a for a in answers if a.side == side]
    text = "\n\n".join(a.text for a in answers)
    last = answers[-1]
    return Vote.side_fields(
        model=battle.model_for(side),
        output_tokens=sum(_answer_tokens(a) for a in answers),
        input_tokens=sum(a.input_tokens or 0 for a in answers),
        tokens_estimated=any(a.tokens_estimated or a.reasoning for a in answers),
        finish_reason=last.finish_reason,
        ttft_ms=[a.ttft_ms for a in answers],
        total_ms=[a.total_ms for a in answers],
        style=style_counts(text),
    )


def vote_cast(*, battle_id: object, rater: User, choice: object) -> Vote:
    """Record the rater's verdict. Every vote is kept; the reasons it may not count are
    recorded beside it as VoteFlag rows, never by changing or dropping the vote.

    Its statements: the rater, the battle and its prompt locked, with both models; the
    battle's answers with their turns; the vote; integrity's tallies (one read); the flags, if
    any; the battle's status. The returned vote holds both models, for ``vote_reveal``."""
    if choice not in Vote.Choice.values:
        raise ServiceError(
            "unknown_choice",
            f"Unknown vote {choice!r}: choose one of {', '.join(Vote.Choice.values)}.",
        )
    try:
        with transaction.atomic():
            # Lock order: rater, battle, prompt. Locking the rater serialises one rater's
            # votes (daily cap, two tabs); locking the prompt serialises its cap count.
            battle = _battle_to_vote(battle_id=battle_id, rater=rater)
            rater = battle.rater
            if rater.is_banned:
                raise ServiceError("banned", "Your account may not vote.")
            if battle.status == Battle.Status.VOTED and (
                again := _same_vote(battle=battle, choice=choice)
            ):
                return again
            _require_ready(battle, "vote")
            # Every answer of every turn, in turn order: the log's sides, the integrity
            # findings and the streams to end all read these rows.
            answers = list(
                Answer.objects.filter(turn__battle=battle)
                .select_related("turn")
                .order_by("turn__index", "side")
            )
            last_turn = answers[-1].turn  # every turn is written with both its answers
            now = timezone.now()
            vote = Vote.objects.create(
                **Vote.fields_for(
                    battle=battle,
                    prompt=battle.prompt,
                    choice=choice,
                    decision_ms=max(0, int((now - last_turn.shown_at).total_seconds() * 1000)),
                    turns=last_turn.index + 1,
                    side_a=side_record(battle, Answer.Side.A, answers),
                    side_b=side_record(battle, Answer.Side.B, answers),
                )
            )
            vote_flags_record(vote=vote, battle=battle, rater=rater, answers=answers)
            votes_tag_later(vote_ids=[vote.pk])  # a job once this commits: never waited for
            battle.status = Battle.Status.VOTED
            battle.save(update_fields=["status"])
            battle_streams_end(battle_id=battle.pk, answer_ids=[a.pk for a in answers])
    except IntegrityError:
        # The unique constraint caught a second vote racing past the status check.
        if (again := _same_vote(battle=battle, choice=choice)) is not None:
            return again
        raise ServiceError("already_voted", "This battle has already been voted on.") from None
    return vote


def _same_vote(*, battle: Battle, choice: object) -> Vote | None:
    """The battle's vote if it is this very vote again (the rater's own, the same choice): a
    retry after a lost reply, answered as the first was. The battle is the rater's already."""
    votes = Vote.objects.select_related("model_a", "model_b")
    return votes.filter(battle=battle, choice=choice).first()
