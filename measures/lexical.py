"""Lexicon matching and odds ratios. No Django imports.

Match modes (case-insensitive; a "word start" is where a word character follows a non-word character, i.e.
regex `\\b` before a word character):
- prefix:     the entry at a word start, anything may follow (Jung 2025: `\\bconfiden` matches "confident",
              "confidence"; `\\best` also matches "establish" and "estimate" — over-matching kept as published).
- whole_word: the entry at a word start and followed by a non-word character (`\\bkind\\b`).
- substring:  anywhere, as the regard study's keyword matching did ("Baby" in "Babylon").
- regex:      each entry is a Python regular expression (case-insensitive), all of a lexicon's together searching a text
              at most USER_PATTERN_SECONDS (UserPattern, PatternBudget).
Entries may contain spaces ("sex worker"); any run of whitespace in the text matches them.

Count policy:
- per_token (the default, also for the built-in Jung lexicon): a word counts at most once per category.
- per_entry (the raw per-listing count, kept as a named option for reproducing a paper that counted that way):
  every list entry counts its own matches, so a word matched by two entries of one category ("excellent" by
  'excellen' and 'excel'; 'superb' listed twice) counts twice, as a per-word regex count over a list with
  duplicates does.

Exclusions (the manual review list): a phrase matched at a word start (case-insensitive), or a regex. A lexicon
match that starts inside an occurrence of an exclusion is dropped ("Babylon" drops "Baby"; "not aggressive"
drops "aggressive"). An exclusion may be limited to one category.

Odds (Jung 2025, eq. 4.3–4.6): odds_g = words_g / (total_g − words_g); OR_male = odds_m / odds_f for male-typed
categories, OR_female = odds_f / odds_m for female-typed ones; the context score is the mean of the category ORs.
Per-word OR (Wan et al. 2023): E_m(w) / Σ_{v≠w} E_m(v) divided by E_f(w) / Σ_{v≠w} E_f(v).
Zero counts make an odds ratio 0 or undefined; the policy is explicit and recorded with every result:
"exclude" (no OR; the reason is given) or "smooth" (add 0.5 to each of the four cells, Haldane–Anscombe).
"""

import math
import re
import time
from collections import Counter
from collections import _count_elements as _count_elements  # the C loop behind Counter.update
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from stereoscope.lazy_imports import LazyModule
from stereoscope.stats import textproc
from stereoscope.stats.textproc import WORD_RE, lower_same_length

sparse = LazyModule("scipy.sparse")
regex = LazyModule("regex")  # researchers' regular expressions only (UserPattern)

MODES = ("prefix", "whole_word", "substring", "regex")
DIRECTIONS = ("male", "female", "none")
COUNT_POLICIES = ("per_entry", "per_token")
ZERO_POLICIES = ("exclude", "smooth")
OR_CONVENTIONS = {  # how a category OR is oriented; recorded with every result
    "per_category": "OR > 1 = the category's stereotyped direction (OR_male for male-typed, OR_female for "
    "female-typed categories; Jung 2025)",
    "male_salient": "OR > 1 = male-salient (Wan et al. 2023): OR_male = odds_m / odds_f for every category",
}
SMOOTHING = 0.5
SHORT_PREFIX = 3  # prefixes this short or shorter over-match; the UI warns
_SIMPLE_ENTRY = re.compile(r"^\w+(?:[-'’]\w+)*$")
_RUN_START = re.compile(r"(?<![\w])\w")


@dataclass(frozen=True)
class CategorySpec:
    key: str
    words: tuple
    mode: str = "prefix"
    direction: str = "none"
    name: str = ""


@dataclass(frozen=True)
class ExclusionSpec:
    phrase: str
    is_regex: bool = False
    category: str | None = None


@dataclass(frozen=True)
class Match:
    category: str
    entry: str
    start: int
    end: int


class LexiconError(ValueError):
    """A word list or exclusion that cannot be used; the message says which entry and why."""


USER_PATTERN_SECONDS = 2.0  # how long a lexicon's regular expressions may search one text, all of them together


