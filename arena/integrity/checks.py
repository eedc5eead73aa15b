"""Pure integrity checks: identity questions and leaks, the reading-time floor."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from arena.integrity.disguise import NamePattern, held_tail, name_pattern
from arena.integrity.skeleton import fold_char

REDACTED = "[model name]"

# Verbs for making a model, in each language, as they follow the one made ("who trained you").
_EN_MADE = (
    r"(?:made|created|built|trained|developed|designed|programmed|engineered|coded|wrote|"
    r"owns|runs|makes|builds|trains|develops|fine[- ]?tuned|released|produced)"
)
_EN_MAKERS = (
    r"(?:company|companies|lab|labs|laboratory|organi[sz]ation|team|firm|corporation|startup|"
    r"vendor|provider|business|group|people|developers?|engineers?|researchers?|creators?|"
    r"makers?)"
)
_EN_ABOUT_ME = (
    r"(?:model|model\s+name|model\s+family|version|model\s+version|architecture|"
    r"base\s+model|underlying\s+model|llm|creators?|makers?|developers?|trainers?|vendor|"
    r"parent\s+company|real\s+name|true\s+name|name)"
)
_EN_KIND = (
    r"(?:kind\s+of\s+|sort\s+of\s+|type\s+of\s+)?"
    r"(?:ai\s+|language\s+|base\s+|underlying\s+|large\s+language\s+)?"
)
# "Which model are you using?" asks what the reader uses.
_EN_NOT_DOING = (
    r"(?!\s+(?:using|referring|talking|thinking|asking|looking|working|planning|going|trying|"
    r"recommending|suggesting|describing)\b)"
)
# Where "who made you" ends as a question about the model: the sentence ends, or goes on as
# such a question does ("Who trained you, and when?", "Who built you originally?"), not as
# "Who wrote you a letter?", "Who made you cry?".
_EN_MADE_END = (
    r"(?=[^\S\n]*(?:[\n?.!,;:)\"'’]|$)|\s+(?:and|or|but|originally|initially|first|exactly|really|"
    r"actually|then|anyway|though|please|in|at|on|from|with|using|back|to\s+be|as)\b)"
)
# Where "your model" / "your name" ends as the model's own: the sentence ends or says what it
# is ("Tell me your name.", "What is your model name and version?"), not "your version
# control workflow", "your name choice for the variable".
_EN_ABOUT_ME_END = (
    r"(?=[^\S\n]*(?:[\n?.!,;:)\"'’]|$)|\s+(?:is|was|are|were|and|or|please|exactly|again|really|"
    r"precisely|then|now|briefly|in\s+(?:detail|full|brief|short|depth)|for\s+me)\b)"
)
_KNOWN_NAMES = r"(?:chat\s*gpt|gpt|claude|gemini|bard|llama|grok|mistral|qwen|deepseek|copilot)"
_FR_MADE = r"(?:cr[ée]{2}|entra[îi]n[ée]|con[çc]u|d[ée]velopp[ée]|fait|construit|programm[ée])"
_DE_MADE = (
    r"(?:erstellt|trainiert|entwickelt|gemacht|gebaut|programmiert|erschaffen|geschaffen|"
    r"konstruiert|entworfen)"
)
_ES_MADE = (
    r"(?:cre[óo]|entren[óo]|hizo|desarroll[óo]|dise[ñn][óo]|construy[óo]|program[óo]|"
    r"fabric[óo]|crearon|entrenaron|hicieron|desarrollaron|dise[ñn]aron|construyeron|"
    r"(?:ha|han)\s+(?:creado|entrenado|hecho|desarrollado|dise[ñn]ado|construido|programado))"
)
_ZH_MADE = r"(?:开发|训练|创造|制造|创建|设计|打造|研发|训练出|做)"
_ZH_MAKERS = r"(?:公司|团队|机构|实验室|组织|企业|厂商)"

# Prompts asking a model who it is, who made it or what it runs on: English, French, German,
# Spanish, Chinese, Japanese. Matched, ignoring case, on the prompt and on its folded form (see
# ``_folded``), so look-alike letters and invisible characters do not hide the question.
IDENTITY_QUESTIONS = (
    # English
    # "this" only after a word that names a model: "Which version is this?" asks about
    # something else, as do "What AI is this about?" and "Which version are you using?".
    rf"\b(?:what|which)\s+{_EN_KIND}(?:model|llm|chatbot)\s+(?:are|is|were)\s+"
    rf"(?:you|u|this(?!\s+about\b))\b{_EN_NOT_DOING}",
    rf"\b(?:what|which)\s+{_EN_KIND}(?:version|ai|assistant)\s+(?:are|is|were)\s+(?:you|u)\b"
    rf"{_EN_NOT_DOING}",
    r"\b(?:what|which)\s+(?:ai\s+|language\s+|base\s+|underlying\s+)?(?:model|llm|engine)\s+"
    r"(?:powers|runs|drives|is\s+behind|is\s+powering|are\s+you\s+(?:based|built|running)\s+on)"
    r"(?:\s+you)?\b",
    rf"\bwho\s+(?:\w+\s+){{0,2}}?{_EN_MADE}\s+(?:you|u)\b{_EN_MADE_END}",
    r"\bwho\s+(?:are|r)\s+(?:you|u)\b",
    rf"\bare\s+you\s+(?:an?\s+)?{_KNOWN_NAMES}",
    rf"\bare\s+you\s+(?:\w+\s+)?{_EN_MADE}\s+by\b",
    r"\bwhat('s|\s+is)\s+your\s+name\b",
    rf"\b(?:what|which)\s+{_EN_MAKERS}\s+(?:\w+\s+){{0,2}}?{_EN_MADE}\s+(?:you|u)\b",
    rf"\b(?:what|which)\s+{_EN_MAKERS}\s+(?:are\s+you\s+(?:from|made\s+by|built\s+by|with)|"
    r"do\s+you\s+(?:come\s+from|belong\s+to|work\s+for)|is\s+behind\s+you)",
    rf"\b{_EN_MAKERS}\s+(?:that|who|which)\s+(?:\w+\s+){{0,2}}?{_EN_MADE}\s+(?:you|u)\b",
    rf"\b(?:what|which|who|tell\s+me|reveal|name|say|share|state|disclose|describe|explain)\b"
    rf"[^.?!\n]{{0,30}}\byour\s+{_EN_ABOUT_ME}\b{_EN_ABOUT_ME_END}",
    r"\bwho\s+(?:is|are)\s+your\s+(?:creators?|makers?|developers?|trainers?|owners?|parents?)\b",
    # French
    r"qui\s+(?:es[- ]tu|[êe]tes[- ]vous)",
    r"(?:tu\s+es|es[- ]tu|vous\s+[êe]tes|[êe]tes[- ]vous)\s+quel(?:le)?\s+(?:mod[èe]le|version|ia)",
    r"quel(?:le)?\s+(?:mod[èe]le|version|ia|intelligence\s+artificielle)\s+(?:es[- ]tu|"
    r"[êe]tes[- ]vous|tu\s+es|vous\s+[êe]tes)",
    rf"qui\s+(?:t['’]|vous\s+)a\s+(?:\w+\s+)?{_FR_MADE}",
    rf"(?:entreprise|soci[ée]t[ée]|compagnie|organisation|[ée]quipe|bo[îi]te|labo(?:ratoire)?|"
    rf"firme)\s+(?:qui\s+)?(?:t['’]|vous\s+)a\s+(?:\w+\s+)?{_FR_MADE}",
    r"par\s+qui\s+(?:as[- ]tu|avez[- ]vous)\s+[ée]t[ée]",
    r"quel(?:le)?\s+est\s+(?:ton|ta|votre)\s+(?:vrai\s+)?(?:nom|mod[èe]le|cr[ée]ateur|"
    r"d[ée]veloppeur|architecture|version|entreprise|concepteur)",
    r"qui\s+est\s+(?:ton|ta|votre)\s+(?:cr[ée]at(?:eur|rice)|d[ée]veloppeur|concepteur|"
    r"fabricant|propri[ée]taire)",
    r"comment\s+(?:t['’]appelles[- ]tu|vous\s+appelez[- ]vous|tu\s+t['’]appelles)",
    r"sur\s+quel\s+mod[èe]le\s+(?:es[- ]tu|[êe]tes[- ]vous)\s+bas[ée]",
    # German ("Sie" only capitalised: lower case it is "she" or "they")
    r"wer\s+(?:bist\s+du|(?-i:sind\s+Sie))",
    r"welche[sr]?\s+(?:modell|sprachmodell|version|ki)\s+(?:bist\s+du|(?-i:sind\s+Sie))",
    rf"wer\s+hat\s+(?:dich|(?-i:Sie))\s+(?:\w+\s+)?{_DE_MADE}",
    r"von\s+wem\s+(?:wurdest\s+du|bist\s+du|(?-i:wurden\s+Sie)|(?-i:sind\s+Sie))",
    rf"(?:firma|unternehmen|organisation|team|labor|konzern)\b[^.?!\n]{{0,30}}"
    rf"(?:hat\s+dich|dich\s+(?:\w+\s+)?{_DE_MADE})",
    r"wie\s+hei(?:ß|ss)(?:t\s+du|(?-i:en\s+Sie))",
    r"(?:was|wie)\s+(?:ist|lautet)\s+(?:dein|(?-i:Ihr))\s+(?:name|modell|modellname|"
    r"version|architektur|richtiger\s+name)",
    r"wer\s+ist\s+(?:dein|(?-i:Ihr))\s+(?:sch[öo]pfer|entwickler|hersteller|erschaffer|"
    r"urheber)",
    r"auf\s+welchem\s+(?:modell|sprachmodell)\s+(?:basierst|beruhst)\s+du",
    # Spanish
    r"qui[ée]n\s+(?:eres|es\s+usted)",
    r"qu[ée]\s+(?:modelo|versi[óo]n|ia|inteligencia\s+artificial)\s+(?:eres|es\s+usted)",
    r"c[óo]mo\s+te\s+llamas",
    rf"qui[ée]n(?:es)?\s+te\s+{_ES_MADE}",
    rf"(?:empresa|compa[ñn][íi]a|organizaci[óo]n|laboratorio|equipo)\s+(?:que\s+)?te\s+{_ES_MADE}",
    r"por\s+qui[ée]n(?:es)?\s+(?:fuiste|has\s+sido|eres)\s+(?:\w+)",
    r"(?:cu[áa]l|qu[ée])\s+es\s+tu\s+(?:verdadero\s+)?(?:nombre|modelo|versi[óo]n|arquitectura|"
    r"creador|desarrollador|empresa)",
    r"qui[ée]n\s+es\s+tu\s+(?:creador|desarrollador|fabricante|due[ñn]o)",
    rf"\beres\s+{_KNOWN_NAMES}",
    # Chinese
    r"你是谁",
    r"你叫什么",
    r"你是(?:哪个|什么|哪一个|哪种)(?:模型|版本|大模型|语言模型|ai|人工智能)",
    r"你是(?:基于|用的)?(?:哪个|什么)(?:模型|版本|架构)",
    r"你(?:的)?(?:底层|基础)?(?:模型|版本|架构|名字|名称)(?:是|叫)(?:什么|哪)",
    rf"谁{_ZH_MADE}(?:了)?你",
    rf"你是(?:由)?谁{_ZH_MADE}的",
    rf"你是(?:由)?(?:哪家|哪个|什么|哪一家)(?:{_ZH_MAKERS})",
    rf"(?:哪家|哪个|什么|哪一家){_ZH_MAKERS}.{{0,6}}?{_ZH_MADE}(?:了)?你",
    r"你的(?:开发者|创造者|制造商|创建者|开发商|公司|作者|创始人)是(?:谁|哪)",
    rf"你是{_KNOWN_NAMES}吗",
    # Japanese
    r"あなたは誰",
    r"あなたはだれ",
    r"何のモデル",
    r"どのモデル",
    r"誰が(あなたを)?(作|開発|訓練)",
)


_QUESTIONS = [re.compile(p, re.IGNORECASE) for p in IDENTITY_QUESTIONS]


def _folded(text: str) -> str:
    """The prompt with look-alike letters made plain Latin ones and invisible characters gone
    (the patterns allow for a missing accent); other scripts stay as they are, since the
    name skeleton's NFKD would take kana's voicing marks off."""
    out = []
    for ch in unicodedata.normalize("NFKC", text):
        if ch.isascii():
            # A control character but tab and line breaks shows as nothing: it goes too.
            out.append(fold_char(ch) if ch < " " or ch == "\x7f" else ch)
            continue
        folded = fold_char(ch)
        # A look-alike or an invisible character is folded; any other character stays itself.
        out.append(folded if not folded or folded.isascii() else ch)
    return "".join(out)


def asks_identity(text: str) -> bool:
    """Does the prompt ask a model who it is, who made it, or what model it is?"""
    folded = _folded(text)
    return any(p.search(t) for p in _QUESTIONS for t in (text, folded))


@lru_cache(maxsize=32)
def identity_pattern(terms: tuple[str, ...]) -> NamePattern | None:
    """Every name, however disguised (see ``integrity.disguise``): ``pattern.sub(repl, text)``
    replaces each in the original text, ``pattern.search(text)`` finds the first."""
    return name_pattern(terms)


def name_tail(text: str, shown: int, terms: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` (past the first ``shown``) could be the
    start of a protected name, however disguised (``C l a``, ``Cl\\u200b``), or a whole name
    whose version or suffix may still be arriving, and so must wait for more text before they
    are shown.

    Only such a tail is held back: one that begins where a name may begin (as in
    ``identity_pattern``: not right after a letter or digit of a script written with
    spaces) and reads as the beginning of some term, or as a term and a suffix so far.
    """
    return held_tail(text, shown, terms)


def redact(text: str, terms: tuple[str, ...]) -> str:
    pattern = identity_pattern(terms)
    return pattern.sub(REDACTED, text) if pattern else text


def reading_floor_ms(chars: int, *, chars_per_s: float, min_ms: int) -> int:
    """The least time a rater needs to read ``chars`` characters of answers."""
    return max(min_ms, int(chars / chars_per_s * 1000)) if chars_per_s > 0 else min_ms


def has_finding(findings: list[dict] | None, reason: str) -> bool:
    """Does a battle's list of findings (``Battle.integrity_flags``) hold one for ``reason``?"""
    return any(f["reason"] == reason for f in findings or [])
