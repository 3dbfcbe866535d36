"""VADER sentence scores, the vaderSentiment library's rules run faster. No Django imports.

`FastVader(analyzer).polarity_scores(text)` returns what `analyzer.polarity_scores(text)` returns, to the last digit
(tests/measures/test_vader_port.py compares them on the library's own examples, on a large generated corpus full
of its special cases and on story-like sentences). The lexicon, the emoji table, the constants and the score
arithmetic are the library's own; only the per-word rules are written again:
- each token is stripped and lower-cased once (the stripped word of a token is remembered across texts), and the
  words that get a valence are picked out by set lookups run in C;
- a lexicon word with no modifier (negation, booster, "no", "least", "so", "this") among the three words before it,
  no idiom in its sentence and no capitals to stress it takes its lexicon valence as it is: that is what the rules
  give it then. Only the other words go through the rules;
- a sentence with no word of the lexicon gets the library's neutral scores without any arithmetic.
That makes VADER about 5 times faster than the library (0.035 → about 0.008 ms a sentence of
benchmarks/text_measures.py's kind).

Texts the fast path does not cover go to the library unchanged: any text with a character of the emoji table (none
of them is ASCII, so an ASCII text is not even looked at).
"""

import math
import re
import string
from itertools import compress, count

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
_CACHE = 500_000  # distinct tokens (and lower-cased words) remembered; beyond that they are worked out each time
# Lower-cased words that make a rule look at a lexicon word near them (up to three words before it): negations, the
# boosters and dampeners, "no", "never so/this", "without doubt", "least" and the "so"/"this" of the third-word rule.
# A word containing "n't" is a negation too (_ModifierWords).
_MODIFIERS = frozenset(_NEGATE | {w for w in BOOSTER_DICT if " " not in w} | {"no", "so", "this", "least"})
# The idioms and multi-word boosters (SPECIAL_CASES, "kind of"): each begins with one of these word pairs, so a
# sentence without any of them leaves the idiom rule with nothing to do.
_IDIOM_PAIRS = frozenset(" ".join(k.split(" ")[:2]) for k in (*SPECIAL_CASES, *BOOSTER_DICT) if " " in k)
_IDIOM_FIRST = frozenset(pair.split(" ")[0] for pair in _IDIOM_PAIRS)
_IDIOM_RE = re.compile("(?:^| )(?:" + "|".join(map(re.escape, sorted(_IDIOM_PAIRS))) + ")(?= |$)")
_NEUTRAL = {"neg": 0.0, "neu": 1.0, "pos": 0.0, "compound": 0.0}  # what the library gives when no word scores
_EMPTY = {"neg": 0.0, "neu": 0.0, "pos": 0.0, "compound": 0.0}  # ... and for a text without words


def _negated(word):
    """vaderSentiment.negated([word]) for one lower-cased word."""
    return word in _NEGATE or "n't" in word


class _Words(dict):
    """token -> the word VADER reads (SentiText._strip_punc_if_word), remembered."""

    def __missing__(self, token):
        stripped = token.strip(_PUNCTUATION)
        word = token if len(stripped) <= 2 else stripped
        if len(self) < _CACHE:
            self[token] = word
        return word


class _ModifierWords(dict):
    """lower-cased word -> whether a rule reads it when it comes before a lexicon word (see _MODIFIERS)."""

    def __missing__(self, word):
        found = word in _MODIFIERS or "n't" in word
        if len(self) < _CACHE:
            self[word] = found
        return found


