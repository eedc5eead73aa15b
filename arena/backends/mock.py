"""A deterministic mock model: the only thing faked in the product, standing in for a remote API.

The answer is derived from SHA-256 of (model id, conversation, the SHA-256 of each image it
carries), so the same question always gets the same answer from the same model; speed, length
and style come from the model's settings. A model set with ``vision`` reads images (its answer
says what it saw); one without refuses them as a real server refuses a text-only model.
Misbehaviours can be switched on per model to drive the runner's failure branches.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import ClassVar

from arena.backends import checks
from arena.backends.base import (
    ChatRequest,
    Event,
    Finished,
    Image,
    ReasoningDelta,
    StreamError,
    TextDelta,
)
from arena.core.criteria import CRITERIA

WORDS = (
    "the answer depends on context and the data we have consider first what is being asked "
    "then weigh each option carefully a simple approach often works best in practice we can "
    "check the result against a small example before relying on it more broadly this keeps "
    "the reasoning honest and easy to follow note that edge cases matter here as well since "
    "inputs vary one useful habit is to state assumptions clearly and test them early"
).split()

STYLES = ("plain", "markdown", "terse", "lists")
MISBEHAVIOURS = (
    "stall",
    "error",
    "error_midstream",
    "missing_terminal",
    "no_usage",
    "empty",
    "refused",
    "blocked",
    "incomplete",
    "slow_first_token",
    # The prefix (a name in disguise, say) one character a chunk: redaction must hold back
    # whatever could still become a name, however the stream splits it.
    "prefix_by_char",
    # As a judge (``judge: true``): a reply that is not JSON on the first try of each request,
    # or always; a refusal of any temperature; a judge that always prefers what it saw first.
    "judge_bad_json_once",
    "judge_bad_json_always",
    "judge_rejects_temperature",
    "judge_prefers_first",
)


@dataclass(frozen=True)
class MockSettings:
    ttft_ms: float = 200.0
    tokens_per_s: float = 50.0
    answer_tokens: int = 120
    style: str = "plain"
    misbehaviour: str = ""
    prefix: str = ""  # literal text the answer starts with, e.g. markup to test sanitising
    # Benchmarks only: each chunk carries its emit time, so a client can measure the delay.
    timestamps: bool = False
    # A judge: replies to compare mode's judge prompts with deterministic scores (a hash of
    # label, criterion and answer), never a real judgement.
    judge: bool = False
    # As a pairwise judge (evaluation runs, calibration): the share of calls in which it picks
    # whichever answer it saw first, whatever they say (an injected position bias). Otherwise
    # its verdict does not depend on the order: answers carrying "⟦q=1.5⟧" (a contestant's
    # prefix) win by that strength, plus ``judge_length_bias`` per 100 words (a wordy judge).
    judge_position_bias: float = 0.0
    judge_length_bias: float = 0.0
    # A reasoning model: this many words of thinking stream before the answer.
    thinks: int = 0
    # Reads images; without it a request carrying one is refused (IMAGES_REFUSED), as a
    # text-only model's server refuses it.
    vision: bool = False

    @classmethod
    def from_dict(cls, data: dict) -> MockSettings:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


# What a server without vision says to an image, in each protocol (OpenAI's wording).
IMAGES_REFUSED = "The model `{model}` does not support image input."
IMAGE_TOKENS = 85  # an image's input tokens, as OpenAI counts one at low detail


def images_of(request: ChatRequest) -> list[Image]:
    return [image for m in request.messages for image in m.images]


def prompt_tokens(request: ChatRequest) -> int:
    """The input tokens the mock reports: a word a token, and IMAGE_TOKENS an image."""
    words = sum(len(m.content.split()) for m in request.messages)
    return words + IMAGE_TOKENS * len(images_of(request))


def _rng(model_id: str, request: ChatRequest) -> random.Random:
    # An image enters the key by its hash; a message without one keys as it always has.
    said = (m.content + "".join(f"\x01{i.sha256}" for i in m.images) for m in request.messages)
    key = model_id + "\x00" + "\x00".join(said)
    return random.Random(hashlib.sha256(key.encode("utf-8")).digest())


def _seen(images: list[Image]) -> str:
    """What the mock says it saw, so a person can tell it read the images: their count, types
    and the start of each hash."""
    named = ", ".join(f"{i.content_type.removeprefix('image/').upper()} {i.sha256[:8]}"
                      for i in images)  # fmt: skip
    noun = "the image" if len(images) == 1 else f"the {len(images)} images"
    return f"Looking at {noun} ({named}): "


def _sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(max(2, n_words))]
    return " ".join(words).capitalize() + "."


def answer_text(model_id: str, request: ChatRequest, settings: MockSettings) -> str:
    """The whole answer, deterministically; styles differ the way real models' answers do."""
    rng = _rng(model_id, request)
    budget = int(request.params.get("max_tokens") or settings.answer_tokens)
    n_words = max(3, min(settings.answer_tokens, budget))
    sentences: list[str] = []
    while sum(len(s.split()) for s in sentences) < n_words:
        sentences.append(_sentence(rng, rng.randint(6, 14)))
    images = images_of(request)
    seen = _seen(images) if images else ""
    return settings.prefix + seen + _styled(sentences, settings.style)


