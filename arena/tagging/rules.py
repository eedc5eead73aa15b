"""The tags rules can give exactly, pure: no database, no model, tens of microseconds a prompt.

* ``multi_turn``: the battle had more than one turn.
* ``vision``: the battle's first turn carried images (arena/images).
* ``long_query``: the rater's turns together hold at least ``LONG_QUERY_TOKENS`` tokens,
  counted as ``query_tokens`` says (no tokenizer ships without downloading its tables).
* ``code``: a fenced block, code-like text (a line of a program, a shell prompt, markup), or a
  request to write, fix, debug or explain code.
* ``math``: a formula (LaTeX, powers, roots), an equation, numbers joined by operators, or a
  request to prove, solve, compute or calculate.

Asks are found on the prompt's words (sets and short windows), not by one large regular
expression, whose alternatives Python would try at every character; the expressions left run
only where a cheap test says they can match. English first, with the commonest words of a few
other languages; the LLM labeller (``tagging.labeller``) gives the tags rules cannot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LONG_QUERY_TOKENS = 500

# CJK, kana and Hangul: about one token a character in GPT-style tokenizers; everything else
# about four characters a token (core.text.estimate_tokens's rate), so a long Chinese prompt
# is not counted as a short one.
_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def query_tokens(text: str) -> int:
    """The tokens of ``text``: one per wide (CJK, kana, Hangul) character, one per four other
    characters, rounded up."""
    wide = len(_WIDE.findall(text))
    return wide + (len(text) - wide + 3) // 4


# Words: "c++", "c#", "node.js" and "main.py" stay whole; a sentence's full stop is dropped.
_WORD = re.compile(r"\w(?:[\w+#.]*[\w+#])?")


def _words(lower: str) -> list[str]:
    return _WORD.findall(lower)


# Code ---------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(?:```|~~~)", re.MULTILINE)
# Lines only a program, a terminal or markup would hold.
_CODE_LINE = re.compile(
    r"^\s*(?:"
    r"def \w+\s*\(.*\)\s*(?:->.*)?:|class \w+(?:\(.*\))?\s*[:{]|"
    r"(?:async\s+)?function\s*\w*\s*\(|(?:const|let|var)\s+\w+\s*=|"
    r"(?:public|private|protected|static)\s+[\w<>\[\]]+\s+\w+\s*\(|"
    r"#include\s*[<\"]|import\s+[\w.]+(?:\s+as\s+\w+)?\s*;?$|from\s+[\w.]+\s+import\s+\w|"
    r"package\s+[\w.]+;|using\s+(?:namespace\s+)?[\w.]+;|fn\s+\w+\s*\(|func\s+\w+\s*\(|"
    r"(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+TABLE)\b.*\b(?:FROM|VALUES|SET|WHERE|\()|"
    r"\$\s+(?:sudo|git|pip|npm|docker|kubectl|cd|ls|python|curl)\b|"
    r"(?:if|for|while)\s*\(.*\)\s*\{|</?(?:div|span|html|body|script|table)\b[^>]*>|"
    r"[\w.\[\]]+\s*(?:\+=|-=|==|!=|=>|->|::|&&|\|\|)\s*\S.*[;{)]$|"
    r"[^\n(]*\w\([^\n]*\);$|\}\s*(?:else\b.*)?$|"
    r"(?:Traceback \(most recent call last\)|\w+(?:Error|Exception): )"
    r")",
    re.MULTILINE,
)
# Text that is code wherever it stands (looked for in the lower-cased prompt).
_CODE_SNIPPETS = (
    "console.log(", "print(", "printf(", "std::", "system.out.", "=> {", "=>{",
    "segmentation fault", "null pointer", "syntax error", "compile error", "compilation error",
    "runtime error", "off-by-one", "time complexity", "big-o", "stack trace", "race condition",
    "mutex", "pull request",
)  # fmt: skip
# Words only code talk uses.
_CODE_WORDS = frozenset(
    "git github gitlab npm pip docker localhost stacktrace nullpointerexception segfault "
    "javascript typescript golang kotlin numpy pandas dockerfile".split()
)
# A SQL statement inside a sentence ("What does SELECT * FROM orders do?"): upper case only.
_SQL = re.compile(
    r"\bSELECT\s+(?:DISTINCT\s+)?(?:\*|[\w.]+(?:\s*,\s*[\w.]+)*)\s+FROM\s+\w"
    r"|\bINSERT\s+INTO\s+\w+\s*[(V]|\bDELETE\s+FROM\s+\w+\s+WHERE\b"
)
_EXTENSIONS = tuple(f".{e}" for e in "py js ts tsx java cpp rs go rb php sql sh ipynb".split())
_MEMBERS = ("np.", "pd.", "df.", "plt.", "self.", "os.", "sys.", "math.")
# Names that mean code wherever they stand ("in Python"). Java (also an island), Scala, Perl
# and Lua count beside an ask ("write ... in Java"); Ruby, Rust, Swift and Go, also a stone,
# corrosion, a bird and a verb, only through code-like text or "golang".
_PLAIN_LANGUAGES = frozenset(
    "python javascript typescript c++ c# golang kotlin php haskell matlab powershell bash sql "
    "html css react django flask node.js numpy pandas regex json yaml dockerfile kubernetes "
    "terraform".split()
)
_LANGUAGES = _PLAIN_LANGUAGES | {"java", "scala", "perl", "lua"}
# What can only be code beside an ask; a "script" for a film, a "program" of exercise or a
# "code" of conduct is not (see _thing).
_THINGS = _LANGUAGES | {"code", "algorithm", "snippet", "api", "endpoint", "compiler",
                        "script", "program", "test", "tests", "expression"}  # fmt: skip
_WRITE = frozenset("write create implement generate complete build code program".split())
_FIX = frozenset(
    "debug fix refactor optimise optimize review explain convert port rewrite translate".split()
)
_VERBS = _WRITE | _FIX
_SCRIPT_DOES = (
    "automat", "download", "pars", "renam", "read", "scrap", "back", "convert", "monitor",
    "check", "run", "install", "deploy", "delete", "copy", "mov",
)  # fmt: skip
# Asks in other languages: a verb's stem, then one of these words within five.
_FOREIGN_WRITE = ("écri", "ecri", "corrig", "programm", "schreib", "escrib", "scriv")
_FOREIGN_THINGS = frozenset(
    "code fonction funktion función funzione programme programm programa programma script "
    "klasse clase".split()
)
_WIDE_CODE = re.compile(
    r"(?:写|编写|实现|调试).{0,8}(?:代码|函数|程序|脚本)|(?:コード|関数|プログラム).{0,8}(?:書|作)"
)


def _thing(words: list[str], i: int, *, writing: bool) -> bool:
    """Whether ``words[i]`` names code, read with its neighbours."""
    word, before = words[i], words[i - 1] if i else ""
    after = words[i + 1 : i + 3]
    if word == "code":
        return after[:2] != ["of", "conduct"]
    if word == "program":
        return before == "computer"
    if word in ("test", "tests"):
        return before == "unit"
    if word == "expression":
        return before == "regular"
    if word == "script":
        return (
            len(after) == 2
            and after[0] in ("that", "which", "to")
            and after[1].startswith(_SCRIPT_DOES)
        )
    if word in ("function", "method", "loop", "query", "error"):
        return writing or before in ("this", "my", "following")
    return word in _THINGS


def _asks_for_code(words: list[str], vocabulary: set[str], lower: str) -> bool:
    if vocabulary & _PLAIN_LANGUAGES:
        for before, word in zip(words, words[1:], strict=False):
            if word in _PLAIN_LANGUAGES and before in ("in", "using", "with"):
                return True
    if vocabulary & _VERBS:
        for i, word in enumerate(words):
            if word in _VERBS:
                writing = word in _WRITE
                window = range(i + 1, min(i + 8, len(words)))
                if any(_thing(words, j, writing=writing) for j in window):
                    return True
    if any(stem in lower for stem in _FOREIGN_WRITE):
        for i, word in enumerate(words):
            if word.startswith(_FOREIGN_WRITE) and _FOREIGN_THINGS.intersection(
                words[i + 1 : i + 6]
            ):
                return True
    return False


def _dotted(words: list[str]) -> bool:
    """A file name (main.py) or an object's member (np.array, self.items) among the words."""
    return any("." in w and (w.endswith(_EXTENSIONS) or w.startswith(_MEMBERS)) for w in words)


