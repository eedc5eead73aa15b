"""A prompt's language: the detector on each language, on short and mixed text, and at write time
(typed, drawn, imported, follow-ups) through to the language boards."""

from __future__ import annotations

import json

import pytest

from arena.battles.prompts import prompt_create, prompts_import
from arena.battles.services import battle_follow_up, battle_start, turn_mark_shown, vote_cast
from arena.records.models import Prompt, Vote
from arena.tagging.language import UNDETERMINED, language_of
from ranking import services as ranking
from tests.helpers import shown_ago, wait_for_answers

# Not from the bench's labelled set: a sample of other prompts, as raters type them.
SAMPLES = {
    "ar": "اشرح لي عملية التمثيل الضوئي ببساطة.",
    "de": "Erkläre mir bitte die Photosynthese mit einfachen Worten.",
    "en": "Explain photosynthesis to me in simple terms.",
    "es": "Explícame la fotosíntesis de forma sencilla.",
    "fr": "Explique-moi la photosynthèse simplement, s'il te plaît.",
    "it": "Spiegami la fotosintesi in modo semplice.",
    "ja": "光合成について簡単に説明してください。",
    "ko": "광합성을 쉽게 설명해 주세요.",
    "nl": "Leg me fotosynthese eenvoudig uit.",
    "pl": "Wyjaśnij mi prosto, na czym polega fotosynteza.",
    "pt": "Explica-me a fotossíntese de forma simples.",
    "ru": "Объясни мне фотосинтез простыми словами.",
    "tr": "Fotosentezi basitçe açıklar mısın?",
    "uk": "Поясни мені фотосинтез простими словами.",
    "zh": "请简单解释一下光合作用。",
}

FRENCH = "Écris un petit poème sur la mer en hiver, avec des rimes."


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_is_named_by_its_iso_639_1_code(language):
    assert language_of(SAMPLES[language]) == language


@pytest.mark.parametrize("text", ["", "   ", "hi", "ok", "?", "2+2", "👍👍", "Hello", "Bonjour"])
def test_text_too_short_to_tell_is_undetermined(text):
    assert language_of(text) == UNDETERMINED


@pytest.mark.parametrize(
    "text",
    [
        "Hello, comment ça va? Ich bin müde today.",
        "I would like to go to the cinema tonight with my friends, pero no sé qué película "
        "elegir ni a qué hora empieza.",
        "Ich möchte heute Abend ins Kino gehen, aber ich weiß nicht welchen Film. Mais je ne "
        "sais pas quel film choisir ce soir avec mes amis.",
    ],
)
def test_text_mixing_languages_half_and_half_is_undetermined(text):
    assert language_of(text) == UNDETERMINED


def test_code_and_links_are_not_read_as_prose():
    ask = "Corrige ce code, il plante à chaque fois :\n```python\nfor i in range(10):\n"
    ask += "    print(i / (i - 3))\n```\nVoir https://docs.python.org/3/tutorial/errors.html"
    assert language_of(ask) == "fr"
    assert language_of("```python\nfor i in range(10):\n    print(i)\n```") == UNDETERMINED
    assert language_of("https://example.com/some/page") == UNDETERMINED


def test_a_curators_language_wins_and_a_missing_one_is_detected(db):
    kept, _ = prompt_create(text=SAMPLES["en"], language="de")
    detected, _ = prompt_create(text=SAMPLES["fr"])
    assert (kept.language, detected.language) == ("de", "fr")
    # Kept in the database too, not only on the returned objects.
    assert Prompt.objects.get(pk=kept.pk).language == "de"
    assert Prompt.objects.get(pk=detected.pk).language == "fr"


def test_imported_prompts_keep_the_files_language_or_get_the_detectors(db):
    rows = [{"text": SAMPLES["it"], "language": "es"}, {"text": SAMPLES["nl"]}]
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    report = prompts_import(data=data, filename="prompts.jsonl")
    assert report.created == 2
    languages = dict(Prompt.objects.values_list("text", "language"))
    assert languages == {SAMPLES["it"]: "es", SAMPLES["nl"]: "nl"}


def test_typed_and_drawn_prompts_get_their_language_at_battle_start(alice, two_models):
    typed = battle_start(rater=alice, text=SAMPLES["ko"])
    assert typed.prompt.source == Prompt.Source.RATER
    assert Prompt.objects.get(pk=typed.prompt_id).language == "ko"
    # A prompt saved with no language (before detection, or in the admin with the field left
    # blank) gets one the first time it is played; a curator's is never replaced.
    blank = Prompt.objects.create(text=SAMPLES["pl"], language="")
    curated = Prompt.objects.create(text=SAMPLES["tr"], language="az")
    for prompt in (blank, curated):
        battle_start(rater=alice, text=prompt.text, prompt_id=prompt.pk)
    assert Prompt.objects.get(pk=blank.pk).language == "pl"
    assert Prompt.objects.get(pk=curated.pk).language == "az"


@pytest.mark.usefixtures("generation")
def test_a_battle_typed_in_french_ends_with_a_french_vote_on_the_french_board(alice, two_models):
    battle = battle_start(rater=alice, text=FRENCH)
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=battle.turns.get(index=0).pk)
    # The conversation's language is its first turn's: an English follow-up changes nothing.
    follow_up = battle_follow_up(
        battle_id=battle.pk, rater=alice, text="Now make it longer and explain the rhymes."
    )
    wait_for_answers(battle.pk)
    turn_mark_shown(turn_id=follow_up.pk)
    shown_ago(battle, 600)  # read, not skimmed: a too-fast vote would not be counted
    vote = vote_cast(battle_id=battle.pk, rater=alice, choice="a")
    assert (vote.prompt_language, vote.turns) == ("fr", 2)

    snapshot = ranking.leaderboard_recompute(rounds=20)

    french = snapshot.rows.filter(view="raw", breakdown="language:fr")
    assert set(french.values_list("model_name", flat=True)) == {m.public_name for m in two_models}
    assert snapshot.votes_used == Vote.objects.count() == 1