class FastVader:
    def __init__(self, analyzer=None):
        self.analyzer = analyzer or SentimentIntensityAnalyzer()
        self.lexicon = self.analyzer.lexicon
        # the library replaces a text's characters found in its emoji table: only one-character entries can match
        self.emoji_chars = frozenset(e for e in self.analyzer.emojis if len(e) == 1)
        # a quick look for them: the table's characters of the Basic Multilingual Plane, and any beyond it (a class
        # listing hundreds of those is searched slowly; then the set says whether it is one of the table's)
        bmp = "".join(map(re.escape, sorted(e for e in self.emoji_chars if ord(e) <= 0xFFFF)))
        self._emoji_like = re.compile(f"[{bmp}\U00010000-\U0010ffff]")
        self._ascii_emoji = any(e.isascii() for e in self.emoji_chars)
        self._scored = frozenset(w for w in self.lexicon if w not in BOOSTER_DICT)  # words that get a valence
        self._words = _Words()
        self._modifiers = _ModifierWords()

    def polarity_scores(self, text):
        """analyzer.polarity_scores(text), to the last digit. The rules are the library's; a lexicon word with no
        modifier, idiom or capitals around it takes its lexicon valence unchanged, as the rules then give it."""
        if (
            (self._ascii_emoji or not text.isascii())
            and self._emoji_like.search(text)
            and not self.emoji_chars.isdisjoint(text)
        ):
            return self.analyzer.polarity_scores(text)
        text = text.strip()
        words = list(map(self._words.__getitem__, text.split()))
        low = list(map(str.lower, words))
        hits = list(compress(count(), map(self._scored.__contains__, low)))
        n = len(words)
        if not hits:
            return dict(_NEUTRAL if n else _EMPTY)
        sentiments = [0] * n
        lexicon = self.lexicon
        caps = sum(map(str.isupper, words))
        is_cap_diff = 0 < n - caps < n  # allcap_differential
        modifiers = list(map(self._modifiers.__getitem__, low))
        plain = not any(modifiers)
        if not _IDIOM_FIRST.isdisjoint(low) and _IDIOM_RE.search(" ".join(low)):
            plain = None  # an idiom: every word goes through the rules
        for i in hits:
            if i < n - 1 and low[i] == "kind" and low[i + 1] == "of":
                continue
            if (
                plain is not None
                and (plain or not any(modifiers[i - 3 if i > 3 else 0 : i + 1]))
                and not (is_cap_diff and words[i].isupper())
            ):
                sentiments[i] = lexicon[low[i]]
            else:
                sentiments[i] = self._valence(words, low, i, is_cap_diff)
        if "but" in low:
            sentiments = SentimentIntensityAnalyzer._but_check(words, sentiments)
        return _score_valence(sentiments, [sentiments[i] for i in hits], text)

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


def _score_valence(sentiments, scored, text):
    """SentimentIntensityAnalyzer.score_valence(sentiments, text) for a non-empty sentiments list whose non-zero
    values are all in `scored` (in order): the same operations on the same values, so the same floats."""
    sum_s = float(sum(sentiments))
    ep_count = text.count("!")
    ep_amplifier = (4 if ep_count > 4 else ep_count) * 0.292
    qm_count = text.count("?")
    qm_amplifier = 0
    if qm_count > 1:
        qm_amplifier = qm_count * 0.18 if qm_count <= 3 else 0.96
    punct_emph_amplifier = ep_amplifier + qm_amplifier
    if sum_s > 0:
        sum_s += punct_emph_amplifier
    elif sum_s < 0:
        sum_s -= punct_emph_amplifier
    compound = sum_s / math.sqrt((sum_s * sum_s) + 15)  # normalize(sum_s)
    if compound < -1.0:
        compound = -1.0
    elif compound > 1.0:
        compound = 1.0
    pos_sum = neg_sum = 0.0
    neu_count = len(sentiments)
    for sentiment_score in scored:
        if sentiment_score > 0:
            pos_sum += float(sentiment_score) + 1
            neu_count -= 1
        elif sentiment_score < 0:
            neg_sum += float(sentiment_score) - 1
            neu_count -= 1
    if pos_sum > math.fabs(neg_sum):
        pos_sum += punct_emph_amplifier
    elif pos_sum < math.fabs(neg_sum):
        neg_sum -= punct_emph_amplifier
    total = pos_sum + math.fabs(neg_sum) + neu_count
    return {
        "neg": round(math.fabs(neg_sum / total), 3),
        "neu": round(math.fabs(neu_count / total), 3),
        "pos": round(math.fabs(pos_sum / total), 3),
        "compound": round(compound, 4),
    }
