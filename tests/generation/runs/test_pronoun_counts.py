"""Pronoun counts from the one-scan English pattern (subject_gender.english_pronoun_counts) equal the patterns' findall
over the text, for every language rule, with re's case-insensitive matching (long s, dotless i, Kelvin sign) and word
boundaries (underscores, digits, apostrophes, hyphens, accented letters)."""

import random

import pytest

from generation import subject_gender as sg

WORDS = [
    "she", "her", "hers", "herself", "he", "him", "his", "himself", "er", "ihm", "ihn", "sein", "seine", "seinen",
    "seinem", "seiner", "seines", "ihr", "ihre", "ihren", "ihrem", "ihrer", "ihres", "sie", "the", "hero", "heróe",
    "ſhe", "hım", "HİS", "ſein", "she_", "2he", "herſelf", "shè", "Kelvin", "Ihr", "IHRE",
]  # fmt: skip
GLUE = [" ", "  ", ", ", ". ", "'s ", "-", "\n", "_", "3", "é", "’", "\u00a0", ""]


def reference(text, language):
    f = len(sg._FEMALE_PRONOUNS.findall(text))
    m = len(sg._MALE_PRONOUNS.findall(text))
    if language.startswith("de"):
        m += len(sg._DE_MALE.findall(text))
        de_f = len(sg._DE_FEMALE.findall(text))
        if not m:
            f += de_f
    return f, m


@pytest.mark.parametrize("seed", range(20))
def test_pronoun_counts_equal_findall(seed):
    rng = random.Random(seed)
    for _ in range(50):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 40))]
        words = [w.upper() if rng.random() < 0.2 else w.capitalize() if rng.random() < 0.2 else w for w in words]
        text = "".join(w + rng.choice(GLUE) for w in words)
        for language in ("en", "de"):
            detail = sg.from_pronouns(text, language)[1]
            assert (detail["female_pronouns"], detail["male_pronouns"]) == reference(text, language), text


def test_no_text_counts_nothing():
    assert sg.english_pronoun_counts(None) == (0, 0)
    assert sg.from_pronouns("")[0] is None
