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


def test_a_turn_whose_answers_had_both_ended_before_it_was_shown_is_caught_up_to_the_end():
    # A turn shown again: no model's speed is in it, so the longer answer is not held to a pace.
    pacer = Pacer(chars_per_tick=1, catch_up_ticks=10)
    pacer.feed("a", "a" * 50)
    pacer.feed("b", "b" * 2000)
    pacer.finish("a")
    pacer.finish("b")
    ticks = 0
    while not pacer.all_shown:
        pacer.tick()
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


# A pane left alone: the other model's speed must not show -----------------------------------


def play(pacer: Pacer, feeds: dict[str, list[str | None]], ticks: int, *, skip_idle=False):
    """Drive the pacer through two stream timelines: ``feeds[side][t]`` is the text that side's
    model wrote before tick t (None: its stream ended). With ``skip_idle`` it is ticked as the
    live schedule does, only while something is to be shown, with the tick's index."""
    released = []
    for t in range(ticks):
        fresh = False
        for side, timeline in feeds.items():
            if t < len(timeline) and not pacer.panes[side].done:
                fresh |= timeline[t] != ""  # "": the model wrote nothing, no entry came
                if timeline[t] is None:
                    pacer.finish(side)
                else:
                    pacer.feed(side, timeline[t])
        if skip_idle and not fresh and not any(p.backlog for p in pacer.panes.values()):
            released.append({"a": "", "b": ""})
            continue
        released.append(pacer.tick(at=t + 1) if skip_idle else pacer.tick())
    return released


def timeline(per_tick: int, ticks: int, letter: str) -> list[str | None]:
    return [letter * per_tick] * ticks + [None]


def test_the_pane_left_alone_goes_on_at_the_pace_both_had_whatever_its_model_speed():
    # Both models write 3 characters a tick for 40 ticks; a's answer then ends. b goes on at 30
    # a tick (and ends long before it is shown) or at 4 a tick, both above the pace seen so far.
    shared = ["b" * 3] * 40
    fast = play(
        Pacer(chars_per_tick=12),
        {"a": timeline(3, 40, "a"), "b": shared + timeline(30, 20, "b")},
        300,
    )
    slow = play(
        Pacer(chars_per_tick=12),
        {"a": timeline(3, 40, "a"), "b": shared + timeline(4, 150, "b")},
        300,
    )
    a_ended = 40  # the first tick after a's last character was shown
    assert "".join(o["a"] for o in fast) == "a" * 120
    assert all(o["a"] == "" for o in fast[a_ended:])
    after_fast = [len(o["b"]) for o in fast[a_ended : a_ended + 200]]
    after_slow = [len(o["b"]) for o in slow[a_ended : a_ended + 200]]
    # The same schedule, at the pace both panes showed together, however fast b's model is,
    # and with no catching up when the fast one's stream ends.
    assert after_fast == after_slow == [3] * 200


def test_a_model_that_falls_behind_the_pace_is_waited_for_in_whole_steps():
    feeds = {"a": timeline(4, 30, "a"), "b": ["b" * 4] * 30 + ["b"] * 40 + [None]}
    released = play(Pacer(chars_per_tick=12), feeds, 200)
    alone = [len(o["b"]) for o in released[31:]]
    # b now writes 1 character a tick: it is shown 4 at a time with pauses between, never a
    # character a tick as it arrives; once its stream ended, the rest comes out at the pace.
    assert set(alone) <= {0, 4}
    assert "".join(o["b"] for o in released) == "b" * 160


def test_the_pace_counts_the_ticks_the_live_schedule_skips_while_nothing_is_to_be_shown():
    # Both models write 6 characters every third tick: between, neither pane has anything to
    # show and the schedule does not tick, but the pace is still 2 a tick, not 6.
    def every_third(letter: str) -> list[str]:
        return [letter * 6 if t % 3 == 0 else "" for t in range(60)]

    feeds = {"a": [*every_third("a"), None], "b": every_third("b") + ["b" * 30] * 10 + [None]}
    skipping = play(Pacer(chars_per_tick=8), feeds, 200, skip_idle=True)
    every = play(Pacer(chars_per_tick=8), feeds, 200)
    after = [len(o["b"]) for o in skipping[70:150]]
    assert after == [len(o["b"]) for o in every[70:150]] == [2] * 80


