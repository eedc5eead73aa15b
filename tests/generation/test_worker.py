"""One answer end to end through the engine (generation.worker), with a caller's claim and
finish of the test's own and the mock backend."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from arena.backends.base import ChatRequest, Message
from arena.backends.mock import MockBackend
from arena.core.answers import AnswerStatus
from arena.generation.runner import StreamResult
from arena.generation.streams import START, answer_streams, stream_key
from arena.generation.worker import GenerationJob, answer_generate
from tests.helpers import RECEIVE_TIMEOUT


@pytest.mark.django_db(transaction=True)  # the finish runs on a thread, as the caller's does
async def test_an_answers_text_is_said_whole_before_its_finish_is_written():
    key = stream_key(battle_id=uuid.uuid4(), answer_id=1)
    seen = threading.Event()  # the test saw the text's end while the finish was still to come
    finished: list[str] = []

    def claim(*, answer_id: int) -> GenerationJob:
        backend = MockBackend({"ttft_ms": 0, "tokens_per_s": 0})
        request = ChatRequest("mock-a", (Message("user", "Say something."),), {})
        return GenerationJob(
            key=key, backend=backend, request=request, timeout_s=30, max_chars=10_000
        )

    def finish(*, answer_id: int, result: StreamResult, memo: object) -> str:
        # The caller's database write: a crowd's may queue for a while; the rater need not.
        finished.append(result.status)
        seen.wait(RECEIVE_TIMEOUT)
        return result.status

    generating = asyncio.create_task(answer_generate(1, claim=claim, finish=finish))
    cursor, entries = START, []
    async with asyncio.timeout(RECEIVE_TIMEOUT):
        while not any(e.end for e in entries):
            got = await answer_streams().read({key: cursor})
            entries += got
            cursor = got[-1].id if got else cursor
            await asyncio.sleep(0.002)
    assert not any(e.done for e in entries)  # the status waits for the finish
    seen.set()
    await asyncio.wait_for(generating, RECEIVE_TIMEOUT)
    assert finished == [AnswerStatus.OK]
    rest = await answer_streams().read({key: cursor})
    assert [e.done for e in rest] == ["ok"]
    assert "".join(e.text for e in entries)  # the text came before its end