def is_code(text: str, *, lower: str | None = None, words: list[str] | None = None) -> bool:
    lower = text.lower() if lower is None else lower
    words = _words(lower) if words is None else words
    if any(s in lower for s in _CODE_SNIPPETS) or _FENCE.search(text) or _CODE_LINE.search(text):
        return True
    if "FROM" in text or "INTO" in text:
        if _SQL.search(text):
            return True
    vocabulary = set(words)
    if vocabulary & _CODE_WORDS or ("." in lower and _dotted(words)):
        return True
    if _asks_for_code(words, vocabulary, lower):
        return True
    return bool(_WIDE.search(text)) and bool(_WIDE_CODE.search(text))


# Mathematics ----------------------------------------------------------------------------------

_LATEX = re.compile(
    r"\\(?:frac|int|sum|prod|sqrt|lim|infty|partial|cdot|times|alpha|beta|theta|pi|sigma|"
    r"mathbb|binom|log|sin|cos|tan|vec|nabla)\b|\$[^$\n]+\$"
)
_SYMBOL = re.compile(r"[√∑∫∏∞≤≥≠≈±∂∇]")
_POWER = re.compile(r"[\w)\]]\s*\^\s*[\d(a-z{]")
_FUNCTION = re.compile(r"\b(?:sqrt|log|ln|sin|cos|tan)\s*\(")
# An equation in one unknown, 2x + 3 = 7 or 3x = 12 (x = 4 alone is also an assignment), and
# f(x) = ...
_EQUATION = re.compile(
    r"\b\d*[a-z](?:\^\d)?\s*[+\-*/]\s*\d+[a-z]?\s*=\s*-?\d|\b\d+[a-z]\s*=\s*-?\d"
    r"|\b[fgh]\s*\(\s*[a-z]\s*\)\s*="
)
# Numbers joined by an operator: '-' and '/' only with spaces on both sides, so a date
# (2024-05-01, 12/05), a range (5-10 minutes) or a fraction of a recipe (3/4 cup) is not math.
_ARITHMETIC = re.compile(
    r"\d\s*[+*×÷^=]\s*\(?-?\d|\d\s+[-/−]\s+\(?\d|\d\s*%\s*of\s+\d|\d\s*(?:mod|choose)\s+\d"
)
_MATH_WORDS = frozenset(
    "prove proof solve calculate calculation simplify factorise factorize differentiate "
    "derivative derivatives integral integrals equation equations inequality theorem lemma "
    "probability variance polynomial logarithm arithmetic ecuación ecuacion équation "
    "gleichung equazione equação".split()
)
_MATH_STEMS = ("eigen", "démontr", "résou", "calcul", "beweis", "berechn", "demuestr",
               "resuelv", "calcol", "dimostr", "risolv", "уравнени", "вычисл", "докаж",
               "реши")  # fmt: skip