class PatternBudget:
    """The time the regular expressions of one lexicon (a Matcher) may spend on one text, shared by all of them: the
    clock starts with the first search of a new text. So a lexicon of thousands of slow patterns costs a text
    USER_PATTERN_SECONDS in all, not that much per pattern."""

    def __init__(self):
        self._text, self._deadline = None, 0.0

    def seconds_left(self, text):
        now = time.monotonic()
        if text is not self._text:
            self._text, self._deadline = text, now + USER_PATTERN_SECONDS
        return max(self._deadline - now, 0.001)


class UserPattern:
    """A researcher's regular expression (a regex category entry or a regex exclusion), case-insensitive, with the
    `re` module's syntax, compiled by the `regex` package (VERSION0, its `re`-compatible mode) so that its searches of
    a text are bounded in time by the budget it shares with its lexicon's other patterns: a pattern that backtracks
    catastrophically, such as (a|a)+b, stops with a LexiconError naming it when the budget is spent, instead of
    holding a web request or a worker for hours."""

    class Invalid(ValueError):
        """Not a valid regular expression; the message says why."""

    def __init__(self, source, budget=None):
        self.source = source
        self.budget = budget or PatternBudget()
        try:
            self._pattern = regex.compile(source, regex.IGNORECASE | regex.VERSION0)
        except regex.error as exc:
            raise UserPattern.Invalid(str(exc)) from None

    def _too_slow(self):
        return LexiconError(
            f"The regular expressions of the lexicon took more than {USER_PATTERN_SECONDS:g} s on one text, "
            f"{self.source!r} when time ran out: it backtracks too much (nested repeats such as (a+)+ or (a|a)+). "
            "Simplify it."
        )

    def finditer(self, text):
        try:
            yield from self._pattern.finditer(text, timeout=self.budget.seconds_left(text))
        except TimeoutError:
            raise self._too_slow() from None

    def search(self, text):
        try:
            return self._pattern.search(text, timeout=self.budget.seconds_left(text))
        except TimeoutError:
            raise self._too_slow() from None

    def match(self, text):
        try:
            return self._pattern.match(text, timeout=self.budget.seconds_left(text))
        except TimeoutError:
            raise self._too_slow() from None


def normalize_words(raw):
    """Entries from a textarea (one per line or comma-separated) or a list.

    Quotes are stripped; order and duplicates are kept.
    """
    if isinstance(raw, str):
        parts = re.split(r"[\n,;]+", raw)
    elif raw is None:
        parts = []
    elif isinstance(raw, (list, tuple)):
        parts = list(raw)
    else:
        raise LexiconError("The word list must be text (one entry per line) or a list of strings.")
    words = []
    for part in parts:
        if not isinstance(part, str):
            raise LexiconError(f"Word list entries must be text, not {part!r}.")
        entry = part.strip().strip("'\"‘’“”").strip()
        if entry:
            words.append(entry)
    return words


def validate_category(words, mode):
    """Errors (list of strings) for a word list in a match mode."""
    errors = []
    if mode not in MODES:
        return [f"Unknown match mode {mode!r}; choose one of {', '.join(MODES)}."]
    for word in words:
        if mode == "regex":
            try:
                pattern = UserPattern(word)
            except UserPattern.Invalid as exc:
                errors.append(f"{word!r} is not a valid regular expression: {exc}.")
                continue
            if pattern.match(""):
                errors.append(f"{word!r} matches the empty string.")
        elif not any(c.isalnum() for c in word):
            errors.append(f"{word!r} has no letters or digits.")
    return errors


def warnings_for(words, mode, count_policy="per_token"):
    """Review warnings: duplicate entries, very short prefixes, entries covered by a shorter prefix; each says how
    the lexicon's count policy treats it (per_token: a word counts once per category; per_entry: once per listing)."""
    out = []
    lowered = [w.lower() for w in words]
    counts = Counter(lowered)
    once = count_policy == "per_token"
    for word, n in counts.items():
        if n > 1:
            how = "counted once (per_token)" if once else "each listing counts its matches (per_entry)"
            out.append(f"“{word}” is listed {n} times; {how}.")
    if mode in ("prefix", "substring"):
        for word in dict.fromkeys(lowered):
            if len(word) <= SHORT_PREFIX:
                out.append(f"“{word}” is a very short {mode}; it also matches longer unrelated words.")
        unique = list(dict.fromkeys(lowered))
        for word in unique:
            for other in unique:
                if other != word and word.startswith(other):
                    how = "a word they both match is counted once (per_token)" if once else "so it counts twice"
                    out.append(f"“{word}” is also matched by “{other}”; {how}.")
    return out


