"""Celery's entry to tagging: a vote's tags, off the rater's path."""

from __future__ import annotations

import logging

from celery import shared_task

from arena.core.errors import ServiceError
from arena.core.jobs import job_run
from arena.judges.labeller import PromptLabeller
from arena.tagging import services

log = logging.getLogger(__name__)


@shared_task(name=services.TAG_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def tag_votes(vote_ids: list[int]) -> None:
    """Tag these votes by the rules and TAGGER_MODEL's labeller (services.votes_tag).
    Idempotent: a vote this labeller tagged at this version already is skipped, so a
    redelivery writes nothing twice. A TAGGER_MODEL naming no model is logged and the votes
    get the rules' tags: `manage.py tag_prompts` adds the labeller's once it is fixed."""
    try:
        model = services.tagger()
    except ServiceError as exc:
        log.error("Tagging by rules alone: %s", exc.message)
        model = None
    labeller = PromptLabeller(model) if model is not None else None
    job_run(lambda: services.votes_tag(vote_ids=vote_ids, labeller=labeller))
