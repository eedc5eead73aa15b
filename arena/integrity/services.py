"""Writes of integrity: flags on votes, reviews, bans. A running battle's own findings and its
gold items are records' rows, written by battles' services (battle_flag, battles.gold)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from arena.core.errors import ServiceError
from arena.integrity.findings import vote_findings
from arena.integrity.models import VoteFlag
from arena.records.models import Answer, Battle, Vote

Reason = VoteFlag.Reason


def vote_flags_record(
    *, vote: Vote, battle: Battle, rater: User, answers: list[Answer] | None = None
) -> list[VoteFlag]:
    """Record every finding on a vote just cast (inside its transaction) as a flag, in one
    insert. ``answers``: the battle's answers in turn order, if the caller has them."""
    findings = vote_findings(vote=vote, battle=battle, rater=rater, answers=answers)
    flags = VoteFlag.objects.bulk_create(
        VoteFlag(vote=vote, reason=reason, detail=detail) for reason, detail in findings
    )
    low = [detail for reason, detail in findings if reason == Reason.LOW_AGREEMENT]
    if low:
        # The rater's judgement is in doubt, so their earlier votes are too.
        _flag_votes(rater=rater, reason=Reason.LOW_AGREEMENT, detail=low[0])
    return flags


def _flag_votes(*, rater: User, reason: str, detail: str, by: User | None = None) -> int:
    """Flag every vote of ``rater`` not already flagged for ``reason``; returns how many."""
    flagged = VoteFlag.objects.filter(
        reason=reason, action=VoteFlag.Action.FLAG, vote__rater=rater
    ).values("vote_id")
    votes = Vote.objects.filter(rater=rater).exclude(pk__in=flagged)
    flags = VoteFlag.objects.bulk_create(
        VoteFlag(vote=v, reason=reason, detail=detail, created_by=by) for v in votes
    )
    return len(flags)


@transaction.atomic
def rater_ban(*, rater: User, by: User | None, reason: str) -> int:
    """Ban a rater: their future votes are refused and every past vote is flagged
    ``banned_rater``; nothing is deleted. Returns how many votes were flagged."""
    if by is not None and by.pk == rater.pk:
        raise ServiceError("ban_self", "You cannot ban yourself; your account is unchanged.")
    rater = User.objects.select_for_update().get(pk=rater.pk)
    if rater.banned_at is None:
        rater.banned_at = timezone.now()
        rater.ban_reason = reason[:300]
        rater.save(update_fields=["banned_at", "ban_reason"])
    return _flag_votes(rater=rater, reason=Reason.BANNED_RATER, detail=reason[:300], by=by)


@transaction.atomic
def rater_unban(*, rater: User) -> None:
    """Future votes count again; past flags stay until an admin lifts them."""
    User.objects.filter(pk=rater.pk).update(banned_at=None, ban_reason="")


def vote_flag(*, vote: Vote, by: User, reason: str = Reason.ADMIN, detail: str = "") -> VoteFlag:
    if reason not in Reason.values:
        raise ServiceError("unknown_reason", f"Unknown flag reason {reason!r}.")
    return VoteFlag.objects.create(vote=vote, reason=reason, detail=detail, created_by=by)


def flag_review(*, flag: VoteFlag, by: User, action: str, note: str) -> VoteFlag:
    """Confirm or lift a flag; the review is itself a recorded row and the flag is unchanged."""
    if action not in (VoteFlag.Action.CONFIRM, VoteFlag.Action.LIFT):
        raise ServiceError("bad_review", "A review either confirms or lifts a flag.")
    if flag.action != VoteFlag.Action.FLAG:
        raise ServiceError("not_a_flag", "Only a flag can be reviewed, not a review.")
    if not note.strip():
        raise ServiceError("note_required", "Say why, in a note.")
    return VoteFlag.objects.create(
        vote_id=flag.vote_id,
        reason=flag.reason,
        action=action,
        review_of=flag,
        detail=note.strip(),
        created_by=by,
    )