def _phrase_pattern(entry, mode):
    body = r"\s+".join(re.escape(part) for part in entry.split())
    if mode == "substring":
        return body
    tail = r"(?!\w)" if mode == "whole_word" else ""
    return r"(?<!\w)" + body + tail


_WORD_CHAR = re.compile(r"\w")


class WordStartPattern:
    r"""A phrase pattern that must start at a word start: the same matches as `(?<!\w)body`, found ~10x faster
    because a pattern that begins with a literal lets the regex engine skip ahead (a leading lookbehind does not)."""

    def __init__(self, body):
        self._body = re.compile(body)

    def finditer(self, text):
        search, pos, n = self._body.search, 0, len(text)
        while pos <= n:
            m = search(text, pos)
            if m is None:
                return
            s = m.start()
            if s and _WORD_CHAR.match(text, s - 1):
                pos = s + 1
                continue
            yield m
            pos = m.end() if m.end() > s else s + 1

    def search(self, text):
        return next(self.finditer(text), None)


def _compile_phrase(entry, mode):
    """A compiled phrase (finditer/search) equal to re.compile(_phrase_pattern(entry, mode))."""
    body = r"\s+".join(re.escape(part) for part in entry.split())
    if mode == "substring":
        return re.compile(body)
    return WordStartPattern(body + (r"(?!\w)" if mode == "whole_word" else ""))