_MATH_PHRASES = ("expected value", "how many ways", "how many combinations",
                 "how many permutations", "how many integers", "how many primes",
                 "how many solutions", "prime number", "greatest common divisor",
                 "least common multiple", "geometric series")  # fmt: skip
# "compute" as a noun of infrastructure is no request to calculate.
_COMPUTE_NOUNS = frozenset("engine instance instances cluster node nodes resources resource "
                           "capacity unit units cost costs budget".split())  # fmt: skip
_WIDE_MATH = ("证明", "求解", "计算", "方程", "積分", "微分", "証明", "計算")


def _asks_for_math(words: list[str], lower: str) -> bool:
    vocabulary = set(words)
    if vocabulary & _MATH_WORDS:
        return True
    if any(stem in lower for stem in _MATH_STEMS) and any(w.startswith(_MATH_STEMS) for w in words):
        return True
    if "compute" in vocabulary:
        for i, word in enumerate(words):
            if word == "compute" and (i + 1 == len(words) or words[i + 1] not in _COMPUTE_NOUNS):
                return True
    return False


def is_math(text: str, *, lower: str | None = None, words: list[str] | None = None) -> bool:
    lower = text.lower() if lower is None else lower
    if _SYMBOL.search(text) or _ARITHMETIC.search(lower):
        return True
    if ("\\" in text or "$" in text) and _LATEX.search(text):
        return True
    if "^" in text and _POWER.search(lower):
        return True
    if "(" in text and _FUNCTION.search(lower):
        return True
    if "=" in text and _EQUATION.search(lower):
        return True
    if any(p in lower for p in _MATH_PHRASES):
        return True
    if _asks_for_math(_words(lower) if words is None else words, lower):
        return True
    return any(w in text for w in _WIDE_MATH)


def rule_tags(turns: Sequence[str], *, category: str = "", images: int = 0) -> set[str]:
    """The tags the rules give a conversation, from the rater's turns in order and the number
    of images it carried; a curated prompt's ``category`` is a tag of its own."""
    text = "\n".join(turns)
    lower = text.lower()
    words = _words(lower)
    tags = {category} if category else set()
    if len(turns) > 1:
        tags.add("multi_turn")
    if images:
        tags.add("vision")
    if query_tokens(text) >= LONG_QUERY_TOKENS:
        tags.add("long_query")
    if is_code(text, lower=lower, words=words):
        tags.add("code")
    if is_math(text, lower=lower, words=words):
        tags.add("math")
    return tags
