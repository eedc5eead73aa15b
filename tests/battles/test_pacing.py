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


def _redacting_pacer(chars_per_tick: int) -> Pacer:
    from functools import partial

    from arena.integrity.checks import name_tail, redact

    terms = ("Claude", "Deep Owl")
    return Pacer(
        chars_per_tick=chars_per_tick,
        redact=partial(redact, terms=terms),
        hold=partial(name_tail, terms=terms),
    )


def test_a_name_split_across_chunks_is_never_shown_even_in_part():
    text = "The answer comes from Claude, really."
    for cut in range(1, len(text)):
        pacer = _redacting_pacer(chars_per_tick=2)
        pacer.feed("b", "Fine. " * 20)  # never the side that waits
        shown = ""
        for chunk in (text[:cut], text[cut:]):
            pacer.feed("a", chunk)
            for out in drain(pacer, 40):
                shown += out["a"]
                assert "Cl" not in shown, cut
            # Everything that cannot begin a name is out while the stream still runs.
            assert shown == pacer.panes["a"].text[: len(shown)]
        assert shown.startswith("The answer comes from"), cut
        pacer.finish("a")
        pacer.finish("b")
        shown += "".join(out["a"] for out in drain(pacer, 40))
        assert shown == "The answer comes from [model name], really.", cut


def test_text_that_cannot_begin_a_name_is_released_at_once():
    pacer = _redacting_pacer(chars_per_tick=100)
    pacer.feed("a", "Hello there, ")
    pacer.feed("b", "Good day to ")

    out = pacer.tick()

    # Held back by the longest name's length, "Deep Owl", this tick would show 4 characters.
    assert out == {"a": "Hello there,"[:12], "b": "Good day to "[:12]}