class Matcher:
    """Finds the matches of a lexicon's categories in texts (build once, use for many texts)."""

    def __init__(self, categories, exclusions=(), count_policy="per_entry"):
        if count_policy not in COUNT_POLICIES:
            raise LexiconError(f"Unknown count policy {count_policy!r}.")
        self.categories = list(categories)
        self.count_policy = count_policy
        self._token_entries = {}  # first char -> [(category, entry_lower, entry, whole_word)]
        # (category, entry, compiled, needles): phrases run on the lowered text; needles None = user regex
        self._budget = PatternBudget()  # the time all the user regexes below may take on one text
        self._regexes = []
        self._substrings = []  # (category, entry_lower, entry)
        for cat in self.categories:
            errors = validate_category(cat.words, cat.mode)
            if errors:
                raise LexiconError(f"Category {cat.key}: {errors[0]}")
            for entry in cat.words:
                low = lower_same_length(entry)
                if cat.mode == "regex":
                    self._regexes.append((cat.key, entry, UserPattern(entry, self._budget), None))
                elif cat.mode == "substring" and _SIMPLE_ENTRY.match(low):
                    self._substrings.append((cat.key, low, entry))
                elif _SIMPLE_ENTRY.match(low):
                    self._token_entries.setdefault(low[0], []).append((cat.key, low, entry, cat.mode == "whole_word"))
                else:
                    self._regexes.append((cat.key, entry, _compile_phrase(low, cat.mode), tuple(low.split())))
        self._chunk_cache = {}
        self._agg_cache = {}  # word -> ((category, n), ...), () for most words
        self._hits = set()  # the cached words with matches
        self._keys = [c.key for c in self.categories]
        literal, patterns = [], []
        self._needles = []
        for ex in exclusions:
            if ex.is_regex:
                try:
                    patterns.append((ex.category, UserPattern(ex.phrase, self._budget)))
                except UserPattern.Invalid as exc:
                    raise LexiconError(f"Exclusion {ex.phrase!r} is not a valid regular expression: {exc}.") from None
            elif ex.phrase.strip():
                low = lower_same_length(ex.phrase.strip())
                literal.append((ex.category, _compile_phrase(low, "prefix")))
                self._needles.append(tuple(low.split()))
        self._exclusions = literal + patterns
        self._exclusions_on_lowered = len(literal)

    def text_needles(self):
        """The words that must all occur in a text (each inside one whitespace-free token) for one phrase, substring
        or exclusion of this matcher to match there: a tuple of word tuples, one per phrase, substring and
        exclusion, what count() checks with `in` before it looks for them. None when a regular expression of the
        matcher needs no fixed word (it is looked for in every text)."""
        if len(self._exclusions) > self._exclusions_on_lowered or any(n is None for *_, n in self._regexes):
            return None
        groups = [needles for *_, needles in self._regexes]
        groups += [(low,) for _, low, _ in self._substrings]
        groups += self._needles
        return tuple(dict.fromkeys(groups))

    def _chunk_matches(self, chunk):
        """Matches inside one lower-cased word (relative offsets), cached: words repeat a lot."""
        found = self._chunk_cache.get(chunk)
        if found is not None:
            return found
        found = []
        starts = [0] + [m.start() for m in _RUN_START.finditer(chunk) if m.start() > 0]
        for s in starts:
            for category, low, entry, whole in self._token_entries.get(chunk[s], ()):
                if not chunk.startswith(low, s):
                    continue
                end = s + len(low)
                if end < len(chunk) and (chunk[end].isalnum() or chunk[end] == "_"):
                    if whole:
                        continue
                    while end < len(chunk) and (chunk[end].isalnum() or chunk[end] == "_"):
                        end += 1
                found.append((category, entry, s, end))
        found = tuple(found)
        if len(self._chunk_cache) < 500_000:
            self._chunk_cache[chunk] = found
        return found

    def find(self, text):
        """All matches in `text`, sorted by position, exclusions applied, counted per the count policy."""
        text = text or ""
        lowered = lower_same_length(text)
        matches = []
        if self._token_entries:
            for m in WORD_RE.finditer(lowered):
                base = m.start()
                for category, entry, s, e in self._chunk_matches(m.group(0)):
                    matches.append(Match(category, entry, base + s, base + e))
        matches.extend(self._other_matches(text, lowered))
        if self._exclusions and matches:
            matches = self._apply_exclusions(text, lowered, matches)
        if self.count_policy == "per_token":
            seen, unique = set(), []
            for match in matches:
                if (match.category, match.start) not in seen:
                    seen.add((match.category, match.start))
                    unique.append(match)
            matches = unique
        matches.sort(key=lambda m: (m.start, m.end, m.category))
        return matches

    def _apply_exclusions(self, text, lowered, matches):
        spans = []
        for i, (category, pattern) in enumerate(self._exclusions):
            source = lowered if i < self._exclusions_on_lowered else text
            spans.extend((category, m.start(), m.end()) for m in pattern.finditer(source))
        if not spans:
            return matches
        return [
            m
            for m in matches
            if not any((cat is None or cat == m.category) and s <= m.start < e for cat, s, e in spans)
        ]

    def count(self, text, prepared=None):
        """{category key: number of matches} for every category (zeros included); equals counting find(text).

        Fast path: distinct words are looked up once per text (and once per process in a cache); exact positions
        are only computed when an exclusion occurs in the text. `prepared` = prepare(text), shareable by matchers.
        """
        text = text or ""
        lowered, chunk_counts = prepared if prepared is not None else prepare(text)
        counts = dict.fromkeys(self._keys, 0)
        if self._excluded_here(text, lowered):
            for match in self.find(text):
                counts[match.category] += 1
            return counts
        if self._token_entries:
            words = chunk_counts.keys()
            agg_cache = self._agg_cache
            for chunk in [w for w in words if w not in agg_cache]:  # not `words - keys`: that walks the whole cache
                agg = self._aggregate(chunk)
                if chunk not in agg_cache:  # the cache is full: count this word here
                    for category, n in agg:
                        counts[category] += n * chunk_counts[chunk]
            for chunk in words & self._hits:  # the few words that match (set operations run in C)
                k = chunk_counts[chunk]
                for category, n in agg_cache[chunk]:
                    counts[category] += n * k
        self._count_other(text, lowered, counts)
        return counts

    def _excluded_here(self, text, lowered):
        """Whether an exclusion occurs in the text (then exact positions are needed: find())."""
        for i, (_, pattern) in enumerate(self._exclusions):
            literal = i < self._exclusions_on_lowered
            if literal and not all(map(lowered.__contains__, self._needles[i])):
                continue
            if pattern.search(lowered if literal else text):
                return True
        return False

    def _count_other(self, text, lowered, counts):
        """Add the phrase, substring and regex matches (those not found word by word) to `counts`."""
        if not (self._substrings or self._regexes):
            return
        seen = set()
        for match in self._other_matches(text, lowered):
            if self.count_policy == "per_token":
                if (match.category, match.start) in seen or self._token_hit_at(lowered, match):
                    continue
                seen.add((match.category, match.start))
            counts[match.category] += 1

    def _aggregate(self, chunk):
        found = self._chunk_matches(chunk)
        if self.count_policy == "per_token":
            found = {(category, s): category for category, _, s, _ in found}.values()
        else:
            found = [category for category, _, _, _ in found]
        agg = tuple(Counter(found).items())
        if len(self._agg_cache) < 500_000:
            self._agg_cache[chunk] = agg
            if agg:
                self._hits.add(chunk)
        return agg

    def _other_matches(self, text, lowered):
        for category, low, entry in self._substrings:
            i = lowered.find(low)
            while i != -1:
                yield Match(category, entry, i, i + len(low))
                i = lowered.find(low, i + len(low))
        for category, entry, pattern, needles in self._regexes:
            if needles is not None and not all(map(lowered.__contains__, needles)):  # each word must occur
                continue
            for m in pattern.finditer(text if needles is None else lowered):
                if m.end() > m.start():
                    yield Match(category, entry, m.start(), m.end())

    def _token_hit_at(self, lowered, match):
        """Whether a word-list entry of the same category also matches at this position (per_token dedupe)."""
        p = match.start
        if p >= len(lowered) or (p > 0 and (lowered[p - 1].isalnum() or lowered[p - 1] == "_")):
            return False
        for category, low, _, whole in self._token_entries.get(lowered[p], ()):
            if category == match.category and lowered.startswith(low, p):
                end = p + len(low)
                if not whole or end >= len(lowered) or not (lowered[end].isalnum() or lowered[end] == "_"):
                    return True
        return False


