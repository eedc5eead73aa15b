"""Writes. Every change to battles, answers, votes and prompts goes through these functions."""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from accounts.models import User
from arena import costs, dispatch
from arena.backends.base import Backend, ChatRequest, Message
from arena.backends.registry import backend_for, installed_kinds
from arena.generation import StreamResult
from arena.integrity import asks_identity, reading_floor_ms
from arena.models import Answer, Battle, ModelEntry, Prompt, Turn, Vote, VoteFlag
from arena.prompt_import import ImportReport, parse_prompts
from arena.text import prompt_hash, style_counts

log = logging.getLogger(__name__)


class BattleError(Exception):
    """A request the rater can fix or should know about; ``code`` is stable for clients."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _clean_prompt_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BattleError("empty_prompt", "Type a prompt first: it cannot be empty.")
    limit = settings.ARENA["PROMPT_MAX_CHARS"]
    if len(text) > limit:
        raise BattleError(
            "prompt_too_long",
            f"The prompt is {len(text):,} characters; the limit is {limit:,}. Nothing was sent.",
        )
    return text.strip()


def _shared_params() -> dict:
    return dict(settings.ARENA["DEFAULT_PARAMS"])


class ParamsError(BattleError):
    """A shared parameter one of the models cannot take: the run is refused, never dropped
    for one side only."""

    def __init__(self, model: ModelEntry, param: str) -> None:
        super().__init__(
            "unsupported_param",
            f"{model.public_name} does not accept the parameter {param!r}; remove it from the "
            "shared parameters or leave this model out.",
        )
        self.model = model
        self.param = param


def params_unsupported(*, model: ModelEntry, params: dict) -> list[str]:
    """Shared parameters that are set but that ``model`` does not declare it supports."""
    supported = set(model.supported_params or [])
    return sorted(k for k, v in params.items() if v is not None and k not in supported)


def params_check(*, models: list[ModelEntry], params: dict) -> None:
    for model in models:
        missing = params_unsupported(model=model, params=params)
        if missing:
            raise ParamsError(model, missing[0])


def battle_pick_models(
    *, params: dict | None = None, rng: random.Random | None = None
) -> tuple[ModelEntry, ModelEntry, float]:
    """Two active models of different underlying ids, both able to take ``params``, on random
    sides, drawn by active sampling; returns them and the probability of that pair.

    Models that cannot take a shared parameter sit battles out (logged for admins) rather than
    meeting a rival under other settings; the rater is never told which model that was.
    """
    import numpy as np

    from ranking.sampling import draw_pair, pair_probabilities
    from ranking.selectors import sampling_state

    rng = rng or random.SystemRandom()
    params = _shared_params() if params is None else params
    models = []
    for model in ModelEntry.objects.filter(active=True, backend__in=installed_kinds()):
        missing = params_unsupported(model=model, params=params)
        if missing:
            log.warning("%s sits out battles: it does not accept %s", model, ", ".join(missing))
        else:
            models.append(model)
    models.sort(key=lambda m: m.pk)
    if len({m.model_id for m in models}) < 2:
        raise BattleError(
            "no_models", "Fewer than two models are available right now. Try again later."
        )
    lower, upper, votes = sampling_state(models=models)
    ids = np.array([m.model_id for m in models], dtype=object)
    conf = settings.SAMPLING
    probs = pair_probabilities(
        lower=lower,
        upper=upper,
        votes=votes,
        allowed=ids[:, None] != ids[None, :],
        floor=conf["floor"],
        boost_votes=conf["boost_votes"],
        boost=conf["boost"],
    )
    i, j, p = draw_pair(probs, np.random.default_rng(rng.getrandbits(64)))
    pair = [models[i], models[j]]
    rng.shuffle(pair)
    return pair[0], pair[1], p


def prompt_for_text(*, text: str, prompt_id: int | None = None) -> Prompt:
    """The curated prompt drawn (or typed again), else a new rater prompt, deduplicated by hash."""
    if prompt_id is not None:
        prompt = Prompt.objects.filter(pk=prompt_id, active=True).first()
        if prompt is not None and prompt.text_hash == prompt_hash(text):
            return prompt
    prompt, _ = Prompt.objects.get_or_create(
        text_hash=prompt_hash(text),
        defaults={"text": text, "source": Prompt.Source.RATER, "active": False},
    )
    return prompt


def _create_turn(*, battle: Battle, index: int, text: str) -> Turn:
    turn = Turn.objects.create(battle=battle, index=index, text=text)
    answers = [
        Answer.objects.create(turn=turn, side=side, model=battle.model_for(side))
        for side in (Answer.Side.A, Answer.Side.B)
    ]
    for answer in answers:
        queue = str(answer.model.backend_settings.get("queue") or "")
        transaction.on_commit(
            lambda pk=answer.pk, q=queue: dispatch.generation_enqueue(answer_id=pk, queue=q)
        )
    return turn


@transaction.atomic
def battle_start(
    *,
    rater: User,
    text: object,
    prompt_id: int | None = None,
    battle_id: uuid.UUID | None = None,
    rng: random.Random | None = None,
) -> Battle:
    from arena import gold

    rater_may_battle(rater=rater)
    text = _clean_prompt_text(text)
    prompt = prompt_for_text(text=text, prompt_id=prompt_id)
    params = _shared_params()
    item = gold.gold_claim(rater=rater, prompt=prompt)
    if item is not None:
        # A gold battle replays a known pair of answers; the rater cannot tell it apart.
        model_a, model_b, probability = item.source.model_a, item.source.model_b, None
        if (rng or random.SystemRandom()).random() < 0.5:
            model_a, model_b = model_b, model_a
    else:
        model_a, model_b, probability = battle_pick_models(params=params, rng=rng)
        params_check(models=[model_a, model_b], params=params)
    system_prompt = prompt.system_prompt or settings.ARENA["SYSTEM_PROMPT"]
    findings = []
    if asks_identity(text, settings.INTEGRITY["IDENTITY_QUESTIONS"]):
        findings.append({"reason": "identity_question", "detail": "asked before generation"})
    battle = Battle.objects.create(
        id=battle_id or uuid.uuid4(),
        rater=rater,
        prompt=prompt,
        model_a=model_a,
        model_b=model_b,
        system_prompt=system_prompt,
        params=params,
        sampling_probability=probability,
        integrity_flags=findings,
        gold=item,
    )
    Prompt.objects.filter(pk=prompt.pk).update(usage_count=F("usage_count") + 1)
    _create_turn(battle=battle, index=0, text=text)
    return battle


def rater_may_battle(*, rater: User) -> None:
    # From the database: a websocket holds the user it connected with, maybe since before a ban.
    if User.objects.filter(pk=rater.pk, banned_at__isnull=False).exists():
        raise BattleError("banned", "Your account may not start battles.")
    if (
        settings.INTEGRITY["REQUIRE_VERIFIED_EMAIL_FOR_CROWD"]
        and rater.rater_pool == User.Pool.CROWD
        and not rater_email_verified(rater=rater)
    ):
        raise BattleError(
            "email_unverified",
            "Please confirm your email address first: follow the link we sent you (or ask for "
            "a new one on your account's email page).",
        )


def rater_email_verified(*, rater: User) -> bool:
    from allauth.account.models import EmailAddress

    return EmailAddress.objects.filter(user=rater, verified=True).exists()


def battle_flag(*, battle_id: object, reason: str, detail: str) -> bool:
    """Note an integrity finding on a running battle, once per reason; True if it is new."""
    with transaction.atomic():
        battle = Battle.objects.select_for_update().get(pk=battle_id)
        if any(f["reason"] == reason for f in battle.integrity_flags):
            return False
        battle.integrity_flags = [*battle.integrity_flags, {"reason": reason, "detail": detail}]
        battle.save(update_fields=["integrity_flags"])
        return True


def _battle_of(*, battle_id: object, rater: User, lock: bool = False) -> Battle:
    try:
        battle_id = uuid.UUID(str(battle_id))
    except ValueError:
        raise BattleError("unknown_battle", "There is no such battle.") from None
    qs = Battle.objects.select_for_update() if lock else Battle.objects
    battle = qs.filter(pk=battle_id).first()
    if battle is None:
        raise BattleError("unknown_battle", "There is no such battle.")
    if battle.rater_id != rater.pk:
        raise BattleError("not_your_battle", "This battle belongs to another rater.")
    return battle


def _require_ready(battle: Battle, action: str) -> None:
    if battle.status == Battle.Status.VOTED:
        raise BattleError("already_voted", "This battle has been voted on and is locked.")
    if battle.status == Battle.Status.VOID:
        raise BattleError("battle_void", "This battle is void. Start a new battle.")
    if battle.status != Battle.Status.READY:
        raise BattleError(
            "answers_incomplete", f"Wait until both answers are complete before you {action}."
        )


@transaction.atomic
def battle_follow_up(*, battle_id: object, rater: User, text: object) -> Turn:
    rater_may_battle(rater=rater)
    text = _clean_prompt_text(text)
    battle = _battle_of(battle_id=battle_id, rater=rater, lock=True)
    _require_ready(battle, "send a follow-up")
    index = battle.turns.count()
    if index >= settings.ARENA["MAX_TURNS"]:
        raise BattleError(
            "too_many_turns", f"A battle has at most {index} turns. Vote, or start a new battle."
        )
    battle.status = Battle.Status.GENERATING
    if asks_identity(text, settings.INTEGRITY["IDENTITY_QUESTIONS"]) and not any(
        f["reason"] == "identity_question" for f in battle.integrity_flags
    ):
        battle.integrity_flags = [
            *battle.integrity_flags,
            {"reason": "identity_question", "detail": f"asked in turn {index + 1}"},
        ]
    battle.save(update_fields=["status", "integrity_flags"])
    return _create_turn(battle=battle, index=index, text=text)


@transaction.atomic
def turn_mark_shown(*, turn_id: int, at: datetime | None = None) -> Battle:
    """Both answers of the turn have been fully shown: the vote clock starts now."""
    turn = Turn.objects.select_for_update().select_related("battle").get(pk=turn_id)
    if turn.shown_at is None:
        turn.shown_at = at or timezone.now()
        turn.save(update_fields=["shown_at"])
    battle = turn.battle
    statuses = set(turn.answers.values_list("status", flat=True))
    if battle.status == Battle.Status.GENERATING and statuses == {Answer.Status.OK}:
        battle.status = Battle.Status.READY
        battle.save(update_fields=["status"])
    return battle


@transaction.atomic
def battle_void(*, battle_id: object, reason: str) -> None:
    Battle.objects.filter(
        pk=battle_id, status__in=[Battle.Status.GENERATING, Battle.Status.READY]
    ).update(status=Battle.Status.VOID, void_reason=reason[:200])


# Generation ---------------------------------------------------------------------------------


@dataclass
class GenerationJob:
    battle_id: uuid.UUID
    backend: Backend | None
    request: ChatRequest | None
    abandoned: dict | None = None  # the done-event to publish when the job must not run


def _conversation(answer: Answer) -> ChatRequest:
    turn = answer.turn
    battle = turn.battle
    messages: list[Message] = []
    if battle.system_prompt:
        messages.append(Message("system", battle.system_prompt))
    earlier = Answer.objects.filter(
        turn__battle=battle, turn__index__lt=turn.index, side=answer.side
    ).select_related("turn")
    for prev in earlier.order_by("turn__index"):
        messages += [Message("user", prev.turn.text), Message("assistant", prev.text)]
    messages.append(Message("user", turn.text))
    return ChatRequest(
        model_id=answer.model.model_id, messages=tuple(messages), params=battle.params
    )


def _done_event(answer: Answer) -> dict:
    return {"type": "answer.done", "answer": answer.pk, "status": answer.status}


@transaction.atomic
def answer_claim(*, answer_id: int) -> GenerationJob | None:
    """Mark an answer running and say what to generate; None when it is already finished.

    A task redelivered after a worker died finds its answer still running: it cannot resume a
    stream the rater has half seen, so the answer fails visibly instead of being re-run.
    """
    answer = (
        Answer.objects.select_for_update()
        .select_related("turn__battle", "model")
        .filter(pk=answer_id)
        .first()
    )
    if answer is None or answer.is_terminal:
        return None
    battle_id = answer.turn.battle_id
    if answer.status == Answer.Status.RUNNING:
        answer.status = Answer.Status.PARTIAL if answer.text else Answer.Status.ERROR
        answer.error_kind = "server"
        answer.error_message = "The worker generating this answer stopped."
        answer.finished_at = timezone.now()
        answer.save()
        battle_void(battle_id=battle_id, reason="generation interrupted")
        return GenerationJob(battle_id, None, None, abandoned=_done_event(answer))
    answer.status = Answer.Status.RUNNING
    answer.started_at = timezone.now()
    answer.save(update_fields=["status", "started_at"])
    model = answer.model
    from arena import gold

    replay = gold.replay_backend(answer=answer)
    try:
        backend = replay or backend_for(model.backend, model.backend_settings)
    except LookupError as exc:
        answer.status = Answer.Status.ERROR
        answer.error_kind = "bad_request"
        answer.error_message = str(exc)
        answer.finished_at = timezone.now()
        answer.save()
        battle_void(battle_id=battle_id, reason="backend unavailable")
        return GenerationJob(battle_id, None, None, abandoned=_done_event(answer))
    return GenerationJob(battle_id, backend, _conversation(answer))


@transaction.atomic
def answer_finish(*, answer_id: int, result: StreamResult) -> dict:
    answer = Answer.objects.select_for_update().select_related("turn", "model").get(pk=answer_id)
    if answer.is_terminal:
        return _done_event(answer)
    answer.status = result.status
    answer.text = result.text
    answer.truncated = result.truncated
    answer.finish_reason = result.finish_reason
    answer.input_tokens = result.input_tokens
    answer.output_tokens = result.output_tokens
    answer.tokens_estimated = result.tokens_estimated
    answer.ttft_ms = result.ttft_ms
    answer.total_ms = result.total_ms
    answer.error_kind = result.error_kind
    answer.error_message = result.error_message
    answer.replica = result.replica
    answer.request_id = (result.request_id or "")[:200]
    answer.finished_at = timezone.now()
    answer.cost, answer.cost_status = costs.answer_cost(
        model=answer.model,
        on=timezone.localdate(answer.started_at or answer.finished_at),
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        tokens_estimated=answer.tokens_estimated,
    )
    answer.save()
    if answer.status != Answer.Status.OK:
        battle_void(battle_id=answer.turn.battle_id, reason=f"answer failed: {result.error_kind}")
    return _done_event(answer)


# Votes --------------------------------------------------------------------------------------


def _side_record(battle: Battle, side: str) -> dict:
    answers = list(Answer.objects.filter(turn__battle=battle, side=side).order_by("turn__index"))
    text = "\n\n".join(a.text for a in answers)
    last = answers[-1]
    return {
        "model": battle.model_for(side).public_name,
        "model_id": battle.model_for(side).model_id,
        "output_tokens": sum(a.output_tokens or 0 for a in answers),
        "input_tokens": sum(a.input_tokens or 0 for a in answers),
        "tokens_estimated": any(a.tokens_estimated for a in answers),
        "finish_reason": last.finish_reason,
        "ttft_ms": [a.ttft_ms for a in answers],
        "total_ms": [a.total_ms for a in answers],
        "style": style_counts(text),
    }


def vote_cast(*, battle_id: object, rater: User, choice: object) -> Vote:
    """Record the rater's verdict. Every vote is kept; the reasons it may not count are
    recorded beside it as VoteFlag rows, never by changing or dropping the vote."""
    if choice not in Vote.Choice.values:
        raise BattleError(
            "unknown_choice",
            f"Unknown vote {choice!r}: choose one of {', '.join(Vote.Choice.values)}.",
        )
    try:
        with transaction.atomic():
            # Lock order: rater, battle, prompt. Locking the rater serialises one rater's
            # votes (daily cap, two tabs); locking the prompt serialises its cap count.
            rater = User.objects.select_for_update().get(pk=rater.pk)
            if rater.is_banned:
                raise BattleError("banned", "Your account may not vote.")
            battle = _battle_of(battle_id=battle_id, rater=rater, lock=True)
            _require_ready(battle, "vote")
            prompt = Prompt.objects.select_for_update().get(pk=battle.prompt_id)
            last_turn = battle.turns.order_by("-index").first()
            now = timezone.now()
            decision_ms = max(0, int((now - last_turn.shown_at).total_seconds() * 1000))
            vote = Vote.objects.create(
                battle=battle,
                rater=rater,
                rater_pool=rater.rater_pool,
                prompt=prompt,
                prompt_hash=prompt.text_hash,
                prompt_category=prompt.category,
                prompt_language=prompt.language,
                model_a=battle.model_a,
                model_b=battle.model_b,
                choice=choice,
                decision_ms=decision_ms,
                turns=last_turn.index + 1,
                params=battle.params,
                system_prompt=battle.system_prompt,
                side_a=_side_record(battle, Answer.Side.A),
                side_b=_side_record(battle, Answer.Side.B),
                sampling_probability=battle.sampling_probability,
            )
            findings = _vote_findings(vote=vote, battle=battle, rater=rater)
            VoteFlag.objects.bulk_create(
                VoteFlag(vote=vote, reason=reason, detail=detail) for reason, detail in findings
            )
            low = [detail for reason, detail in findings if reason == "low_agreement"]
            if low:
                # The rater's judgement is in doubt, so their earlier votes are too.
                _flag_earlier_votes(rater=rater, reason="low_agreement", detail=low[0])
            battle.status = Battle.Status.VOTED
            battle.save(update_fields=["status"])
    except IntegrityError:
        # The unique constraint caught a second vote racing past the status check.
        raise BattleError("already_voted", "This battle has already been voted on.") from None
    return vote


def _flag_earlier_votes(*, rater: User, reason: str, detail: str) -> int:
    flagged = VoteFlag.objects.filter(
        reason=reason, action=VoteFlag.Action.FLAG, vote__rater=rater
    ).values("vote_id")
    votes = Vote.objects.filter(rater=rater).exclude(pk__in=flagged)
    VoteFlag.objects.bulk_create(VoteFlag(vote=v, reason=reason, detail=detail) for v in votes)
    return votes.count()


def _counted_votes():
    """Votes that are real and not excluded by an unlifted flag."""
    return Vote.objects.filter(simulated=False).exclude(
        Exists(
            VoteFlag.objects.filter(vote=OuterRef("pk"), action=VoteFlag.Action.FLAG).exclude(
                reviews__action=VoteFlag.Action.LIFT
            )
        )
    )


def _vote_findings(*, vote: Vote, battle: Battle, rater: User) -> list[tuple[str, str]]:
    """Every reason this vote should not count, with a detail for the reviewing admin."""
    conf = settings.INTEGRITY
    findings: list[tuple[str, str]] = [
        (f["reason"], f.get("detail", "")) for f in battle.integrity_flags or []
    ]
    answers = list(Answer.objects.filter(turn__battle=battle).order_by("turn__index", "side"))
    chars = sum(len(a.text) for a in answers)
    floor = reading_floor_ms(
        chars, chars_per_s=conf["READING_CHARS_PER_S"], min_ms=conf["READING_MIN_MS"]
    )
    if vote.decision_ms < floor:
        findings.append(
            (
                "too_fast",
                f"voted after {vote.decision_ms} ms; reading {chars} "
                f"characters needs at least {floor} ms",
            )
        )
    texts: dict[int, dict[str, str]] = {}
    for a in answers:
        texts.setdefault(a.turn_id, {})[a.side] = a.text.strip()
    if any(t.get("a") == t.get("b") for t in texts.values()) and not any(
        r == "identical_answers" for r, _ in findings
    ):
        findings.append(("identical_answers", "both sides gave the same text"))
    others = _counted_votes().exclude(pk=vote.pk)
    earlier = others.filter(prompt_hash=vote.prompt_hash).count()
    if earlier >= conf["PROMPT_BATTLE_CAP"]:
        findings.append(
            (
                "prompt_cap",
                f"{earlier} counted votes on this prompt already; "
                f"the cap is {conf['PROMPT_BATTLE_CAP']}",
            )
        )
    mine = others.filter(prompt_hash=vote.prompt_hash, rater=rater).count()
    if mine >= conf["RATER_PROMPT_REUSE_CAP"]:
        findings.append(
            (
                "prompt_cap",
                f"the rater used this prompt in {mine} counted votes "
                f"already; the cap is {conf['RATER_PROMPT_REUSE_CAP']}",
            )
        )
    day_start = vote.created_at.replace(hour=0, minute=0, second=0, microsecond=0)
    today = others.filter(rater=rater, created_at__gte=day_start).count()
    if today >= conf["DAILY_VOTE_CAP"]:
        findings.append(
            ("daily_cap", f"{today} counted votes today; the cap is {conf['DAILY_VOTE_CAP']}")
        )
    from arena import gold

    answered, agreed = gold.rater_agreement(rater=rater)
    if answered >= conf["GOLD_MIN_ANSWERED"] and agreed / answered < conf["GOLD_MIN_AGREEMENT"]:
        findings.append(("low_agreement", f"agreed on {agreed} of {answered} gold battles"))
    return findings


# Prompts ------------------------------------------------------------------------------------


def prompt_create(
    *, text: str, category: str = "", language: str = "", system_prompt: str = ""
) -> tuple[Prompt, bool]:
    """A curated prompt; returns (prompt, created). Re-adding the same text changes nothing."""
    text = text.strip()
    if not text:
        raise ValidationError("The prompt text is empty.")
    limit = settings.ARENA["PROMPT_MAX_CHARS"]
    if len(text) > limit:
        raise ValidationError(f"The prompt is {len(text):,} characters; the limit is {limit:,}.")
    return Prompt.objects.get_or_create(
        text_hash=prompt_hash(text),
        defaults={
            "text": text,
            "category": category,
            "language": language,
            "system_prompt": system_prompt,
            "source": Prompt.Source.CURATED,
        },
    )


def prompts_import(*, data: bytes, filename: str) -> ImportReport:
    """Add curated prompts from a JSONL or CSV file; every row not added is reported, with why."""
    rows, rejected = parse_prompts(data, filename=filename)
    report = ImportReport(rejected=list(rejected))
    for number, fields in rows:
        try:
            _, created = prompt_create(**fields)
        except ValidationError as exc:
            report.rejected.append((number, "; ".join(exc.messages)))
            continue
        if created:
            report.created += 1
        else:
            report.duplicates += 1
    report.rejected.sort()
    return report


def prompts_set_active(*, prompt_ids: list[int], active: bool) -> int:
    """Offer (or stop offering) curated prompts; returns how many changed."""
    return Prompt.objects.filter(pk__in=prompt_ids).exclude(active=active).update(active=active)


# Raters and flags -----------------------------------------------------------------------------


@transaction.atomic
def rater_ban(*, rater: User, by: User | None, reason: str) -> int:
    """Ban a rater: their future votes are refused and every past vote is flagged
    ``banned_rater``; nothing is deleted. Returns how many votes were flagged."""
    rater = User.objects.select_for_update().get(pk=rater.pk)
    if rater.banned_at is None:
        rater.banned_at = timezone.now()
        rater.ban_reason = reason[:300]
        rater.save(update_fields=["banned_at", "ban_reason"])
    already = VoteFlag.objects.filter(reason="banned_rater", action="flag").values("vote_id")
    votes = Vote.objects.filter(rater=rater).exclude(pk__in=already)
    flags = [
        VoteFlag(vote=v, reason="banned_rater", detail=reason[:300], created_by=by) for v in votes
    ]
    VoteFlag.objects.bulk_create(flags)
    return len(flags)


@transaction.atomic
def rater_unban(*, rater: User) -> None:
    """Future votes count again; past flags stay until an admin lifts them."""
    User.objects.filter(pk=rater.pk).update(banned_at=None, ban_reason="")


def vote_flag(*, vote: Vote, by: User, reason: str = "admin", detail: str = "") -> VoteFlag:
    if reason not in VoteFlag.Reason.values:
        raise ValidationError(f"Unknown flag reason {reason!r}.")
    return VoteFlag.objects.create(vote=vote, reason=reason, detail=detail, created_by=by)


def flag_review(*, flag: VoteFlag, by: User, action: str, note: str) -> VoteFlag:
    """Confirm or lift a flag; the review is itself a recorded row and the flag is unchanged."""
    if action not in (VoteFlag.Action.CONFIRM, VoteFlag.Action.LIFT):
        raise ValidationError("A review either confirms or lifts a flag.")
    if flag.action != VoteFlag.Action.FLAG:
        raise ValidationError("Only a flag can be reviewed, not a review.")
    if not note.strip():
        raise ValidationError("Say why, in a note.")
    return VoteFlag.objects.create(
        vote_id=flag.vote_id,
        reason=flag.reason,
        action=action,
        review_of=flag,
        detail=note.strip(),
        created_by=by,
    )
