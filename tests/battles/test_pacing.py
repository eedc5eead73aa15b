"""Pacing is pure: feed two streams, tick, and check what each pane may show."""

from __future__ import annotations

from arena.battles.pacing import Pacer


def drain(pacer: Pacer, ticks: int) -> list[dict[str, str]]:
    return [pacer.tick() for _ in range(ticks)]


def test_nothing_is_shown_until_both_sides_have_text():
    pacer = Pacer(chars_per_tick=5)
    pacer.feed("a", "fast model already has a lot to say")
    assert drain(pacer, 3) == [{"a": "", "b": ""}] * 3
    pacer.feed("b", "slow")
    assert pacer.tick() == {"a": "fast", "b": "slow"}


def test_both_panes_advance_by_the_same_amount():
    pacer = Pacer(chars_per_tick=4)
    pacer.feed("a", "a" * 40)
    pacer.feed("b", "b" * 40)
    for out in drain(pacer, 5):
        assert len(out["a"]) == len(out["b"]) == 4


def test_a_starved_side_holds_back_the_other():
    pacer = Pacer(chars_per_tick=10)
    pacer.feed("a", "x" * 100)
    pacer.feed("b", "yy")
    assert pacer.tick() == {"a": "xx", "b": "yy"}
    # b has nothing new and is not finished: neither pane moves.
    assert pacer.tick() == {"a": "", "b": ""}
    pacer.feed("b", "zzz")
    assert pacer.tick() == {"a": "xxx", "b": "zzz"}


def test_a_finished_side_lets_the_other_continue_alone():
    pacer = Pacer(chars_per_tick=3)
    pacer.feed("a", "abc")
    pacer.finish("a")
    pacer.feed("b", "123456789")
    pacer.finish("b")
    shown = drain(pacer, 5)
    assert "".join(o["a"] for o in shown) == "abc"
    assert "".join(o["b"] for o in shown) == "123456789"
    assert pacer.all_shown


def test_a_side_that_fails_before_any_text_still_releases_the_pacer():
    pacer = Pacer(chars_per_tick=3)
    pacer.feed("a", "hello")
    pacer.finish("b")
    assert pacer.started
    pacer.finish("a")
    drain(pacer, 3)
    assert pacer.all_shown


def test_duplicate_deltas_are_dropped():
    pacer = Pacer(chars_per_tick=100)
    pacer.feed("a", "one ", seq=1)
    pacer.feed("a", "one ", seq=1)
    pacer.feed("a", "two", seq=2)
    pacer.feed("b", "x", seq=1)
    pacer.finish("a")
    pacer.finish("b")
    assert pacer.tick()["a"] == "one two"


def test_a_large_backlog_is_caught_up_in_bounded_ticks():
    pacer = Pacer(chars_per_tick=1, catch_up_ticks=10)
    pacer.feed("a", "a" * 1000)
    pacer.feed("b", "b" * 1000)
    pacer.finish("a")
    pacer.finish("b")
    ticks = 0
    while not pacer.all_shown:
        out = pacer.tick()
        assert len(out["a"]) == len(out["b"])
        ticks += 1
    assert ticks < 100
