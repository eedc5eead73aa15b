"""The web process's one pacing schedule, on the real answer streams (Redis in CI, memory
otherwise), with viewers that record what a socket would be sent."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from arena.battles.live import FRAME_MAX_S, Schedule, Watch, frame_period, schedule
from arena.battles.selectors import TurnSides
from arena.generation.streams import answer_streams, stream_key
from tests.helpers import RECEIVE_TIMEOUT


class Recorder:
    """A socket's side of live.Viewer: what it was sent and told."""

    def __init__(self, *, broken: bool | Exception = False) -> None:
        self.frames: list[dict] = []
        self.told: list[str] = []
        self.ended = asyncio.Event()
        self.broken = broken
        self.refused = asyncio.Event()  # a send failed

    async def send_frame(self, payload: dict) -> None:
        if self.broken:
            self.refused.set()
            if isinstance(self.broken, Exception):
                raise self.broken
            raise ConnectionResetError("the socket went away")  # an OSError
        self.frames.append(payload)

    def text(self, side: str) -> str:
        return "".join(f[side] for f in self.frames)

    def _end(self, what: str) -> None:
        self.told.append(what)
        self.ended.set()

    def answer_failed(self, watch: Watch) -> None:
        self._end("failed")

    def answer_redacted(self, watch: Watch) -> None:
        self.told.append("redacted")

    def turn_shown(self, watch: Watch) -> None:
        self._end("shown")

    def turn_overdue(self, watch: Watch) -> None:
        self._end("overdue")

    def pacing_failed(self, watch: Watch) -> None:
        self._end("pacing failed")


def a_turn() -> tuple[uuid.UUID, TurnSides]:
    return uuid.uuid4(), TurnSides(turn_id=1, index=0, sides={1: "a", 2: "b"}, finished={})


def watch(viewer: Recorder, battle_id: uuid.UUID, turn: TurnSides, **extra) -> Watch:
    options = {"terms": ("Secret Model",), "deadline_s": 60.0, **extra}
    return Watch.for_turn(viewer=viewer, battle_id=battle_id, turn=turn, **options)


async def generate(battle_id: uuid.UUID, texts: dict[int, list[str]], status: str = "ok"):
    streams = answer_streams()
    for pieces in zip(*texts.values(), strict=True):
        for answer_id, piece in zip(texts, pieces, strict=True):
            await streams.append(stream_key(battle_id=battle_id, answer_id=answer_id), piece)
        await asyncio.sleep(0.002)
    for answer_id in texts:
        await streams.finish(stream_key(battle_id=battle_id, answer_id=answer_id), status)


A = ["Alpha ", "beta ", "gamma."]
B = ["One ", "two ", "three."]


@pytest.fixture(autouse=True)
def _shared(settings):
    settings.ARENA = {**settings.ARENA, "PACE_TICK_MS": 2, "PACE_CHARS": 4}


async def test_two_sockets_on_one_turn_each_get_all_of_it():
    battle_id, turn = a_turn()
    first, second = Recorder(), Recorder()
    schedule().add(watch(first, battle_id, turn))
    writer = asyncio.create_task(generate(battle_id, {1: A, 2: B}))
    await asyncio.sleep(0.01)
    schedule().add(watch(second, battle_id, turn))  # a second tab, after some was shown
    await asyncio.wait_for(asyncio.gather(first.ended.wait(), second.ended.wait()), RECEIVE_TIMEOUT)
    await writer
    for viewer in (first, second):
        assert (viewer.text("a"), viewer.text("b")) == ("".join(A), "".join(B))
        assert viewer.told == ["shown"]


async def test_one_broken_socket_does_not_hold_up_another():
    broken_id, broken_turn = a_turn()
    battle_id, turn = a_turn()
    broken, fine = Recorder(broken=True), Recorder()
    schedule().add(watch(broken, broken_id, broken_turn))
    schedule().add(watch(fine, battle_id, turn))
    await asyncio.gather(generate(broken_id, {1: A, 2: B}), generate(battle_id, {1: A, 2: B}))
    await asyncio.wait_for(fine.ended.wait(), RECEIVE_TIMEOUT)
    assert (fine.text("a"), fine.text("b")) == ("".join(A), "".join(B))
    assert broken.told == []  # dropped from the schedule, not retried every tick


