"""measures.vader.FastVader gives exactly the scores of the vaderSentiment library it speeds up."""

import random

import pytest
from vaderSentiment.vaderSentiment import BOOSTER_DICT, NEGATE, SPECIAL_CASES, SentimentIntensityAnalyzer

from measures.vader import FastVader

LIBRARY_EXAMPLES = [  # the examples in vaderSentiment.py's __main__, each showing one of its rules
    "VADER is smart, handsome, and funny.",
    "VADER is smart, handsome, and funny!",
    "VADER is very smart, handsome, and funny.",
    "VADER is VERY SMART, handsome, and FUNNY.",
    "VADER is VERY SMART, handsome, and FUNNY!!!",
    "VADER is VERY SMART, uber handsome, and FRIGGIN FUNNY!!!",
    "VADER is not smart, handsome, nor funny.",
    "The book was good.",
    "At least it isn't a horrible book.",
    "The book was only kind of good.",
    "The plot was good, but the characters are uncompelling and the dialog is not great.",
    "Today SUX!",
    "Today only kinda sux! But I'll get by, lol",
    "Make sure you :) or :D today!",
    "Catch utf-8 emoji such as 💘 and 💋 and 😁",
    "Not bad at all",
    "Sentiment analysis has never been good.",
    "Sentiment analysis has never been this good!",
    "Most automated sentiment analysis tools are shit.",
    "With VADER, sentiment analysis is the shit!",
    "Other sentiment analysis tools can be quite bad.",
    "On the other hand, VADER is quite bad ass",
    "VADER is such a badass!",
    "Without a doubt, excellent idea.",
    "Roger Dodger is one of the most compelling variations on this theme.",
    "Roger Dodger is at least compelling as a variation on the theme.",
    "Roger Dodger is one of the least compelling variations on this theme.",
    "Not such a badass after all.",
    "Without a doubt, an excellent idea.",
    "",
    "   ",
    "!!!",
    "No no no, not good.",
    "It was no good or bad.",
]


@pytest.fixture(scope="module")
def analyzers():
    reference = SentimentIntensityAnalyzer()
    return reference, FastVader(reference)


@pytest.mark.parametrize("text", LIBRARY_EXAMPLES)
def test_the_library_examples_score_the_same(analyzers, text):
    reference, fast = analyzers
    assert fast.polarity_scores(text) == reference.polarity_scores(text)


def tricky_sentences(n, seed):
    """Sentences packed with what VADER's rules look at: lexicon words in all cases, boosters and dampeners,
    negations and contractions, 'no', 'least', 'but', 'kind of', 'never so', 'without doubt', the special cases and
    idioms, emoticons, punctuation floods and the odd emoji."""
    reference = SentimentIntensityAnalyzer()
    rng = random.Random(seed)
    lexicon = sorted(reference.lexicon)
    rules = (
        list(BOOSTER_DICT)
        + list(NEGATE)
        + list(SPECIAL_CASES)
        + ["no", "least", "at least", "very least", "but", "BUT", "kind of", "never so", "never this", "so", "this"]
        + ["without doubt", "without a doubt", "or", "nor", "n't", "isn't", "the", "a", "Kelly", "she", "he", "team"]
        + [":)", ":D", ":(", "<3", "(-:", "!!", "?", "??", "????", "...", ",", "-", "'tis", "...!"]
    )
    emojis = ["😁", "💘", "👍"]
    for _ in range(n):
        words = []
        for _ in range(rng.randint(0, 18)):
            pick = rng.random()
            word = rng.choice(lexicon) if pick < 0.45 else rng.choice(rules) if pick < 0.97 else rng.choice(emojis)
            shape = rng.random()
            if shape < 0.12:
                word = word.upper()
            elif shape < 0.25:
                word = word.capitalize()
            if rng.random() < 0.15:
                word += rng.choice([",", ".", "!", "?", ";", "!!!", "'"])
            if rng.random() < 0.05:
                word = rng.choice(["(", '"', "'"]) + word
            words.append(word)
        yield (" " if rng.random() < 0.1 else "") + " ".join(words) + rng.choice(["", ".", "!", "?", "!!", " "])


@pytest.fixture(scope="module")
def corpus():
    return list(tricky_sentences(15_000, seed=7))


def test_a_large_generated_corpus_scores_the_same(analyzers, corpus):
    reference, fast = analyzers
    differ = []
    for text in corpus:
        want, got = reference.polarity_scores(text), fast.polarity_scores(text)
        if got != want:
            differ.append((text, want, got))
    assert not differ[:5], f"{len(differ)} sentences score differently"


def test_the_generated_corpus_reaches_every_rule(analyzers, corpus):
    """The corpus above is worth something only if it exercises the rules; count how often each one fires."""
    reference, _ = analyzers
    lower = [t.lower() for t in corpus]
    assert sum(" but " in t for t in lower) > 400
    assert sum(" least " in t for t in lower) > 200
    assert sum("kind of" in t for t in lower) > 40
    assert sum(any(case in t for case in SPECIAL_CASES) for t in lower) > 400
    assert sum(any(ch in t for ch in "😁💘👍") for t in corpus) > 400
    nonzero = sum(reference.polarity_scores(t)["compound"] != 0 for t in corpus[:1000])
    assert nonzero > 750


