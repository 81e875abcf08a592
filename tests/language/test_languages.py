"""Which language texts are in (`rmm_core.language.languages`): what a new store's model
is chosen by, so an English chat must never read as another language, and what tells the
change rules whether they read a statement at all."""

from __future__ import annotations

import pytest

from rmm_core.language.languages import MIN_WORDS, language

ENGLISH = "en"


@pytest.mark.parametrize("text", [
    "I went to the LGBTQ support group yesterday and it was so powerful.",
    "Hey Mel! Good to see you! How have you been? I'm swamped with the kids & work.",
    "so i had to take my dog to the vet again, she's been limping since sunday",
    "Can you help me write a cover letter for a junior data analyst position in Denver?",
])
def test_english_chat_reads_as_english(text):
    assert language(text, least=MIN_WORDS) == ENGLISH


@pytest.mark.parametrize("text", [
    "hab gestern endlich den Umzug geschafft, die Küche ist aber noch voller Kisten",
    "on a mangé chez Paul hier soir et c'était vraiment super bon, je te raconte",
    "Wczoraj byłam w kinie z siostrą, a potem poszłyśmy na pizzę do centrum",
    "Вчера я взяла из приюта собаку, её зовут Шарик, она очень весёлая",
    "我昨天在上海领养了一只小狗，它很可爱，每天早上都要出去散步。",
])
def test_other_languages_read_as_not_english(text):
    assert language(text, least=MIN_WORDS) not in (None, ENGLISH)


def test_a_few_words_tell_nothing():
    assert language("ok thanks!", least=MIN_WORDS) is None
    assert language("привет", least=MIN_WORDS) is None
