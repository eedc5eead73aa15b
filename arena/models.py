"""Django loads the ``arena`` app's models from this module; each room defines its own.

The app label stays ``arena`` for all of them, so tables and migrations are unchanged.
``standard_params`` is named here because migration 0004 refers to it by this path.
"""

from __future__ import annotations

from arena.catalog.models import (
    CostStatus,
    ModelEntry,
    ModelPrice,
    ModelRetirement,
    standard_params,
)
from arena.compare.models import CompareAnswer, CompareRun, JudgeCall, Rubric
from arena.evals.models import EvalAnswer, EvalPrompt, EvalRun, EvalVerdict
from arena.images.models import ImageUpload, PromptImage
from arena.integrity.models import VoteFlag
from arena.records.models import Answer, Battle, GoldItem, Prompt, Turn, Vote
from arena.tagging.models import VoteTags

__all__ = [
    "Answer",
    "Battle",
    "CompareAnswer",
    "CompareRun",
    "CostStatus",
    "EvalAnswer",
    "EvalPrompt",
    "EvalRun",
    "EvalVerdict",
    "GoldItem",
    "ImageUpload",
    "JudgeCall",
    "ModelEntry",
    "ModelPrice",
    "ModelRetirement",
    "Prompt",
    "PromptImage",
    "Rubric",
    "Turn",
    "Vote",
    "VoteFlag",
    "VoteTags",
    "standard_params",
]