async def test_a_failed_answer_ends_the_watch_as_failed():
    battle_id, turn = a_turn()
    viewer = Recorder()
    schedule().add(watch(viewer, battle_id, turn))
    await generate(battle_id, {1: A, 2: B}, status="error")
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)
    assert viewer.told == ["failed"]


async def test_a_turn_shown_again_after_it_ended_comes_from_what_was_kept():
    # Its streams are gone (expired, another deployment's Redis): the answers' own text.
    battle_id, _ = a_turn()
    turn = TurnSides(
        turn_id=1,
        index=0,
        sides={1: "a", 2: "b"},
        finished={1: ("ok", "Kept A."), 2: ("ok", "Kept B.")},
    )
    viewer = Recorder()
    schedule().add(watch(viewer, battle_id, turn))
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)
    assert (viewer.text("a"), viewer.text("b"), viewer.told) == ("Kept A.", "Kept B.", ["shown"])


async def test_a_name_is_redacted_and_the_viewer_told():
    battle_id, turn = a_turn()
    viewer = Recorder()
    schedule().add(watch(viewer, battle_id, turn))
    await generate(battle_id, {1: ["I am Sec", "ret Model, hi."], 2: ["Plain ", "answer here."]})
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)
    assert "Secret" not in viewer.text("a") and "Sec" not in viewer.text("a")
    assert "redacted" in viewer.told and viewer.told[-1] == "shown"


async def test_a_stalled_turn_asks_its_viewer_about_the_deadline():
    battle_id, turn = a_turn()
    viewer = Recorder()
    schedule().add(watch(viewer, battle_id, turn, deadline_s=0.02))
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)  # no answer ever comes
    assert viewer.told == ["overdue"]
    schedule().remove(next(w for w in schedule().watches if w.viewer is viewer))


async def test_a_bug_pacing_a_battle_ends_that_battle_and_no_other():
    buggy_id, buggy_turn = a_turn()
    battle_id, turn = a_turn()
    buggy, fine = Recorder(), Recorder()
    broken = watch(buggy, buggy_id, buggy_turn)

    def tick():
        raise ValueError("a pacing bug")

    broken.pacer.tick = tick
    schedule().add(broken)
    schedule().add(watch(fine, battle_id, turn))
    await asyncio.gather(generate(buggy_id, {1: A, 2: B}), generate(battle_id, {1: A, 2: B}))
    await asyncio.wait_for(asyncio.gather(buggy.ended.wait(), fine.ended.wait()), RECEIVE_TIMEOUT)
    assert (buggy.told, fine.told) == (["pacing failed"], ["shown"])
    assert fine.text("a") == "".join(A)


def test_frames_come_every_tick_for_a_few_turns_and_at_most_thirty_a_second_for_many():
    assert frame_period(0.01, 1) == 0.01
    periods = [frame_period(0.01, shown) for shown in range(0, 200, 4)]
    assert periods == sorted(periods)  # further apart as more turns are shown, never closer
    assert periods[-1] == pytest.approx(FRAME_MAX_S)
    # A tick longer than that (the default pacing's 40 ms) is a frame each tick, as ever.
    assert frame_period(0.04, 1) == frame_period(0.04, 500) == 0.04


async def test_a_frame_carries_everything_released_in_the_ticks_since_the_last():
    battle_id, turn = a_turn()
    viewer = Recorder()
    shown = watch(viewer, battle_id, turn)
    shown.pacer.feed("a", "a" * 30)
    shown.pacer.feed("b", "b" * 30)
    ticker = Schedule()
    ticker.watches[shown] = None
    await ticker._step(shown, range(1, 4))  # three ticks of 4 characters each side, one frame
    assert viewer.frames == [{"type": "delta", "a": "a" * 12, "b": "b" * 12}]
    await ticker._step(shown, range(4, 5))
    assert viewer.frames[-1] == {"type": "delta", "a": "a" * 4, "b": "b" * 4}
    assert shown.pacer.now == 4  # paced tick by tick: the pace counts every tick


