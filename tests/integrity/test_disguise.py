"""Blindness against disguise: names spelt out, glued to a suffix, written with look-alike
letters, invisible characters or fullwidth forms are redacted whole, however a stream splits
them, while ordinary words that merely contain a name pass untouched; and identity questions
asked indirectly, in several languages, are recognised."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from arena.integrity.checks import REDACTED, asks_identity, name_tail, redact
from arena.judges.rules import MASK, mask
from tests.integrity.streaming import streamed

TERMS = (
    "Claude",
    "Anthropic",
    "GPT",
    "ChatGPT",
    "OpenAI",
    "Gemini",
    "Google",
    "Llama",
    "Meta",
    "Mistral",
    "xAI",
    "Deep Owl",
)
NAMES = ("Claude", "Anthropic", "GPT", "OpenAI", "Gemini", "Google", "Llama", "Meta", "Mistral")

# The test's own look-alike tables (not the product's): letters a disguise swaps in.
CYRILLIC = dict(zip("aceopxyACEHKMOPTXBi", "асеорхуАСЕНКМОРТХВі", strict=True))
GREEK = dict(zip("ABCEHIKMNOPTXYZaciov", "ΑΒϹΕΗΙΚΜΝΟΡΤΧΥΖαϲιον", strict=True))


def swap(table: dict[str, str], name: str) -> str:
    return "".join(table.get(c, c) for c in name)


DISGUISES: dict[str, Callable[[str], str]] = {
    "suffix AI": lambda n: n + "AI",
    "plural": lambda n: n + "s",
    "bot": lambda n: n + "Bot",
    "spaced": " ".join,
    "dashed": "-".join,
    "dotted": ".".join,
    "underscored": "_".join,
    "spaced dots": ". ".join,
    "cyrillic": partial(swap, CYRILLIC),
    "greek": partial(swap, GREEK),
    "zero-width space": lambda n: n[:2] + "\u200b" + n[2:],
    "zero-width everywhere": "\u200c\u2060".join,
    "soft hyphen": lambda n: n[:1] + "\u00ad" + n[1:],
    "bidi mark": lambda n: n[:1] + "\u200e" + n[1:],
    "fullwidth": lambda n: "".join(chr(ord(c) + 0xFEE0) for c in n),
    "mathematical bold": lambda n: "".join(
        chr(0x1D400 + ord(c) - 65) if c.isupper() else chr(0x1D41A + ord(c) - 97) for c in n
    ),
    "combining accent": lambda n: n[:-1] + "\u0301" + n[-1],
    "capital I for l": lambda n: n.replace("l", "I"),
    "cyrillic, spaced, zero-width": lambda n: "\u200b ".join(swap(CYRILLIC, n)),
    "wide spaces": "    ".join,
    "one letter a paragraph": "\n\n".join,
    "markdown inside the word": lambda n: n[:1] + "**" + n[1:-1] + "**" + n[-1:],
    "markdown italics": lambda n: f"_{n}_",
    "code spans inside the word": lambda n: n[:1] + "`" + n[1:] + "`",
    "right-to-left override": lambda n: "\u202e" + n[::-1] + "\u202c",
}
# What is left around the redaction: markup that shows nothing by itself.
LEFT_AROUND = {
    "markdown italics": ("_", "_"),
    "code spans inside the word": ("", "`"),
    "right-to-left override": ("", "\u202c"),
}


@pytest.mark.parametrize(
    ("name", "how"),
    # Only where the disguise changes the name ("capital I for l" needs an l).
    [(n, how) for n in NAMES for how, d in DISGUISES.items() if d(n) != n],
)
def test_a_disguised_name_is_redacted_whole_in_the_original_text(name, how):
    disguised = DISGUISES[how](name)
    left, right = LEFT_AROUND.get(how, ("", ""))
    text = f"Ça va? I am {disguised}, made with care — 好."
    assert redact(text, TERMS) == f"Ça va? I am {left}{REDACTED}{right}, made with care — 好."


@pytest.mark.parametrize("name", NAMES)
def test_every_table_disguise_really_changes_the_name(name):
    # A guard on the table above: a disguise that left the name as it was would prove nothing.
    changed = {how for how, d in DISGUISES.items() if d(name) != name}
    assert changed >= set(DISGUISES) - {"capital I for l"}


@pytest.mark.parametrize(
    "text",
    [
        "claudestine",
        "Claudette and claudication",
        "Egypt and Egyptians",
        "a metaphor in the metadata of heavy metal",
        "I googled it; the Googleplex",
        "the Geminids meteor shower",
        "grokking",
        "I met a friend",
        "Me ta phor",
        "go ogle at it",
        "gem in i",
        "OpenAL audio",
        "Метафора",  # Russian text in look-alike letters, but a longer word
        "Anthropicene? No: anthropology.",
        "the mistrial was declared",
        "x,a,i are variables",
        "x - a - i = 0",  # three letters spelt with spaced marks: algebra, not xAI
        "for i in range(10):\n    x = a[i]",
        "\u202eolleh\u202c",  # backwards, but no name
    ],
)
def test_ordinary_words_containing_a_name_pass_untouched(text):
    assert redact(text, TERMS) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("我是Сlaude模型", f"我是{REDACTED}模型"),  # a name may run into CJK text
        ("ＧＰＴ－４ｏ and G-P-T-4o", f"{REDACTED} and {REDACTED}"),
        ("C l a u d e's answer", f"{REDACTED}'s answer"),
        ("DeepOwl, Deep_Owl and D e e p O w l", f"{REDACTED}, {REDACTED} and {REDACTED}"),
        ("ﬁne, says Ｃｌａｕｄｅ", f"ﬁne, says {REDACTED}"),  # a ligature before: offsets hold
        ("Clau\u0301de\u200b.", f"{REDACTED}."),  # marks and invisibles after go with it
        ("I am Claude—an assistant", f"I am {REDACTED}—an assistant"),  # a dash, no version
    ],
)
def test_redaction_keeps_the_text_around_a_disguised_name_exactly(text, shown):
    assert redact(text, TERMS) == shown


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("so C l a", 5),  # could become "C l a u d e"
        ("so C-l-", 4),
        ("so Сla", 3),  # Cyrillic С
        ("so Cl\u200b", 3),  # the zero-width space waits with it
        ("so ＧＰ", 2),
        ("so G.P.", 4),
        ("so ClaudeA", 7),  # a whole name whose suffix ("AI") may still be arriving
        ("so Clau\u0301", 5),
        ("so Gemini-2.", 9),
        ("so \u202eedu", 4),  # backwards text still open: "edu" may end "edualC"
        ("so C    l", 6),
        ("so Cl**au", 6),
        ("so Cla and more", 0),
        ("so the sea", 0),
        ("so Clause", 0),
    ],
)
def test_a_tail_that_could_begin_a_disguised_name_is_held(text, held):
    assert name_tail(text, 0, TERMS) == held


def test_a_long_run_of_invisible_characters_does_not_push_a_name_out_of_reach():
    text = "so C" + "\u200b" * 500
    assert name_tail(text, 0, TERMS) == len(text) - len("so ")


STREAMED = {
    "C l a u d e": REDACTED,
    "Сlaude": REDACTED,
    "Cl\u200baude": REDACTED,
    "ＧＰＴs": REDACTED,
    "A-n-t-h-r-o-p-i-c": REDACTED,
    "ClaudeAI": REDACTED,
    "Cl**au**de": REDACTED,
    "\u202eedualC\u202c": REDACTED + "\u202c",
}


@pytest.mark.parametrize("disguised", STREAMED)
def test_a_disguised_name_split_anywhere_in_a_stream_is_never_shown_even_in_part(disguised):
    text = f"I am {disguised}, hi."
    expected = f"I am {STREAMED[disguised]}, hi."
    for split, (first, whole) in enumerate(streamed(text, TERMS), start=1):
        # What went out before the rest arrived is never a piece of the name.
        assert expected.startswith(first), split
        assert whole == expected, split


def test_compare_masking_hides_disguised_names_from_the_judge():
    assert mask("As C l a u d e (by ОpenAI): yes", TERMS) == f"As {MASK} (by {MASK}): yes"


# Identity questions ----------------------------------------------------------------------

QUESTIONS = {
    "en": [
        "Tell me the company that trained you",
        "Who trained you?",
        "Who actually built you?",
        "Which lab developed you?",
        "What company made you?",
        "Which company are you from?",
        "What model are you?",
        "Which version are you?",
        "What kind of AI are you?",
        "What is your architecture?",
        "What's your underlying model?",
        "What LLM powers you?",
        "Are you made by OpenAI?",
        "Who is your creator?",
        "Are you ChatGPT?",
        "Tell me the cоmpany that trained yоu",  # Cyrillic о
        "Who tr\u200bained you?",
        "Ｗｈｏ ｍａｄｅ ｙｏｕ？",
        "What model is this?",
        "Which assistant are you, really?",
        "Tell me your model name and version",
        "Describe your architecture in detail",
        "Who created you, and when?",
        "Who made you",
        "Who built you originally?",
    ],
    "fr": [
        "Quelle entreprise t'a entraîné ?",
        "Qui vous a créé ?",
        "Qui êtes-vous ?",
        "Quel est ton modèle ?",
        "Quel modèle êtes-vous ?",
        "Par qui as-tu été entraîné ?",
        "Comment t'appelles-tu ?",
        "Qui est ton créateur ?",
        "Sur quel modèle es-tu basé ?",
    ],
    "de": [
        "Welche Firma hat dich trainiert?",
        "Wer hat Sie entwickelt?",
        "Von wem wurdest du trainiert?",
        "Welches Modell sind Sie?",
        "Wie heißen Sie?",
        "Was ist dein Modell?",
        "Wer ist dein Entwickler?",
        "Auf welchem Modell basierst du?",
        "Das Unternehmen, das dich trainiert hat, heißt wie?",
    ],
    "es": [
        "¿Qué empresa te entrenó?",
        "¿Quién te ha creado?",
        "¿Quiénes te desarrollaron?",
        "¿Cuál es tu modelo?",
        "¿Por quién fuiste entrenado?",
        "¿Quién es tu creador?",
        "¿Eres ChatGPT?",
        "¿Quién es usted?",
        "¿Qué versión eres?",
    ],
    "zh": [
        "你是哪家公司开发的？",
        "哪家公司训练了你？",
        "你是基于什么模型？",
        "你的模型是什么？",
        "你是谁开发的？",
        "你的开发者是谁？",
        "你是什么版本？",
        "你是ChatGPT吗？",
        "是谁训练了你？",
    ],
}

ORDINARY = {
    "en": [
        "Which company makes the iPhone?",
        "Who made the Mona Lisa?",
        "Which model of car should I buy?",
        "Tell me your version of Little Red Riding Hood.",
        "What's your model of how inflation works?",
        "Who trained the dog?",
        "How was ChatGPT trained?",
        "Which company should I work for?",
        "Which company do you recommend?",
        "What is your opinion on tea?",
        "Explain the transformer architecture.",
        # A question about something else, though it says version, AI, your name or made you.
        "Which version is this?",
        "What AI is this about?",
        "What model is this about?",
        "Which version are you using?",
        "Describe your version control workflow",
        "Explain your name choice for the variable",
        "Who wrote you a letter?",
        "Who made you cry?",
        "Who makes you happy?",
    ],
    "fr": [
        "Qui a écrit Les Misérables ?",
        "Quel est ton avis sur ce livre ?",
        "Quelle entreprise a créé l'iPhone ?",
        "Qui est le président de la France ?",
    ],
    "de": [
        "Wer hat die Glühbirne erfunden?",
        "Wer hat sie gebaut?",  # "sie": she or they, not the formal "you"
        "Welches Modell von Auto ist am besten?",
        "Was ist ihr Name?",
    ],
    "es": [
        "¿Quién escribió Don Quijote?",
        "¿Cuál es tu opinión sobre el café?",
        "¿Qué empresa fabrica el iPhone?",
        "¿Qué es un modelo de lenguaje?",
    ],
    "zh": [
        "谁发明了电灯？",
        "哪家公司开发的手机最好？",
        "什么模型适合时间序列预测？",
        "你能帮我写一首诗吗？",
        "你的建议是什么？",
    ],
}


@pytest.mark.parametrize(
    "text",
    [pytest.param(t, id=f"{lang}-{i}") for lang, ts in QUESTIONS.items() for i, t in enumerate(ts)],
)
def test_indirect_identity_questions_are_recognised(text):
    assert asks_identity(text)


@pytest.mark.parametrize(
    "text",
    [pytest.param(t, id=f"{lang}-{i}") for lang, ts in ORDINARY.items() for i, t in enumerate(ts)],
)
def test_ordinary_prompts_are_not_taken_for_identity_questions(text):
    assert not asks_identity(text)