class TextCounter:
    """Word count and every category count of several matchers (one per lexicon) in one pass over a text.

    A word (WORD_RE) never contains whitespace and the pattern looks at nothing around a match, so the words of a
    text are the words of its whitespace-separated tokens (str.split(), run in C). Each distinct token is looked up
    once per process: its words and what the matchers' word-list entries count in it. Phrases, substrings, regexes
    and exclusions are then handled per text by each matcher as in Matcher.count, and only in the texts where one of
    them has all its words (also learnt per token: a marker among the token's additions). The result equals
    sum(prepare(text)[1].values()) and Matcher.count(text) of every matcher (tests/measures/test_speed_equivalence.py).
    """

    CACHE = 300_000  # distinct tokens remembered; beyond that a token is looked up each time

    def __init__(self, matchers):
        self.matchers = list(matchers)
        self._zero = {}
        for matcher in self.matchers:
            self._zero.update(dict.fromkeys(matcher._keys, 0))
        self._words = {}  # token -> its words (lower-cased text in, so lower-cased words)
        # token -> what it adds to the counts: each matching category key as often as it counts, plus _MORE once per
        # word beyond the first or _NONE for a token without words ("—"); most tokens add nothing: ().
        self._adds = {}
        self._token_matchers = [m for m in self.matchers if m._token_entries]
        # The matchers with phrases, substrings, regexes or exclusions, looked for in the whole text. A token holding
        # one of their words adds that word's marker to the counts; a matcher none of whose phrases, substrings and
        # exclusions has all its words in the text finds nothing there and is not run (None: it always runs).
        self._other, markers = [], {}
        for m in self.matchers:
            if m._exclusions or m._substrings or m._regexes:
                needles = m.text_needles()
                if needles is not None:
                    needles = tuple(tuple(markers.setdefault(w, f"\x00has {w}") for w in group) for group in needles)
                self._other.append((m, needles))
        self._markers = tuple(markers.items())  # (word, its marker)
        self._start = {**self._zero, self._MORE: 0, self._NONE: 0, **dict.fromkeys(markers.values(), 0)}
        # For count_many: each cached token's id (in the order learnt), the token of each id, and what each id adds
        # as (id, column of self._start, 1) triples, made into a sparse matrix when new ids came since.
        self._column = {key: i for i, key in enumerate(self._start)}
        self._ids, self._token_of, self._adds_at = {}, [], ([], [])
        self._matrix = None
        self._adds_something = np.zeros(0, dtype=bool)

    _MORE, _NONE = "\x00more words", "\x00no word"

    def _learn(self, token):
        words = tuple(WORD_RE.findall(token))
        contrib = Counter()
        for matcher in self._token_matchers:
            for word in words:
                for category, n in matcher._aggregate(word):
                    contrib[category] += n
        adds = tuple(c for c, n in contrib.items() for _ in range(n))
        adds += (self._MORE,) * (len(words) - 1) if words else (self._NONE,)
        adds += tuple(marker for word, marker in self._markers if word in token)
        if len(self._words) < self.CACHE:
            self._words[token] = words
            self._adds[token] = adds
            self._ids[token] = token_id = len(self._token_of)
            self._token_of.append(token)
            self._adds_at[0].extend([token_id] * len(adds))
            self._adds_at[1].extend(map(self._column.__getitem__, adds))
        return words, adds

    def words_of(self, token):
        found = self._words.get(token)
        return found if found is not None else self._learn(token)[0]

    def count(self, text):
        """(word count, {category key: matches} over every matcher, the lower-cased tokens of the text).

        One pass over the tokens, in C (map and the counting loop behind Counter); a token never seen stops it
        (None is not iterable), is looked at in Python and the pass is done again."""
        text = text or ""
        lowered = lower_same_length(text)
        tokens = lowered.split()
        counts = dict(self._start)
        try:
            _count_elements(counts, chain.from_iterable(map(self._adds.get, tokens)))
        except TypeError:
            counts = dict(self._start)
            known = self._words
            for token in [t for t in tokens if t not in known]:
                if token in known:  # learnt just now (it occurs again): counted below
                    continue
                _, adds = self._learn(token)
                if token not in known:  # the cache is full: count this occurrence here
                    _count_elements(counts, adds)
            _count_elements(counts, chain.from_iterable(map(self._adds.get, tokens, repeat(()))))
        return self._finish(text, lowered, len(tokens), counts), counts, tokens

    def _finish(self, text, lowered, n_tokens, counts):
        """The word count; `counts` (what the tokens add) becomes the category counts: the markers and word counts
        taken out, each matcher's phrases, substrings and regexes (or all its matches, where an exclusion occurs)
        added."""
        n_words = n_tokens + counts.pop(self._MORE) - counts.pop(self._NONE)
        present = {marker: counts.pop(marker) for _, marker in self._markers}
        for matcher, needles in self._other:
            if needles is not None and not any(all(map(present.__getitem__, group)) for group in needles):
                continue  # no phrase, substring or exclusion of the matcher has all its words in the text
            if matcher._exclusions and matcher._excluded_here(text, lowered):
                counts.update(matcher.count(text))
            else:
                matcher._count_other(text, lowered, counts)
        return n_words

    def count_many(self, texts):
        """([count(text) for text in texts], the ids of all their tokens one text after the other), the tokens of
        every text looked up at once: each token's id by one C loop, then what the ids add summed per text by one
        sparse matrix product (texts × ids, ids × what they add). The third item of each count is the text's token
        ids (a slice of the ids), which token_counts takes as it takes tokens. When the cache is full, each text is
        counted by count(), and the ids are None."""
        texts = [text or "" for text in texts]
        lowered = list(map(lower_same_length, texts))
        ids, lengths = self._token_ids(lowered)
        if ids is None:
            return [self.count(text) for text in texts], None
        bounds = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        adds = self._adds_matrix()
        useful = np.flatnonzero(self._adds_something[ids])  # most tokens add something, but not all: only those
        per_text = sparse.csr_matrix(
            (np.ones(len(useful), dtype=np.int64), ids[useful], np.searchsorted(useful, bounds)),
            shape=(len(texts), len(self._token_of)),
        )
        columns = list(self._start)
        added = (per_text @ adds).toarray().tolist()
        found = []
        for i, (text, low, n_tokens, row) in enumerate(zip(texts, lowered, lengths.tolist(), added, strict=True)):
            counts = dict(zip(columns, row, strict=True))
            found.append((self._finish(text, low, n_tokens, counts), counts, ids[bounds[i] : bounds[i + 1]]))
        return found, ids

    def _token_ids(self, lowered):
        """(the id of every token of the lower-cased texts, each text's number of tokens), tokens as str.split()
        gives them, new tokens learnt first (in the order they first occur); the ids are None when one cannot be
        cached (the cache is full). By the compiled scanner, which makes no object per known token, or by C loops
        over the split texts."""
        scanner = textproc.compiled
        if scanner is not None:
            id_bytes, lengths, unknown = scanner.token_ids(lowered, self._ids)
            ids = np.frombuffer(id_bytes, dtype=np.int64)
            if unknown:  # new tokens (the first texts), numbered -1, -2, ... in ids: learnt, then given their ids
                for token in unknown:
                    self._learn(token)
                learnt = np.fromiter(map(self._ids.get, unknown, repeat(-1)), dtype=np.int64, count=len(unknown))
                if (learnt < 0).any():  # the cache is full
                    return None, np.frombuffer(lengths, dtype=np.int64)
                new = ids < 0
                ids[new] = learnt[-1 - ids[new]]
            return ids, np.frombuffer(lengths, dtype=np.int64)
        token_lists = list(map(str.split, lowered))
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(lowered))
        ids = np.fromiter(
            map(self._ids.get, chain.from_iterable(token_lists), repeat(-1)), dtype=np.int64, count=int(lengths.sum())
        )
        if (ids < 0).any():  # new tokens (the first texts): learnt, then looked up again
            ids = self._ids_of(list(chain.from_iterable(token_lists)))
        return ids, lengths

    def _ids_of(self, tokens):
        """The ids of `tokens` (an array), the new ones learnt first; None when one cannot be cached (the cache
        is full)."""
        ids = np.fromiter(map(self._ids.get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))
        new = np.flatnonzero(ids < 0).tolist()
        if not new:
            return ids
        for token in dict.fromkeys(map(tokens.__getitem__, new)):
            if token not in self._words:
                self._learn(token)
        if 8 * len(new) > len(tokens):  # many new (the first texts): look every token up again, in C
            ids = np.fromiter(map(self._ids.get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))
            return None if (ids < 0).any() else ids
        known = self._ids
        if any(tokens[i] not in known for i in new):
            return None
        ids[new] = [known[tokens[i]] for i in new]
        return ids

    def _adds_matrix(self):
        """What each id adds, as a sparse matrix (ids × the columns of the counts), made again after new ids."""
        n = len(self._token_of)
        if self._matrix is None or self._matrix.shape[0] != n:
            rows, columns = self._adds_at
            self._matrix = sparse.csr_matrix(
                (np.ones(len(rows), dtype=np.int64), (rows, columns)), shape=(n, len(self._column))
            )
            self._adds_something = np.diff(self._matrix.indptr) > 0  # per id: does it add anything
        return self._matrix

    def token_counts(self, sequences):
        """[(token, occurrences)] of the tokens of several texts, in the order they first occur: what a Counter
        updated with each text's tokens in turn holds. A sequence is a text's tokens (count) or their ids
        (count_many)."""
        sequences = list(sequences)
        token_of = self._token_of
        if not all(isinstance(s, np.ndarray) for s in sequences):
            tokens = Counter()
            for s in sequences:
                tokens.update(map(token_of.__getitem__, s.tolist()) if isinstance(s, np.ndarray) else s)
            return list(tokens.items())
        ids = np.concatenate(sequences) if sequences else np.zeros(0, dtype=np.int64)
        occurrences = np.bincount(ids, minlength=len(token_of))
        first = np.full(len(token_of), len(ids), dtype=np.int64)
        np.minimum.at(first, ids, np.arange(len(ids), dtype=np.int64))
        present = np.flatnonzero(occurrences)
        order = present[np.argsort(first[present], kind="stable")]
        return list(zip(map(token_of.__getitem__, order.tolist()), occurrences[order].tolist(), strict=True))