def test_a_slow_pair_does_not_hold_the_pane_left_alone_below_a_quarter_of_the_cap():
    # Both models write a character a tick; b's then has 300 more at once. It is not shown at
    # the pair's crawl (1 a tick), nor all at once or at the cap: at a quarter of the cap.
    feeds = {"a": timeline(1, 40, "a"), "b": ["b"] * 40 + ["b" * 300, None]}
    released = play(Pacer(chars_per_tick=12), feeds, 200)
    assert [len(o["b"]) for o in released[40:140]] == [3] * 100


def test_the_pace_left_alone_is_fixed_when_the_other_pane_ends_whatever_the_model_then_stalls():
    # a's answer is all there at once; b's model writes 6 characters a tick, so both panes show
    # 6 a tick and a's is whole after 40 ticks. b's model then stalls, and the live schedule
    # (nothing to show) does not tick the pacer, before it writes 10 a tick: b goes on at the 6
    # a tick the rater saw, however long the stall.
    def alone(stall: int) -> list[int]:
        feeds = {
            "a": ["a" * 240, None],
            "b": ["b" * 6] * 40 + [""] * stall + ["b" * 10] * 30 + [None],
        }
        released = play(Pacer(chars_per_tick=12), feeds, 40 + stall + 60, skip_idle=True)
        assert all(o == {"a": "", "b": ""} for o in released[40 : 40 + stall]), stall
        return [len(o["b"]) for o in released[40 + stall :]]

    assert alone(1) == alone(30) == alone(100) == [6] * 50 + [0] * 10


# Redaction re-reads only what a name could still reach ------------------------------------


class FullRescan(Pacer):
    """The pacer redacting all its unshown text again at each entry, as it once did."""

    def _redact(self, pane) -> None:
        held = self.hold(pane.text, pane.shown) if not pane.done else 0
        cut = len(pane.text) - held
        unshown = pane.text[pane.shown : cut]
        cleaned = self.redact(unshown)
        if cleaned != unshown:
            self.redactions += 1
            pane.text = pane.text[: pane.shown] + cleaned + pane.text[cut:]
            pane.held = (-1, -1, 0)


SEED, CASES = 20261202, 150
TERMS = ("Claude", "Anthropic", "GPT", "ChatGPT", "OpenAI", "Llama", "Meta", "Deep Owl")
PIECES = (
    # names, whole and disguised, and things near them
    "Claude", "C l a u d e", "Сlaude", "Cl\u200baude", "ＧＰＴs", "A-n-t-h-r-o-p-i-c",
    "ClaudeAI", "Cl**au**de", "GPT-4o", "Llama3.1", "Deep Owl", "DeepOwl", "G. P. T.",
    "\u202eedualC\u202c", "\u202eabc", "\u202c", "Claudette", "AskClaude", "meta", "Meta's",
    "\x07", "\x1f", "C\u200b\u200b\u200bl\u200ba\u200bu\u200bd\u200be",
    # ordinary text, breaks between words and none
    " ", " ", "  ", "\n", "\n\n", ", ", ". ", "; ", "(", ")", ": ", "'", "—", "-", "_", "*",
    "the answer", "économie", "l'été", "经济", "改革，", "。", "我是", "模型", "a b c", "x",
    "1.5", "I", "l", "e", "s", "😀",
)  # fmt: skip


