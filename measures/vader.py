"""VADER sentence scores, the vaderSentiment library's rules run faster. No Django imports.

`FastVader(analyzer).polarity_scores(text)` returns what `analyzer.polarity_scores(text)` returns, to the last digit
(tests/measures/test_vader_port.py compares them on the library's own examples and on a large generated corpus full
of its special cases). The lexicon, the emoji table, the constants and the score arithmetic are the library's own;
only the per-word rules are written again, so that each word is lower-cased once instead of dozens of times and
words outside the lexicon cost one dictionary lookup. That makes VADER about 2.5 times faster (0.035 → 0.016 ms a
sentence of benchmarks/text_measures.py's kind).

Texts the fast path does not cover go to the library unchanged: any text with a character of the emoji table (none
of them is ASCII, so an ASCII text is not even looked at).
"""

import string

from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    C_INCR,
    N_SCALAR,
    NEGATE,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
)

_PUNCTUATION = string.punctuation
_NEGATE = frozenset(NEGATE)
_OR_NOR = ("or", "nor")


def _negated(word):
    """vaderSentiment.negated([word]) for one lower-cased word."""
    return word in _NEGATE or "n't" in word


class FastVader:
    def __init__(self, analyzer=None):
        self.analyzer = analyzer or SentimentIntensityAnalyzer()
        self.lexicon = self.analyzer.lexicon
        # the library replaces a text's characters found in its emoji table: only one-character entries can match
        self.emoji_chars = frozenset(e for e in self.analyzer.emojis if len(e) == 1)
        self._ascii_emoji = any(e.isascii() for e in self.emoji_chars)

    def polarity_scores(self, text):
        if (self._ascii_emoji or not text.isascii()) and not self.emoji_chars.isdisjoint(text):
            return self.analyzer.polarity_scores(text)
        text = text.strip()
        words = []
        for token in text.split():  # SentiText._strip_punc_if_word
            stripped = token.strip(_PUNCTUATION)
            words.append(token if len(stripped) <= 2 else stripped)
        low = list(map(str.lower, words))
        n = len(words)
        sentiments = [0] * n
        lexicon, boosters = self.lexicon, BOOSTER_DICT
        hits = [i for i, v in enumerate(map(lexicon.__contains__, low)) if v and low[i] not in boosters]
        if hits:
            caps = sum(map(str.isupper, words))
            is_cap_diff = 0 < n - caps < n  # allcap_differential
            for i in hits:
                if i < n - 1 and low[i] == "kind" and low[i + 1] == "of":
                    continue
                sentiments[i] = self._valence(words, low, i, is_cap_diff)
            if "but" in low:
                sentiments = SentimentIntensityAnalyzer._but_check(words, sentiments)
        return self.analyzer.score_valence(sentiments, text)

    def _valence(self, words, low, i, is_cap_diff):
        """SentimentIntensityAnalyzer.sentiment_valence for a word of the lexicon."""
        lexicon = self.lexicon
        item = low[i]
        valence = lexicon[item]
        if item == "no" and i != len(words) - 1 and low[i + 1] in lexicon:
            valence = 0.0
        if (
            (i > 0 and low[i - 1] == "no")
            or (i > 1 and low[i - 2] == "no")
            or (i > 2 and low[i - 3] == "no" and low[i - 1] in _OR_NOR)
        ):
            valence = lexicon[item] * N_SCALAR
        if is_cap_diff and words[i].isupper():
            if valence > 0:
                valence += C_INCR
            else:
                valence -= C_INCR
        for start_i in range(3):
            if i > start_i and low[i - (start_i + 1)] not in lexicon:
                s = _scalar_inc_dec(words[i - (start_i + 1)], low[i - (start_i + 1)], valence, is_cap_diff)
                if start_i == 1 and s != 0:
                    s = s * 0.95
                if start_i == 2 and s != 0:
                    s = s * 0.9
                valence = valence + s
                valence = _negation_check(valence, low, start_i, i)
                if start_i == 2:
                    valence = _special_idioms_check(valence, low, i)
        return _least_check(valence, low, i, lexicon)


def _scalar_inc_dec(word, word_lower, valence, is_cap_diff):
    scalar = 0.0
    if word_lower in BOOSTER_DICT:
        scalar = BOOSTER_DICT[word_lower]
        if valence < 0:
            scalar *= -1
        if word.isupper() and is_cap_diff:
            if valence > 0:
                scalar += C_INCR
            else:
                scalar -= C_INCR
    return scalar


def _negation_check(valence, low, start_i, i):
    if start_i == 0:
        if _negated(low[i - 1]):
            valence = valence * N_SCALAR
    if start_i == 1:
        if low[i - 2] == "never" and (low[i - 1] == "so" or low[i - 1] == "this"):
            valence = valence * 1.25
        elif low[i - 2] == "without" and low[i - 1] == "doubt":
            pass
        elif _negated(low[i - 2]):
            valence = valence * N_SCALAR
    if start_i == 2:
        if (
            low[i - 3] == "never"
            and (low[i - 2] == "so" or low[i - 2] == "this")
            or (low[i - 1] == "so" or low[i - 1] == "this")
        ):
            valence = valence * 1.25
        elif low[i - 3] == "without" and (low[i - 2] == "doubt" or low[i - 1] == "doubt"):
            pass
        elif _negated(low[i - 3]):
            valence = valence * N_SCALAR
    return valence


def _special_idioms_check(valence, low, i):
    onezero = f"{low[i - 1]} {low[i]}"
    twoonezero = f"{low[i - 2]} {low[i - 1]} {low[i]}"
    twoone = f"{low[i - 2]} {low[i - 1]}"
    threetwoone = f"{low[i - 3]} {low[i - 2]} {low[i - 1]}"
    threetwo = f"{low[i - 3]} {low[i - 2]}"
    for seq in (onezero, twoonezero, twoone, threetwoone, threetwo):
        if seq in SPECIAL_CASES:
            valence = SPECIAL_CASES[seq]
            break
    if len(low) - 1 > i:
        zeroone = f"{low[i]} {low[i + 1]}"
        if zeroone in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroone]
    if len(low) - 1 > i + 1:
        zeroonetwo = f"{low[i]} {low[i + 1]} {low[i + 2]}"
        if zeroonetwo in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroonetwo]
    for n_gram in (threetwoone, threetwo, twoone):
        if n_gram in BOOSTER_DICT:
            valence = valence + BOOSTER_DICT[n_gram]
    return valence


def _least_check(valence, low, i, lexicon):
    if i > 1 and low[i - 1] not in lexicon and low[i - 1] == "least":
        if low[i - 2] != "at" and low[i - 2] != "very":
            valence = valence * N_SCALAR
    elif i > 0 and low[i - 1] not in lexicon and low[i - 1] == "least":
        valence = valence * N_SCALAR
    return valence