def prepare(text):
    """(lower-cased text, Counter of its words) — shared by several matchers counting the same text."""
    lowered = lower_same_length(text or "")
    return lowered, Counter(WORD_RE.findall(lowered))


def odds(words, total):
    """Jung eq. 4.3/4.4: words / (total − words); None when undefined (no non-category words)."""
    rest = total - words
    return None if rest <= 0 else words / rest


def category_odds_ratio(
    words_m, total_m, words_f, total_f, direction="male", zero_policy="exclude", convention="per_category"
):
    """The OR of one category between male- and female-subject texts, oriented by the stereotyped direction.

    Returns a dict: or (None if undefined under the policy), odds_m, odds_f, orientation, zero_policy, note.
    direction "male" (and "none") gives OR_male = odds_m / odds_f; "female" gives OR_female = odds_f / odds_m.
    convention "male_salient" (Wan et al. 2023) gives OR_male for every category, whatever its direction.
    """
    if zero_policy not in ZERO_POLICIES:
        raise LexiconError(f"Unknown zero-count policy {zero_policy!r}; choose exclude or smooth.")
    if convention not in OR_CONVENTIONS:
        raise LexiconError(f"Unknown odds-ratio orientation {convention!r}; choose {' or '.join(OR_CONVENTIONS)}.")
    for name, value in (("words_m", words_m), ("total_m", total_m), ("words_f", words_f), ("total_f", total_f)):
        if value < 0:
            raise LexiconError(f"{name} must not be negative.")
    if words_m > total_m or words_f > total_f:
        raise LexiconError("A category cannot have more words than the texts have in total.")
    orientation = "female" if direction == "female" and convention == "per_category" else "male"
    result = {
        "words_m": words_m,
        "total_m": total_m,
        "words_f": words_f,
        "total_f": total_f,
        "orientation": orientation,
        "convention": convention,
        "zero_policy": zero_policy,
        "note": "",
    }
    cells = (words_m, total_m - words_m, words_f, total_f - words_f)
    if min(cells) == 0:
        if zero_policy == "exclude":
            result.update(
                {
                    "or": None,
                    "odds_m": odds(words_m, total_m),
                    "odds_f": odds(words_f, total_f),
                    "note": "A zero count makes the odds ratio 0 or undefined; excluded by the policy.",
                }
            )
            return result
        a, b, c, d = (x + SMOOTHING for x in cells)
        result["note"] = f"Zero count: {SMOOTHING} added to each cell (Haldane–Anscombe)."
    else:
        a, b, c, d = cells
    odds_m, odds_f = a / b, c / d
    ratio = odds_m / odds_f if orientation == "male" else odds_f / odds_m
    result.update({"or": ratio, "odds_m": odds_m, "odds_f": odds_f})
    return result