def test_redacting_only_what_a_name_could_reach_shows_what_redacting_it_all_again_shows():
    import random
    from functools import partial

    from arena.integrity.checks import name_tail, redact

    rng = random.Random(SEED)
    for case in range(CASES):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 60)))
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randrange(0, 30))))
        chunks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        other = rng.choice(["", "Fine, thanks. " * 3])
        ticks = [rng.random() < 0.3 for _ in chunks]
        cap = rng.choice([1, 3, 50])
        runs = []
        for kind in (Pacer, FullRescan):
            pacer = kind(
                chars_per_tick=cap,
                redact=partial(redact, terms=TERMS),
                hold=partial(name_tail, terms=TERMS),
            )
            if other:
                pacer.feed("b", other)
            out = []
            for chunk, tick in zip(chunks, ticks, strict=True):
                pacer.feed("a", chunk)
                if tick:
                    out.append(pacer.tick()["a"])
            pacer.finish("a")
            pacer.finish("b")
            out += [pacer.tick()["a"] for _ in range(len(text) + 5)]
            runs.append(("".join(out), out, pacer.panes["a"].text, pacer.redactions))
        assert runs[0] == runs[1], (case, chunks)


def test_a_long_answer_fed_in_small_entries_is_not_redacted_again_whole_at_each():
    from functools import partial

    from arena.integrity.checks import name_tail, redact

    read = []

    def counting(text: str) -> str:
        read.append(len(text))
        return redact(text, TERMS)

    answer = ("After the crisis, the economy recovered; C l a u d e says so (twice). " * 60)[:4000]
    pacer = Pacer(redact=counting, hold=partial(name_tail, terms=TERMS))
    for at in range(0, len(answer), 4):
        pacer.feed("a", answer[at : at + 4])  # b has nothing yet: nothing is shown
    pacer.finish("a")
    assert "C l a u d e" not in pacer.panes["a"].text
    # Each entry reads what came since the last break before it, not the whole backlog
    # (which would be about 2 million characters in all).
    assert sum(read) < 40 * len(answer)


def test_a_stalled_pacer_left_unticked_releases_the_same_text_at_the_same_ticks():
    """The live schedule stops ticking a stalled pacer until text or an end comes in, then
    says the tick with ``at``: the text released, and the tick each piece is released at,
    are those of a pacer ticked at every tick."""
    import random
    from functools import partial

    from arena.integrity.checks import name_tail, redact

    terms = ("Claude", "GPT", "Deep Owl")
    words = ["the ", "answer ", "is ", "Cl", "aude ", "G", "PT-4 ", "Deep ", "Owl ", ", ", "x"]
    for seed in range(150):
        rng = random.Random(seed)
        made = {
            "chars_per_tick": rng.choice([1, 3, 12, 1000]),
            "pace_window_ticks": rng.choice([2, 25]),
        }
        if seed % 2:
            made |= {
                "redact": partial(redact, terms=terms),
                "hold": partial(name_tail, terms=terms),
            }
        every, skipping = Pacer(**made), Pacer(**made)
        # Each side's entries: (tick, text), then its end.
        plan: dict[int, list[tuple[str, str | None]]] = {}
        for side in ("a", "b"):
            at = rng.randint(1, 20)
            for _ in range(rng.randint(0, 30)):
                at += rng.choice([0, 1, 1, 2, 5, 15])
                plan.setdefault(at, []).append((side, rng.choice(words)))
            plan.setdefault(at + rng.randint(0, 10), []).append((side, None))
        fed_since_tick = True
        for at in range(1, 2000):
            for side, text in plan.get(at, []):
                for pacer in (every, skipping):
                    pacer.feed(side, text) if text is not None else pacer.finish(side)
                fed_since_tick = True
            expected = every.tick(at=at)
            if skipping.stalled and not fed_since_tick:
                assert expected == {"a": "", "b": ""}, (seed, at)
            else:
                assert skipping.tick(at=at) == expected, (seed, at)
                fed_since_tick = False
            if every.all_shown and at > max(plan):
                break
        assert skipping.all_shown and every.all_shown, seed
        assert [p.text for p in skipping.panes.values()] == [p.text for p in every.panes.values()]