async def test_a_turn_waiting_for_its_models_costs_no_step_until_text_comes():
    battle_id, turn = a_turn()
    viewer = Recorder()
    waiting = watch(viewer, battle_id, turn)
    ticker = schedule()
    ticker.add(waiting)

    async def frames(n: int) -> None:
        until = ticker.frames + n
        async with asyncio.timeout(RECEIVE_TIMEOUT):
            while ticker.frames < until:
                await asyncio.sleep(0.002)

    await frames(2)  # its first step, as it was added: nothing to show yet
    ticked = waiting.pacer.now
    await frames(10)
    assert waiting.pacer.now == ticked and viewer.frames == []  # read for, never stepped
    await generate(battle_id, {1: A, 2: B})
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)
    assert (viewer.text("a"), viewer.text("b"), viewer.told) == ("".join(A), "".join(B), ["shown"])


def closed_socket_errors() -> list[Exception]:
    """What servers raise when a frame is sent on a socket that has just closed."""
    from autobahn.exception import Disconnected
    from websockets.exceptions import ConnectionClosedError

    return [
        Disconnected("Attempt to send on a closed protocol"),  # daphne, in the close handshake
        ConnectionClosedError(None, None),
        BrokenPipeError(32, "Broken pipe"),
        # A server that says so some other way: still only the socket, never the battle.
        RuntimeError("Unexpected ASGI message 'websocket.send', after sending 'websocket.close'"),
    ]


@pytest.mark.parametrize("error", closed_socket_errors(), ids=lambda e: type(e).__name__)
async def test_a_socket_that_closes_under_a_frame_only_leaves_the_schedule(error, caplog):
    closed_id, closed_turn = a_turn()
    battle_id, turn = a_turn()
    closed, fine = Recorder(broken=error), Recorder()
    gone = watch(closed, closed_id, closed_turn)
    schedule().add(gone)
    schedule().add(watch(fine, battle_id, turn))
    await asyncio.gather(generate(closed_id, {1: A, 2: B}), generate(battle_id, {1: A, 2: B}))
    await asyncio.wait_for(
        asyncio.gather(closed.refused.wait(), fine.ended.wait()), RECEIVE_TIMEOUT
    )
    # Not "pacing failed", which voids the battle: the rater may come back and carry on.
    assert closed.told == []
    assert gone not in schedule()
    assert fine.told == ["shown"] and fine.text("a") == "".join(A)
    assert "pacing a battle failed" not in caplog.text


def test_closed_socket_errors_are_told_from_bugs():
    from arena.battles.live import socket_closed

    known, unknown = closed_socket_errors()[:3], closed_socket_errors()[3]
    assert all(socket_closed(e) for e in known)
    assert not socket_closed(unknown)
    assert not socket_closed(ValueError("a bug"))


async def test_a_sides_last_characters_are_shown_at_its_texts_end_and_the_turn_at_its_status():
    # "Sec" may begin the name "Secret Model": held back until nothing more can join it. The
    # text's end says so before the answer's status, which waits for its database write.
    battle_id, turn = a_turn()
    viewer = Recorder()
    schedule().add(watch(viewer, battle_id, turn))
    streams = answer_streams()
    keys = {side: stream_key(battle_id=battle_id, answer_id=pk) for pk, side in turn.sides.items()}
    for side, text in (("a", "Hello Sec"), ("b", "Fine here")):
        await streams.append(keys[side], text)
        await streams.put(keys[side], "", end=True)
    async with asyncio.timeout(RECEIVE_TIMEOUT):
        while viewer.text("a") != "Hello Sec":
            await asyncio.sleep(0.002)
    assert viewer.text("b") == "Fine here" and viewer.told == []  # no status yet: not shown
    for key in keys.values():
        await streams.finish(key, "ok")
    await asyncio.wait_for(viewer.ended.wait(), RECEIVE_TIMEOUT)
    assert viewer.told == ["shown"]
    assert (viewer.text("a"), viewer.text("b")) == ("Hello Sec", "Fine here")
