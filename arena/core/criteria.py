"""The hard-prompt criteria: which a labeller is asked about, which the mock labeller answers,
and which an export writes, so one list serves the tagging room and the backends below it."""

from __future__ import annotations

# The seven hard-prompt criteria of Arena-Hard and FastChat's logs (criteria_v0.1): a prompt
# meeting HARD_AT of them is tagged "hard".
CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
HARD_AT = 6
