"""Writes of prompts: the one text check, curated prompts and their import, rater prompts."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from accounts.models import User
from arena.battles.gold import gold_draw
from arena.battles.models import Prompt
from arena.battles.prompt_files import ImportReport, parse_prompts
from arena.battles.selectors import prompt_random
from arena.core.errors import ServiceError
from arena.core.text import prompt_hash, text_clean
from arena.tagging.language import language_of


def prompt_clean_text(text: object, *, refused: str = "") -> str:
    """The text of a prompt or follow-up, stripped; refused when empty or over the limit.
    ``refused`` ends the message of a refusal, telling what became of the text."""
    if isinstance(text, str):
        text = text_clean(text)
    if not isinstance(text, str) or not text.strip():
        raise ServiceError("empty_prompt", "Type a prompt first: it cannot be empty.")
    limit = settings.ARENA["PROMPT_MAX_CHARS"]
    text = text.strip()
    if len(text) > limit:
        raise ServiceError(
            "prompt_too_long",
            f"The prompt is {len(text):,} characters; the limit is {limit:,}.{refused}",
        )
    return text


def prompt_for_text(*, text: str, prompt_id: int | None = None) -> Prompt:
    """The curated prompt drawn (or typed again), else the rater's prompt, deduplicated by hash
    and created on first use."""
    if prompt_id is not None:
        prompt = Prompt.objects.filter(pk=prompt_id, active=True).first()
        if prompt is not None and prompt.text_hash == prompt_hash(text):
            return prompt_language_fill(prompt=prompt)
    prompt, created = Prompt.objects.get_or_create(
        text_hash=prompt_hash(text),
        defaults={
            "text": text,
            "source": Prompt.Source.RATER,
            "active": False,
            # Called only when the row is made: an existing prompt is not read again.
            "language": lambda: language_of(text),
        },
    )
    return prompt if created else prompt_language_fill(prompt=prompt)


def prompt_language_fill(*, prompt: Prompt) -> Prompt:
    """The prompt, with the detector's language when it has none yet (one saved before
    detection, or added in the admin with the field left blank): a battle's vote copies the
    prompt's language, and the conversation's language is its first turn's, so follow-ups
    never change it. A language a curator gave is kept."""
    if not prompt.language:
        prompt.language = language_of(prompt.text)
        Prompt.objects.filter(pk=prompt.pk, language="").update(language=prompt.language)
    return prompt


def prompt_create(
    *, text: str, category: str = "", language: str = "", system_prompt: str = ""
) -> tuple[Prompt, bool]:
    """A curated prompt; returns (prompt, created). Re-adding the same text changes nothing.
    The curator's ``language`` wins; without one, the detector's."""
    text = prompt_clean_text(text)
    return Prompt.objects.get_or_create(
        text_hash=prompt_hash(text),
        defaults={
            "text": text,
            "category": category,
            "language": lambda: language.strip() or language_of(text),
            "system_prompt": system_prompt,
            "source": Prompt.Source.CURATED,
        },
    )


@transaction.atomic
def prompts_import(*, data: bytes, filename: str) -> ImportReport:
    """Add curated prompts from a JSONL or CSV file, all or nothing: every row that cannot be
    added is reported, with why, and then none of the file is (one transaction, so a failure
    part-way adds nothing either, never a silent part of it)."""
    rows, rejected = parse_prompts(data, filename=filename)
    report = ImportReport(rejected=list(rejected))
    for number, fields in rows:
        try:
            _, created = prompt_create(**fields)
        except ServiceError as exc:
            report.rejected.append((number, exc.message))
            continue
        if created:
            report.created += 1
        else:
            report.duplicates += 1
    report.rejected.sort()
    if report.rejected:
        transaction.set_rollback(True)
        report.created = report.duplicates = 0
    return report


def prompts_set_active(*, prompt_ids: list[int], active: bool) -> int:
    """Offer (or stop offering) curated prompts; returns how many changed."""
    return Prompt.objects.filter(pk__in=prompt_ids).exclude(active=active).update(active=active)


def prompt_draw(*, rater: User) -> Prompt | None:
    """What "random prompt" gives a rater: for crowd raters sometimes a gold item's prompt
    (the draw keeps a ticket), else a random curated one; None when there is none."""
    return gold_draw(rater=rater) or prompt_random()