def _styled(sentences: list[str], style: str) -> str:
    if style == "terse":
        return " ".join(sentences[:2])
    if style == "markdown":
        head, rest = sentences[:2], sentences[2:]
        parts = ["## Overview", " ".join(head), "## Details"]
        parts += [f"- **{s.split()[0]}** {' '.join(s.split()[1:])}" for s in rest[:4]]
        parts += [" ".join(rest[4:])] if rest[4:] else []
        return "\n\n".join(parts[:3]) + "\n\n" + "\n".join(parts[3:])
    if style == "lists":
        return (
            sentences[0] + "\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(sentences[1:], 1))
        )
    return " ".join(sentences)


def thinking_words(n: int) -> list[str]:
    """A mock reasoning model's thinking: recognisable, the same every time."""
    return [f"mull{i} " for i in range(n)]


def word_chunks(text: str) -> Iterator[str]:
    """Word-sized chunks, the way a tokenizer-backed stream arrives."""
    start = 0
    for i, ch in enumerate(text):
        if ch in " \n" and i > start:
            yield text[start : i + 1]
            start = i + 1
    if start < len(text):
        yield text[start:]


_ANSWER = re.compile(r'<answer label="([A-Z])">\n(.*?)\n</answer>', re.DOTALL)
_CRITERION = re.compile(r"^Criterion: (\w+)", re.MULTILINE)
_asked: set[str] = set()  # judge requests seen, for judge_bad_json_once


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:8], "big")


_STRENGTH = re.compile(r"⟦q=(-?[0-9.]+)⟧")


_PROMPT = re.compile(r"<prompt>\n(.*?)\n</prompt>", re.DOTALL)
# A judge prompt's blocks carry a random token per prompt (arena.judges.prompts.Fence): read without
# it, so what the mock draws stays a function of what it is shown.
_FENCE_TOKEN = re.compile(r"<prompt-([0-9a-f]{16})>\n")


def _without_token(prompt: str) -> str:
    found = _FENCE_TOKEN.search(prompt)
    if found is None:
        return prompt
    return prompt.replace(f"-{found.group(1)}", "").replace(found.group(1), "TOKEN")


def _strength(answer: str, length_bias: float) -> float:
    found = _STRENGTH.search(answer)
    return (float(found.group(1)) if found else 0.0) + length_bias * len(answer.split()) / 100


def _pairwise(prompt: str, position_bias: float, length_bias: float) -> str:
    """An Arena-Hard-style verdict, deterministic (drawn by hashes of what it is shown).
    With probability ``position_bias`` the first answer wins outright; otherwise the verdict
    comes from the answers' strengths alone, the same in either order."""
    answers = dict(_ANSWER.findall(prompt))
    first, second = answers.get("A", ""), answers.get("B", "")
    if _digest("first", prompt) / 2**64 < position_bias:
        return "The first answer is better. [[A>B]]"
    question = _PROMPT.search(prompt)
    x, y = sorted((first, second))
    p_x = 1 / (1 + math.exp(-(_strength(x, length_bias) - _strength(y, length_bias))))
    u = _digest("pairwise", question.group(1) if question else "", x, y) / 2**64
    if abs(u - p_x) < 0.03:
        return "They are about as good. [[A=B]]"
    winner = x if u < p_x else y
    sure = p_x if winner == x else 1 - p_x
    won, lost = ("A", "B") if winner == first else ("B", "A")
    return f"My final verdict: [[{won}{'>>' if sure > 0.8 else '>'}{lost}]]"


# A prompt labeller's request (arena.tagging.labeller.ROLE opens its system message).
LABEL_ROLE = "You label prompts written to a chatbot."
_CREATIVE = ("poem", "story", "haiku", "lyrics", "song", "limerick", "fiction", "sonnet",
             "screenplay", "role-play", "roleplay", "fairy tale")  # fmt: skip
_CONSTRAINED = ("exactly", "at most", "at least", "no more than", "json", "bullet", "words",
                "format", "only", "do not", "must", "sentences")  # fmt: skip


def label_reply(prompt: str) -> str:
    """A labeller's answer, deterministic: creative and constrained by keywords, each hardness
    criterion drawn by a hash of the prompt, likelier the longer it is."""
    found = _PROMPT.search(prompt)
    text = found.group(1) if found else prompt
    lower, share = text.lower(), min(90, 30 + 2 * len(text.split()))
    return json.dumps({
        "creative_writing": any(w in lower for w in _CREATIVE),
        "instruction_following": any(w in lower for w in _CONSTRAINED),
        "criteria": {c: _digest("label", c, text) % 100 < share for c in CRITERIA},
    })  # fmt: skip


