"""What a judging strategy is: a class that says what it can do, and one judgement's record."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar, Generic, TypeVar

from arena.judges.calls import Call, JudgeCaller

T = TypeVar("T")


class Strategy(ABC):
    """One way of judging: the question it asks around the fenced blocks, how it reads the
    replies, what it decides. It is handed the prompt and the answers masked."""

    name: ClassVar[str]  # the name it is registered and chosen by
    system: ClassVar[str]  # the judge's system message
    answer_count: ClassVar[tuple[int, int]]  # how many answers one judgement reads: fewest, most
    # A longer reply is cut; None: as long as an answer may be (ARENA's ANSWER_MAX_CHARS).
    reply_max_chars: ClassVar[int | None]
    # Whether a judge that refuses a temperature is asked again without it. Such a retry is not
    # one of the judgement's counted calls, so a strategy whose calls a budget counts keeps off.
    temperature_fallback: ClassVar[bool]

    @abstractmethod
    async def judge(self, caller: JudgeCaller, *, prompt: str, answers: dict[str, str], **options):
        """The outcome for ``answers`` (label -> text) to ``prompt``, asked through ``caller``."""


@dataclass(frozen=True)
class Judgement(Generic[T]):
    """A strategy's outcome with every call it took."""

    outcome: T
    calls: tuple[Call, ...]
    temperature_dropped: bool  # the judge refused a temperature, and was asked without it

    @property
    def attempts(self) -> int:
        return len(self.calls)

    @property
    def cost(self) -> Decimal:
        return sum((c.cost for c in self.calls), Decimal("0"))
