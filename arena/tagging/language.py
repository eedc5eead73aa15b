"""A prompt's language: an ISO 639-1 code, or "und" when the text is too short or too mixed.

py3langid (a naive Bayes model over byte n-grams, shipped inside its wheel: nothing is
downloaded at run time) reads the prose; bench/language_id.py measures it on a labelled set of
arena-style prompts against pycld2. Loading the model takes about a second, so it is loaded
once per process (``language_warm``, called when the web app starts), never per battle; a call
then takes well under a millisecond.
"""

from __future__ import annotations

import re
import threading

UNDETERMINED = "und"

# The model's (length-calibrated) probability of its first choice must reach MIN_CONFIDENCE,
# or at least MIN_LEAD while twice its second's: on the bench's labelled set every right
# answer scores at least 0.47, while one- to three-word greetings ("hi", "Bonjour") and
# half-and-half mixtures stay under 0.3 or tie. The lead rule keeps short Spanish and Portuguese
# prompts, whose probability is shared with Galician, Catalan and Aragonese.
MIN_CONFIDENCE = 0.4
MIN_LEAD = 0.25
LEAD_RATIO = 2.0
# Fewer letters than this say nothing about a language ("ok", "2+2", "?").
MIN_LETTERS = 3
# A mixture is only judged on halves long enough for each to be told on its own.
MIN_SPLIT_LETTERS = 40
# The language shows in the first lines; reading all of a 32,000-character paste would only
# cost time (the model's work grows with the text).
PREFIX_CHARS = 1500

# The model's labels without an ISO 639-1 code of their own, folded into the macrolanguage that
# has one (Wu and Cantonese are Chinese; Moroccan and Egyptian Arabic are Arabic), or "zxx"
# (no linguistic content) into "und". Its other such labels (Nigerian Pidgin, Ligurian,
# Venetian, ...) are left out of the model's choice: they mostly catch English or Italian text
# too short to tell, and a board needs a code it can name.
ALIASES = {
    "wuu": "zh",
    "yue": "zh",
    "ary": "ar",
    "arz": "ar",
    "uzs": "uz",
    "sdh": "ku",
    "gug": "gn",
    "fuv": "ff",
    "kik": "ki",
    "zxx": UNDETERMINED,
}

_FENCED = re.compile(r"^[ \t]*(```|~~~).*?(^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)

_lock = threading.Lock()
_model = None


def _identifier():
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                model.set_languages(
                    [label for label in model.labels if len(label) == 2 or label in ALIASES]
                )
                _model = model
    return _model


def language_warm() -> None:
    """Load the model now (about a second), so that no rater's request pays for it."""
    _identifier()


def prose(text: str) -> str:
    """The part of a prompt written in a natural language: code blocks, inline code and links
    removed (identifiers and keywords are English-looking in every language's prompts)."""
    text = _FENCED.sub(" ", text[: PREFIX_CHARS * 4])
    text = _URL.sub(" ", _INLINE_CODE.sub(" ", text))
    return text[:PREFIX_CHARS]


def _letters(text: str) -> int:
    return sum(1 for char in text if char.isalpha())


def _classify(text: str) -> tuple[str, bool]:
    """The model's first choice, and whether it is sure of it."""
    model = _identifier()
    label, first = model.classify(text)
    sure = first >= MIN_CONFIDENCE
    if not sure and first >= MIN_LEAD:
        # Ranking every language costs more than the choice itself: only when it decides.
        sure = first >= LEAD_RATIO * model.rank(text)[1][1]
    return ALIASES.get(label, label), sure


def _halves(text: str) -> tuple[str, str]:
    # At the space nearest the middle, so no word is cut; text without spaces (Chinese,
    # Japanese) is cut at the middle character.
    middle = len(text) // 2
    left, right = text.rfind(" ", 0, middle), text.find(" ", middle)
    candidates = [cut for cut in (left, right) if cut > 0]
    cut = min(candidates, key=lambda at: abs(at - middle)) if candidates else middle
    return text[:cut], text[cut:]


def language_of(text: str) -> str:
    """The ISO 639-1 code of the language ``text`` is written in, or "und" when it is too short
    to tell, a mixture (its two halves are each plainly in a different language), or the model
    is unsure."""
    text = prose(text).strip()
    if _letters(text) < MIN_LETTERS:
        return UNDETERMINED
    language, sure = _classify(text)
    if not sure:
        return UNDETERMINED
    first, second = _halves(text)
    if min(_letters(first), _letters(second)) >= MIN_SPLIT_LETTERS:
        (one, sure_one), (other, sure_other) = _classify(first), _classify(second)
        if one != other and sure_one and sure_other:
            return UNDETERMINED
    return language