def context_score(ors):
    """Jung's context sexism score: the mean of the category ORs (None entries skipped; None if none left)."""
    values = [v for v in ors if v is not None and not math.isnan(v)]
    return sum(values) / len(values) if values else None


def word_odds_ratios(counts_m, counts_f, zero_policy="exclude", min_count=1, vocabulary=None):
    """Wan et al.'s per-word odds ratio (OR > 1: male-salient) for every word seen in either group.

    counts_m / counts_f: Counter of lower-cased words. `vocabulary` limits the words scored (the totals still
    use every word). Returns a list of dicts sorted by OR descending (undefined ORs last), each with the policy.
    """
    if zero_policy not in ZERO_POLICIES:
        raise LexiconError(f"Unknown zero-count policy {zero_policy!r}; choose exclude or smooth.")
    total_m, total_f = sum(counts_m.values()), sum(counts_f.values())
    words = set(counts_m) | set(counts_f)
    if vocabulary is not None:
        words &= set(vocabulary)
    rows = []
    for word in words:
        e_m, e_f = counts_m.get(word, 0), counts_f.get(word, 0)
        if e_m + e_f < min_count:
            continue
        r = category_odds_ratio(e_m, total_m, e_f, total_f, "male", zero_policy)
        rows.append(
            {
                "word": word,
                "count_m": e_m,
                "count_f": e_f,
                "or": r["or"],
                "zero_policy": zero_policy,
                "smoothed": bool(r["note"]) and r["or"] is not None,
            }
        )
    rows.sort(key=lambda r: (r["or"] is None, -(r["or"] or 0), r["word"]))
    return rows


def top_salient(rows, k=10):
    """(male-salient, female-salient): the k words with the highest and the lowest defined ORs."""
    defined = [r for r in rows if r["or"] is not None]
    male = [r for r in defined if r["or"] > 1][:k]
    female = sorted((r for r in defined if r["or"] < 1), key=lambda r: (r["or"], r["word"]))[:k]
    return male, female


def lower_words(text):
    """The lower-cased words of a text, in order."""
    return WORD_RE.findall(lower_same_length(text or ""))


def word_counter(text, stopwords=frozenset()):
    """Counter of lower-cased words of a text, minus stop words."""
    counts = Counter(WORD_RE.findall(lower_same_length(text or "")))
    for word in stopwords & counts.keys():
        del counts[word]
    return counts


STOPWORDS_EN = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself yourselves
""".split()
)
