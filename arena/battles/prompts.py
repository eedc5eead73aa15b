"""Writes of prompts: the one text check, curated prompts and their import, rater prompts."""

from __future__ import annotations

from django.conf import settings
from django.db import connections, router, transaction

from accounts.models import User
from arena.battles.gold import gold_draw
from arena.battles.prompt_files import ImportReport, parse_prompts
from arena.battles.selectors import prompt_random
from arena.core.errors import ServiceError
from arena.core.statements import insert_sql, statement
from arena.core.text import prompt_hash, text_clean
from arena.records.models import Prompt
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


def prompt_for_text(*, text: str, prompt_id: int | None = None) -> tuple[Prompt, bool]:
    """The curated prompt drawn (or typed again), else the rater's prompt, deduplicated by hash
    and created on first use; with whether it was created now, already counted once (its
    ``usage_count`` is 1: the caller counts only an existing prompt's use)."""
    text_hash = prompt_hash(text)
    if prompt_id is not None:
        prompt = _prompt_read("drawn", pk=prompt_id)
        if prompt is not None and prompt.text_hash == text_hash:
            return prompt_language_fill(prompt=prompt), False
    prompt = _prompt_read("typed", text_hash=text_hash)
    if prompt is not None:
        return prompt_language_fill(prompt=prompt), False
    prompt = _prompt_insert(text=text, text_hash=text_hash)
    if prompt is None:  # another start inserted the same text since the read: theirs
        return prompt_language_fill(prompt=Prompt.objects.get(text_hash=text_hash)), False
    return prompt, True


# A start's read of its prompt, built once per process (arena.core.statements): the active
# prompt of a drawn id, or the prompt of a text's hash.
_READS = {
    "drawn": (lambda pk: Prompt.objects.filter(pk=pk, active=True), {"pk": (-1, -2)}),
    "typed": (
        lambda text_hash: Prompt.objects.filter(text_hash=text_hash),
        {"text_hash": ("-1", "-2")},
    ),
}


def _prompt_read(kind: str, **value: object) -> Prompt | None:
    build, marks = _READS[kind]
    built = statement(f"prompt_read:{kind}", build, marks)
    return next(iter(Prompt.objects.raw(built.sql, built.bind(**value))), None)


def _prompt_insert(*, text: str, text_hash: str) -> Prompt | None:
    """A rater's new prompt, its first use counted, in one statement (INSERT ... ON CONFLICT DO
    NOTHING RETURNING its id), where get_or_create would take four (its read, a savepoint, the
    insert and the savepoint's release) and the count a fifth; None when a row with that text
    exists after all (committed by another start since our read)."""
    prompt = Prompt(
        text=text,
        text_hash=text_hash,
        source=Prompt.Source.RATER,
        active=False,
        language=language_of(text),
        usage_count=1,
    )
    db = router.db_for_write(Prompt)
    connection = connections[db]
    if not connection.features.can_return_columns_from_insert:  # an old SQLite
        fields = ("text", "source", "active", "language", "usage_count")
        prompt, created = Prompt.objects.get_or_create(
            text_hash=text_hash, defaults={f: getattr(prompt, f) for f in fields}
        )
        return prompt if created else None
    sql, params = insert_sql(prompt, db, ignore_conflicts=True, returning_pk=True)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    prompt.pk = row[0]
    prompt._state.adding, prompt._state.db = False, db
    return prompt


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
