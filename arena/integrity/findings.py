"""Every reason a vote should not count, found when it is cast."""

from __future__ import annotations

from django.conf import settings

from accounts.models import User
from arena.integrity.checks import reading_floor_ms
from arena.integrity.models import VoteFlag
from arena.integrity.selectors import vote_tallies
from arena.records.models import Answer, Battle, Vote

Reason = VoteFlag.Reason


def vote_findings(
    *, vote: Vote, battle: Battle, rater: User, answers: list[Answer] | None = None
) -> list[tuple[str, str]]:
    """(reason, detail for the reviewing admin) for each finding on a vote just written.
    ``answers``: the battle's answers in turn order, when the caller has read them already
    (read here without). What is counted is read in one statement (``vote_tallies``)."""
    conf = settings.INTEGRITY
    findings: list[tuple[str, str]] = [
        (f["reason"], f.get("detail", "")) for f in battle.integrity_flags or []
    ]
    if answers is None:
        answers = list(Answer.objects.filter(turn__battle=battle).order_by("turn__index", "side"))
    chars = sum(len(a.text) for a in answers)
    floor = reading_floor_ms(
        chars, chars_per_s=conf["READING_CHARS_PER_S"], min_ms=conf["READING_MIN_MS"]
    )
    if vote.decision_ms < floor:
        findings.append(
            (
                Reason.TOO_FAST,
                f"voted after {vote.decision_ms} ms; reading {chars} "
                f"characters needs at least {floor} ms",
            )
        )
    texts: dict[int, dict[str, str]] = {}
    for a in answers:
        texts.setdefault(a.turn_id, {})[a.side] = a.text.strip()
    if any(t.get("a") == t.get("b") for t in texts.values()) and not any(
        r == Reason.IDENTICAL_ANSWERS for r, _ in findings
    ):
        findings.append((Reason.IDENTICAL_ANSWERS, "both sides gave the same text"))
    day_start = vote.created_at.replace(hour=0, minute=0, second=0, microsecond=0)
    tallies = vote_tallies(vote=vote, since=day_start)  # the vote's rater is ``rater``
    caps = (
        (Reason.PROMPT_CAP, "PROMPT_BATTLE_CAP", tallies.on_prompt,
         "{n} counted votes on this prompt already"),
        (Reason.PROMPT_CAP, "RATER_PROMPT_REUSE_CAP", tallies.rater_on_prompt,
         "the rater used this prompt in {n} counted votes already"),
        (Reason.DAILY_CAP, "DAILY_VOTE_CAP", tallies.rater_since, "{n} counted votes today"),
    )  # fmt: skip
    for reason, cap, n, said in caps:
        if n >= conf[cap]:
            findings.append((reason, f"{said.format(n=n)}; the cap is {conf[cap]}"))
    answered, agreed = tallies.gold
    if answered >= conf["GOLD_MIN_ANSWERED"] and agreed / answered < conf["GOLD_MIN_AGREEMENT"]:
        findings.append((Reason.LOW_AGREEMENT, f"agreed on {agreed} of {answered} gold battles"))
    return findings
