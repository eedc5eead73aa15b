"""Per-feed cost of the pacer's name redaction: a 4000-character answer fed in 4-character stream
entries to one side while the other has nothing yet (so nothing is shown and the backlog to
redact grows to the whole answer: a fast model against a slow one).

"full" redacts the whole unshown backlog at every entry (the pacer as it was), "pacer" is the
pacer as it is; both run here, on the same text, and must end with the same text.

    uv run python bench/pacing_redaction.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.battles.pacing import Pacer, _Pane  # noqa: E402
from arena.integrity.checks import name_tail, redact  # noqa: E402

# The default identity terms a deployment masks, and one of the demo's model names.
VENDORS = "Claude Anthropic GPT ChatGPT OpenAI Gemini Google Llama Meta Mistral xAI"
TERMS = (*VENDORS.split(), "Deep Owl")
SIZE, ENTRY = 4000, 4

PROSE = {
    "ASCII": (
        "Here is a detailed answer: after the crisis, the economy recovered thanks to "
        "structural reforms, lower rates and a weaker currency. Where are we today? Exports "
        "grew (by 4% a year), unemployment fell; some say C l a u d e would disagree. "
    ),
    "French": (
        "Voici une réponse détaillée : après la crise, l'économie française s'est redressée "
        "grâce à des réformes structurelles, à des taux plus bas et à l'euro. Où en sommes-nous "
        "aujourd'hui ? Les exportations ont crû (de 4 % par an) ; Сlaude n'est pas d'accord. "
    ),
    "Chinese": (
        "这是一个详细的回答：危机之后，经济通过结构性改革、较低的利率和较弱的货币得以恢复。"
        "我们今天处于什么位置？出口每年增长百分之四，失业率下降；有人说ＧＰＴ不同意。"
    ),
}


class FullRescan(Pacer):
    """The baseline: every entry redacts the whole unshown backlog again."""

    def _redact(self, pane: _Pane) -> None:
        if self.redact is None:
            return
        held = self.hold(pane.text, pane.shown) if self.hold and not pane.done else 0
        cut = len(pane.text) - held
        unshown = pane.text[pane.shown : cut]
        cleaned = self.redact(unshown)
        if cleaned != unshown:
            self.redactions += 1
            pane.text = pane.text[: pane.shown] + cleaned + pane.text[cut:]
            pane.held = (-1, -1, 0)


def feed_all(kind: type[Pacer], text: str) -> tuple[float, str]:
    pacer = kind(redact=partial(redact, terms=TERMS), hold=partial(name_tail, terms=TERMS))
    began = time.perf_counter()
    for at in range(0, len(text), ENTRY):
        pacer.feed("a", text[at : at + ENTRY])
    spent = time.perf_counter() - began
    pacer.finish("a")
    return spent / (len(text) // ENTRY), pacer.panes["a"].text


def hold_only(text: str) -> float:
    """What the name tail check alone (integrity's ``name_tail``) costs at each entry."""
    began = time.perf_counter()
    for at in range(ENTRY, len(text) + 1, ENTRY):
        name_tail(text[:at], 0, TERMS)
    return (time.perf_counter() - began) / (len(text) // ENTRY)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs each; the best is shown")
    args = parser.parse_args()
    redact("warm up", TERMS)
    print(f"{SIZE} characters in {ENTRY}-character entries, per entry (best of {args.repeat}):")
    print(f"{'text':<8} {'full re-scan':>14} {'pacer':>10} {'speed-up':>9} {'of it, hold':>12}")
    for name, prose in PROSE.items():
        text = (prose * (SIZE // len(prose) + 1))[:SIZE]
        full = min(feed_all(FullRescan, text) for _ in range(args.repeat))
        ours = min(feed_all(Pacer, text) for _ in range(args.repeat))
        hold = min(hold_only(text) for _ in range(args.repeat))
        if full[1] != ours[1]:
            raise SystemExit(f"{name}: the pacer's redaction differs from a full re-scan")
        print(
            f"{name:<8} {full[0] * 1e6:>11.0f} µs {ours[0] * 1e6:>7.0f} µs "
            f"{full[0] / ours[0]:>8.1f}x {hold * 1e6:>9.0f} µs"
        )


if __name__ == "__main__":
    main()