def judge_reply(request: ChatRequest, settings: MockSettings) -> str:
    """What the mock judge says to a judge prompt: compare mode's scores, or an evaluation
    run's pairwise verdict."""
    prompt = _without_token(request.messages[-1].content)
    misbehaviour = settings.misbehaviour
    if "[[A>>B]]" in request.messages[0].content:
        if misbehaviour == "judge_bad_json_always":
            return "Both are fine."  # no verdict in the form asked for
        return _pairwise(prompt, settings.judge_position_bias, settings.judge_length_bias)
    if misbehaviour == "judge_bad_json_always":
        return "I think they are all fine."
    if misbehaviour == "judge_bad_json_once":
        key = hashlib.sha256(prompt.encode()).hexdigest()
        if key not in _asked:
            _asked.add(key)
            return "Scores: A is best {"
    if request.messages[0].content.startswith(LABEL_ROLE):
        return label_reply(prompt)
    answers = _ANSWER.findall(prompt)
    criterion = _CRITERION.search(prompt)
    if criterion is None:  # a head-to-head
        (first, first_text), (second, second_text) = answers[:2]
        if misbehaviour == "judge_prefers_first":
            return json.dumps({"winner": first})
        a, b = _digest(first_text), _digest(second_text)
        return json.dumps({"winner": "tie" if a == b else first if a > b else second})
    scores = {
        label: {
            "score": 1 + _digest(label, criterion.group(1), text) % 5,
            "reason": f"mock score for {label} on {criterion.group(1)}",
        }
        for label, text in answers
    }
    return json.dumps({"scores": scores})


class MockBackend:
    kind: ClassVar[str] = "mock"
    label: ClassVar[str] = "Mock (deterministic, in-process)"
    settings_schema: ClassVar[dict[str, checks.Check]] = {
        "ttft_ms": checks.number(),
        "tokens_per_s": checks.number(),
        "answer_tokens": checks.count,
        "style": checks.one_of(STYLES),
        "misbehaviour": checks.one_of(("", *MISBEHAVIOURS)),
        "prefix": checks.text,
        "timestamps": checks.flag,
        "judge": checks.flag,
        "judge_position_bias": checks.share,
        "judge_length_bias": checks.number(low=-10.0),
        "thinks": checks.number(),
        "vision": checks.flag,
        "base_url": checks.url,  # a pooled mock's replicas are mock servers
    }
    takes_json_schema: ClassVar[bool] = False
    takes_images: ClassVar[bool] = True  # whether a mock model reads them: its ``vision``

    def __init__(self, settings: dict | None = None) -> None:
        self.settings = MockSettings.from_dict(settings or {})

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        s = self.settings
        if images_of(request) and not s.vision:
            # At once, before any wait: a server checks the request before the model runs.
            yield StreamError("bad_request", IMAGES_REFUSED.format(model=request.model_id))
            return
        if s.judge and s.misbehaviour == "judge_rejects_temperature":
            if "temperature" in request.params:
                yield StreamError("bad_request", "'temperature' is not supported by this model.")
                return
        text = judge_reply(request, s) if s.judge else answer_text(request.model_id, request, s)
        chunks = list(word_chunks(text))
        if s.misbehaviour == "prefix_by_char" and text.startswith(s.prefix):
            chunks = [*s.prefix, *word_chunks(text[len(s.prefix) :])]
        # A chunk is a token here: never more than max_tokens, cut as a real server cuts.
        limit = int(request.params.get("max_tokens") or 0)
        cut = 0 < limit < len(chunks)
        chunks = chunks[:limit] if cut else chunks
        prompt = prompt_tokens(request)
        ttft = s.ttft_ms * (20 if s.misbehaviour == "slow_first_token" else 1)
        await asyncio.sleep(ttft / 1000)
        if s.misbehaviour == "stall":
            await asyncio.Event().wait()
        # Misbehaviours that end the stream before any text.
        ending = {
            "error": StreamError("server", "The mock backend failed on purpose."),
            "refused": Finished("refusal", prompt, 0),
            "blocked": StreamError("content_filter", "The mock backend blocked this request."),
            "empty": Finished("stop", prompt, 0),
        }.get(s.misbehaviour)
        if ending is not None:
            yield ending
            return
        delay = 1.0 / s.tokens_per_s if s.tokens_per_s > 0 else 0.0
        for word in thinking_words(s.thinks):
            yield ReasoningDelta(word)
            await asyncio.sleep(delay)
        for i, chunk in enumerate(chunks):
            if s.misbehaviour == "error_midstream" and i == len(chunks) // 2:
                yield StreamError("server", "The mock backend failed mid-stream on purpose.")
                return
            if s.misbehaviour == "missing_terminal" and i == len(chunks) // 2:
                return
            yield TextDelta(f"⟨{time.time():.6f}⟩{chunk}" if s.timestamps else chunk)
            await asyncio.sleep(delay)
        if s.misbehaviour == "no_usage":
            yield Finished("stop", None, None, request_id="mock-no-usage")
        elif s.misbehaviour == "incomplete" or cut:
            yield Finished("length", prompt, len(chunks) + s.thinks)
        else:
            # As real servers count them, thinking tokens are output tokens too.
            yield Finished("stop", prompt, len(chunks) + s.thinks, request_id="mock")