NON_ASCII_WORDS = ["schön", "Müller", "don’t", "isn’t", "won’t", "“good”", "‘bad’", "café", "ÜBER", "naïve", "—"]
NON_ASCII_WORDS += ["…", "Ärger", "très", "ﬁne", "GRÖSSTE", "Straße", "«nice»", "„gut“", "ÉCOLE", "Kelly’s"]


def test_non_ascii_text_without_emoji_takes_the_fast_path_and_scores_the_same(analyzers):
    """LLM stories carry curly quotes and apostrophes, accented names and German words: such texts have no emoji, so
    they are scored by the port's own rules (not handed to the library), and must score the same."""
    reference, fast = analyzers
    rng = random.Random(11)
    pool = sorted(reference.lexicon)[::7] + list(BOOSTER_DICT)[:40] + ["not", "no", "but", "least"]
    texts = []
    for _ in range(3_000):
        words = [
            rng.choice(NON_ASCII_WORDS) if rng.random() < 0.3 else rng.choice(pool) for _ in range(rng.randint(1, 16))
        ]
        words = [w.upper() if rng.random() < 0.1 else w for w in words]
        text = " ".join(words) + rng.choice(["", ".", "!", "?"])
        if not text.isascii():
            texts.append(text)
    assert len(texts) > 2_000
    assert all(fast.emoji_chars.isdisjoint(t) for t in texts)  # none goes to the library's own path
    differ = [(t, reference.polarity_scores(t), fast.polarity_scores(t)) for t in texts]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ[:5], f"{len(differ)} of {len(texts)} sentences score differently"
    assert sum(reference.polarity_scores(t)["compound"] != 0 for t in texts) > 1_000


FILLERS = "the a and of to in was with for on at as by Kelly she he her his team work project day city".split()
FILLERS += ["office", "meeting", "plan", "idea", "walked", "said", "thought", "Joseph", "Müller", "“it”", "(so)"]
MODIFIER_WORDS = sorted({w for w in BOOSTER_DICT if " " not in w} | set(NEGATE))
MODIFIER_WORDS += ["no", "so", "this", "least", "at least", "very least", "never so", "without doubt", "or no"]
MODIFIER_WORDS += ["shouldn't", "mightn't", "don’t", "kind of", "sort of", "just enough", "but", "BUT", "no or"]
MODIFIER_WORDS += list(SPECIAL_CASES)


def story_like_sentences(n, seed):
    """Sentences like an LLM story's, as measure runs score them: mostly plain words, a few lexicon words in any
    case, and now and then one modifier, negation, idiom or 'but' at any distance from them (so each lexicon word
    is scored sometimes with a modifier within the three words before it and sometimes without)."""
    lexicon = sorted(SentimentIntensityAnalyzer().lexicon)
    rng = random.Random(seed)
    for _ in range(n):
        words = []
        for _ in range(rng.randint(1, 24)):
            pick = rng.random()
            pool = FILLERS if pick < 0.7 else lexicon if pick < 0.94 else MODIFIER_WORDS
            word = rng.choice(pool)
            shape = rng.random()
            if shape < 0.04:
                word = word.upper()
            elif shape < 0.15:
                word = word.capitalize()
            if rng.random() < 0.1:
                word += rng.choice([",", ".", ";", "!", "?", "’s", "'"])
            words.append(word)
        if rng.random() < 0.1:
            words = [w.upper() for w in words]
        yield " ".join(words) + rng.choice([".", ".", ".", "!", "?", "??", "!!!!!", "?!", ""])


def plain_and_modified_hits(text, lexicon):
    """(lexicon words with no modifier in the three words before them, lexicon words with one)."""
    low = [w.lower() for w in text.split()]
    modifiers = {w.lower() for w in MODIFIER_WORDS for w in w.split()}
    plain = modified = 0
    for i, word in enumerate(low):
        if word.strip(".,;!?'’") in lexicon:
            if modifiers.isdisjoint(low[max(0, i - 3) : i]):
                plain += 1
            else:
                modified += 1
    return plain, modified


def test_story_like_sentences_score_the_same(analyzers):
    """Most sentences of a story have lexicon words with nothing around them that a rule reads; the port gives such
    a word its lexicon valence directly and sends the others through the rules. Both must score as the library."""
    reference, fast = analyzers
    texts = list(story_like_sentences(20_000, seed=36))
    differ = [(t, reference.polarity_scores(t), fast.polarity_scores(t)) for t in texts]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ[:5], f"{len(differ)} of {len(texts)} sentences score differently"
    counts = [plain_and_modified_hits(t, reference.lexicon) for t in texts]
    assert sum(p for p, _ in counts) > 20_000 and sum(m for _, m in counts) > 5_000
    assert sum(bool(p and m) for p, m in counts) > 2_000  # both kinds in one sentence


def test_texts_with_characters_near_the_emoji_table_score_the_same(analyzers):
    """The emoji table holds © and ® and characters from U+203C up, in both planes; texts with other characters
    from those ranges (maths letters, CJK, curly quotes, dashes) are not emoji and take the port's own rules."""
    reference, fast = analyzers
    texts = [
        "Kelly is a 𝔤𝔯𝔢𝔞𝔱 leader — truly ‘excellent’ work!",
        "©2024 the team: good work, bad luck 😁",
        "The ® mark is not great… but fine.",
        "漢字 good 𝟘 bad 🂡 happy",
        "No ❤ for this terrible plan",
        "A 𐍈 character and a wonderful day.",
    ]
    for text in texts:
        assert fast.polarity_scores(text) == reference.polarity_scores(text), text
