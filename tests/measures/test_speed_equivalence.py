"""The optimised pure parts (sentence splitting, phrase matching, lexicon counts) give the results of the plain
reference implementations they replaced, on random texts with the tricky characters."""

import json
import random
import re
from collections import Counter
from dataclasses import dataclass

from measures import lexical
from stereoscope.stats import textproc

_END_RE = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s+|$)")
_ABBREV_TAIL = re.compile(r"([\w.]{1,12})$")


@dataclass(frozen=True)
class RefSentence:
    index: int
    start: int
    end: int
    text: str


def _ref_ends_sentence(line, match):
    end = match.end()
    n = len(line)
    while end < n and line[end].isspace():
        end += 1
    if end < n and line[end].islower():
        return False
    punct = match.group(0)
    if punct[0] == "." and len(punct.rstrip("\"'”’»)]")) == 1:
        before = _ABBREV_TAIL.search(line, max(0, match.start() - 12), match.start())
        if before:
            token = before.group(1)
            if token.lower() in textproc.ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                return False
    return True


def reference_split(text):
    """split_sentences as it was before the speed work (issue 18)."""
    text = text or ""
    sentences = []
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        start = 0
        for match in _END_RE.finditer(line):
            if _ref_ends_sentence(line, match):
                _ref_add(sentences, line, line_start, start, match.end())
                start = match.end()
        _ref_add(sentences, line, line_start, start, len(line))
    return sentences


def _ref_add(sentences, line, line_start, start, end):
    chunk = line[start:end]
    stripped = chunk.strip()
    if not stripped or not any(c.isalnum() for c in stripped):
        return
    offset = start + (len(chunk) - len(chunk.lstrip()))
    s = line_start + offset
    sentences.append(RefSentence(len(sentences), s, s + len(stripped), stripped))


PIECES = [
    "Dr.",
    "Mr.",
    "e.g.",
    "J.",
    "K.",
    "she",
    "He",
    "au",
    "pair",
    "au  pair",
    "xau pair",
    "sex",
    "worker",
    "Sexworker",
    "sex\nworker",
    "_sex worker",
    "not",
    "aggressive",
    "Babylon",
    "baby",
    "Ärzte",
    "straße",
    "İstanbul",
    "…",
    "?!",
    ".",
    '."',
    "!)",
    "\n",
    "\n\n",
    "  ",
    "\t",
    "-",
    "'",
    "’",
    "—",
    "5",
    "p.m.",
    "ﬁne",
    "ǅ",
    "_",
    "x-au pair",
    "selling",
    "her",
    "body",
    "strip",
    "club",
    "caregiving",
    "nurse",
    "nursery",
    "Mother's",
    "kind-hearted",
]


def random_texts(n=400, seed=11):
    rng = random.Random(seed)
    for _ in range(n):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(0, 60))]
        yield "".join(p + rng.choice([" ", " ", "", "\n", ". ", "? "]) for p in parts)


def test_sentence_ends_take_the_whitespace_after_them():
    """split_sentences cuts a text at its ends, each taken with the whitespace after it: every piece but the first
    starts with its first non-space character (so only the first is measured for leading spaces), and the
    sentences stay those of the reference (below and test_split_sentences_equals_the_reference_on_tricky_ends)."""
    texts = [*random_texts(200, seed=36), "A.\r\n\n  B!  \u2028 C? \x85D.\t\n", "  \n .  x. \n", "Dr. A. B.  Hi"]
    for text in texts:
        parts = textproc._boundaries().split(text)
        assert not any(piece[:1].isspace() for piece in parts[2::2]), repr(text)
        got = [(s.index, s.start, s.end, s.text) for s in textproc.split_sentences(text)]
        assert got == [(s.index, s.start, s.end, s.text) for s in reference_split(text)], repr(text)


def test_split_sentences_equals_the_reference():
    for text in random_texts():
        got = textproc.split_sentences(text)
        want = reference_split(text)
        assert [(s.index, s.start, s.end, s.text) for s in got] == [(s.index, s.start, s.end, s.text) for s in want], (
            text
        )


def _reference_matcher_counts(categories, exclusions, policy, text):
    """Counts from find() with every phrase and exclusion run as its plain lookbehind regex."""
    lowered = textproc.lower_same_length(text)
    matches = []
    for cat in categories:
        for entry in cat.words:
            low = textproc.lower_same_length(entry)
            if cat.mode == "regex":
                pattern, source = re.compile(entry, re.IGNORECASE), text
            else:
                pattern, source = re.compile(lexical._phrase_pattern(low, cat.mode)), lowered
            matches.extend((cat.key, m.start()) for m in pattern.finditer(source) if m.end() > m.start())
    spans = []
    for ex in exclusions:
        low = textproc.lower_same_length(ex.phrase.strip())
        spans.extend(
            (ex.category, m.start(), m.end())
            for m in re.compile(lexical._phrase_pattern(low, "prefix")).finditer(lowered)
        )
    matches = [(c, s) for c, s in matches if not any((cat is None or cat == c) and a <= s < b for cat, a, b in spans)]
    if policy == "per_token":
        matches = list(dict.fromkeys(matches))
    counts = dict.fromkeys((c.key for c in categories), 0)
    counts.update(Counter(c for c, _ in matches))
    return counts


def test_matcher_counts_equal_the_plain_regex_reference():
    categories = [
        lexical.CategorySpec("care", ("nurse", "baby", "au pair", "mother"), "prefix"),
        lexical.CategorySpec("sex", ("sex worker", "strip club", "selling her body", "sex"), "prefix"),
        lexical.CategorySpec("whole", ("au pair", "kind", "straße"), "whole_word"),
        lexical.CategorySpec("sub", ("aby", "ork"), "substring"),
    ]
    exclusions = [
        lexical.ExclusionSpec("Babylon", category="care"),
        lexical.ExclusionSpec("not aggressive"),
        lexical.ExclusionSpec("xau pair"),
    ]
    for policy in lexical.COUNT_POLICIES:
        matcher = lexical.Matcher(categories, exclusions, policy)
        plain = lexical.Matcher(categories, (), policy)
        for text in random_texts(300, seed=5):
            assert matcher.count(text) == _reference_matcher_counts(categories, exclusions, policy, text), text
            assert plain.count(text) == _reference_matcher_counts(categories, (), policy, text), text
            assert Counter(m.category for m in matcher.find(text)) + Counter() == Counter(
                {k: v for k, v in matcher.count(text).items() if v}
            )


def test_gc_paused_disables_and_restores(automatic_gc):
    import gc

    from measures.scoring import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_scoring_and_sentence_rows_run_without_cyclic_gc(db, study, make_outputs, monkeypatch, automatic_gc):
    import gc

    from measures import scoring
    from measures.classifiers import VaderClassifier

    seen = []
    original_predict, original_insert = VaderClassifier.predict, scoring.insert_measures
    monkeypatch.setattr(
        VaderClassifier, "predict", lambda self, texts: seen.append(gc.isenabled()) or original_predict(self, texts)
    )
    monkeypatch.setattr(scoring, "insert_measures", lambda *a: seen.append(gc.isenabled()) or original_insert(*a))
    make_outputs(study, [{"text": "She is kind. She is a nurse.", "slot_values": {"name": "Kelly"}}])
    run = scoring.create_run(study, name="gc", classifier="vader")
    scoring.start(run)
    assert seen == [False, False] and gc.isenabled()


def test_a_measure_run_reads_and_scores_with_cyclic_gc_paused_and_collects_each_chunks_young_garbage(
    db, study, make_outputs, monkeypatch, automatic_gc
):
    """Collections during a run walk the live caches (VADER's, the token cache) again and again: the whole run loop
    has cyclic GC paused, reading its chunks too, and after each chunk only the youngest generation (what the
    chunk allocated) is collected, so a chunk's cyclic garbage does not pile up over a long run."""
    import gc

    from measures import scoring
    from measures.classifiers import VaderClassifier

    monkeypatch.setattr(scoring, "QUICK_BATCH", 1)  # one output a chunk: three chunks
    seen, collected = [], []
    original_load, original_collect = scoring.load_outputs, gc.collect
    monkeypatch.setattr(scoring, "load_outputs", lambda ids: seen.append(gc.isenabled()) or original_load(ids))

    def collect(generation=2):
        collected.append(generation)
        return original_collect(generation)

    monkeypatch.setattr(gc, "collect", collect)

    class Cycle:
        made = 0

        def __init__(self):
            self.me = self
            Cycle.made += 1

    original_predict = VaderClassifier.predict
    monkeypatch.setattr(VaderClassifier, "predict", lambda self, texts: Cycle() and original_predict(self, texts))
    make_outputs(study, [{"text": f"She is kind {i}.", "slot_values": {"name": "Kelly"}} for i in range(3)])
    run = scoring.create_run(study, name="gc", classifier="vader")
    scoring.start(run)
    assert seen == [False, False, False] and gc.isenabled()
    assert collected.count(0) == 3 and 2 not in collected
    assert Cycle.made == 3 and not [o for o in gc.get_objects() if type(o) is Cycle]  # collected: no pile-up


def test_no_whitespace_character_is_a_word_character():
    """TextCounter splits texts at whitespace (str.split) before finding words: that is only exact because no
    character str.split() splits at can be part of a word."""
    import sys

    word_char = re.compile(r"[\w\-'’]")
    assert not [hex(i) for i in range(sys.maxunicode + 1) if chr(i).isspace() and word_char.match(chr(i))]


def test_text_counter_equals_prepare_and_each_matcher():
    english = [
        lexical.CategorySpec("care", ("nurse", "baby", "au pair", "mother"), "prefix"),
        lexical.CategorySpec("sex", ("sex worker", "strip club", "selling her body", "sex"), "prefix"),
        lexical.CategorySpec("whole", ("au pair", "kind", "straße", "kind"), "whole_word"),
    ]
    per_token = [
        lexical.CategorySpec("sub", ("aby", "ork"), "substring"),
        lexical.CategorySpec("re", (r"\bnot\s+\w+",), "regex"),
        lexical.CategorySpec("tok", ("ba", "baby", "mother's", "kind-hearted"), "prefix"),
        lexical.CategorySpec("empty", (), "prefix"),
    ]
    matchers = [
        lexical.Matcher(english, [lexical.ExclusionSpec("Babylon", category="care")], "per_entry"),
        lexical.Matcher(per_token, [lexical.ExclusionSpec("not aggressive"), lexical.ExclusionSpec(r"x-?au", True)]),
        lexical.Matcher([lexical.CategorySpec("plain", ("she", "he", "her"), "whole_word")]),
    ]
    counter = lexical.TextCounter(matchers)
    for text in list(random_texts(400, seed=9)) + ["", "   ", "—", "İstanbul Babylon baby", "a--b x/y ’tis"]:
        for _ in range(2):  # learning the tokens, then from the cache
            n_words, counts, tokens = counter.count(text)
            lowered, words = lexical.prepare(text)
            assert n_words == sum(words.values()), text
            expected = {}
            for matcher in matchers:
                expected.update(matcher.count(text))
            assert counts == expected, text
            assert tokens == lowered.split()
            assert Counter(w for t in tokens for w in counter.words_of(t)) == words


def test_text_counter_with_a_full_cache_counts_the_same(monkeypatch):
    monkeypatch.setattr(lexical.TextCounter, "CACHE", 5)
    matcher = lexical.Matcher([lexical.CategorySpec("care", ("nurse", "baby", "au pair"), "prefix")])
    counter = lexical.TextCounter([matcher])
    for text in random_texts(100, seed=4):
        n_words, counts, _ = counter.count(text)
        assert (n_words, counts) == (sum(lexical.prepare(text)[1].values()), matcher.count(text)), text


SENTENCE_PIECES = [
    "Mr.",
    "MR.",
    "mR.",
    "Dr.",
    "e.g.",
    "E.G.",
    "i.e.",
    "etc.",
    "Approx.",
    "z.B.",
    "xmr.",
    "a.mr.",
    "co.",
    "J.",
    "j.",
    "É.",
    "é.",
    "Ǆ.",
    "ǅ.",
    "Σ.",
    "σ.",
    "ß.",
    "İ.",
    "K.",
    "1.",
    "_.",
    "abcdefghijklmr.",
    "kind.",
    "kind",
    "nurse",
    "She",
    "she",
    "élan",
    "Élan",
    "ǅemal",
    "ßeta",
    "ªb",
    "ʰx",
    "ⅰv",
    "Ⅰv",
    "𝐀.",
    "𝐚",
    "...",
    "?!",
    "!?.",
    "…",
    ".…",
    '."',
    ".”",
    "!)",
    "?']",
    ".'.",
    "—",
    "-",
    "“",
    "«",
    "(",
    "5",
]
SEPARATORS = [" ", " ", "  ", "", "\n", "\n\n", "\t", "\r\n", "\u2028", "\x0b", "\u00a0", " \n ", "\x1c"]


def test_split_sentences_equals_the_reference_on_tricky_ends():
    rng = random.Random(18)
    texts = ["", " ", "\n", ".", "Mr. X", "He met Mr. Smith. She left.", "A. B. C. Rowling wrote it. Yes."]
    for _ in range(4000):
        parts = [rng.choice(SENTENCE_PIECES) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 25))]
        texts.append("".join(parts))
    for text in texts:
        want = [(s.index, s.start, s.end, s.text) for s in reference_split(text)]
        assert [(s.index, s.start, s.end, s.text) for s in textproc.split_sentences(text)] == want, repr(text)
        assert [(s.index, s.start, s.end, s.text) for s in textproc._split_by_rules(text)] == want, repr(text)
        assert all(type(s) is textproc.Sentence for s in textproc.split_sentences(text))


PREFILTER_CATEGORIES = [
    lexical.CategorySpec("care", ("nurse", "baby", "au pair", "mother", "x.y"), "prefix"),
    lexical.CategorySpec("sex", ("sex worker", "strip club", "selling her body", "sex"), "prefix"),
    lexical.CategorySpec("whole", ("au pair", "kind", "straße"), "whole_word"),
    lexical.CategorySpec("sub", ("aby", "ork"), "substring"),
]
PREFILTER_EXCLUSIONS = [
    lexical.ExclusionSpec("Babylon", category="care"),
    lexical.ExclusionSpec("not aggressive"),
    lexical.ExclusionSpec("xau pair"),
]


def test_text_counter_skipping_texts_without_a_phrase_counts_as_the_reference():
    """TextCounter leaves out a matcher's whole-text search when no phrase, substring or exclusion of it has all its
    words in the text: short texts (each holds a few pieces, so most lack some phrase word) count as the plain
    regex reference does, for each count policy and with a full token cache too."""
    rng = random.Random(36)
    pieces = PIECES + ["x.y", "x.yz", "ax.y", "club", "clubs", "aggressively", "nota", "Pairs", "SEX", "WORKER"]
    texts = [
        "".join(rng.choice(pieces) + rng.choice([" ", "", "\n", ". ", "\t"]) for _ in range(rng.randint(0, 6)))
        for _ in range(1500)
    ]
    texts += ["au pair", "au\npair", "xau pair", "not  aggressive", "strip\tclub", "Babylon baby", "selling her body"]
    for policy in lexical.COUNT_POLICIES:
        matcher = lexical.Matcher(PREFILTER_CATEGORIES, PREFILTER_EXCLUSIONS, policy)
        for cache in (lexical.TextCounter.CACHE, 3):
            counter = lexical.TextCounter([matcher])
            counter.CACHE = cache
            for text in texts:
                n_words, counts, _ = counter.count(text)
                assert counts == _reference_matcher_counts(PREFILTER_CATEGORIES, PREFILTER_EXCLUSIONS, policy, text), (
                    text
                )
                assert n_words == sum(lexical.prepare(text)[1].values())


def test_text_counter_runs_a_matchers_text_search_only_where_its_words_occur(monkeypatch):
    """A text with no phrase, substring or exclusion whose words all occur is counted from its tokens alone (the
    matcher's whole-text search is not run); a matcher with a regular expression is run on every text."""
    searched = []
    monkeypatch.setattr(lexical.Matcher, "_count_other", lambda self, *a: searched.append(self._keys[0]))
    monkeypatch.setattr(lexical.Matcher, "_excluded_here", lambda self, *a: searched.append(self._keys[0]))
    phrases = lexical.Matcher(PREFILTER_CATEGORIES, PREFILTER_EXCLUSIONS)
    regex = lexical.Matcher([lexical.CategorySpec("re", (r"\bnot\s+\w+",), "regex")])
    counter = lexical.TextCounter([phrases, regex])
    counter.count("The nurse saw a club and a pair of kind mothers.")  # no phrase has all its words
    assert searched == ["re"]
    searched.clear()
    counter.count("The nurse was an au pair.")
    assert searched == ["care", "care", "re"]


def test_split_sentences_tells_texts_beyond_the_basic_multilingual_plane_from_the_others():
    """Texts with a character beyond the BMP (a surrogate pair in UTF-16) take the rule-by-rule splitter, the others
    (lone surrogates too) the expression; both equal the reference."""
    texts = ["Mr. X met 𝐀. Then she left.", "Ärzte. Straße 𝐚 ok. Yes.", "Lone \ud800 half. Next one.", "\udfff. A b."]
    texts += ["Ärzte sagen. Ja.", "", "𝐀", "\U0010ffff. x. Y."]
    for text in texts:
        got = [(s.index, s.start, s.end, s.text) for s in textproc.split_sentences(text)]
        assert got == [(s.index, s.start, s.end, s.text) for s in reference_split(text)], text


def _text_counter_for_chunks():
    matchers = [
        lexical.Matcher(
            [
                lexical.CategorySpec("care", ("nurse", "baby", "au pair", "mother"), "prefix"),
                lexical.CategorySpec("whole", ("au pair", "kind", "straße", "kind"), "whole_word"),
            ],
            [lexical.ExclusionSpec("Babylon", category="care")],
            "per_entry",
        ),
        lexical.Matcher(
            [
                lexical.CategorySpec("sub", ("aby", "ork"), "substring"),
                lexical.CategorySpec("re", (r"\bnot\s+\w+",), "regex"),
                lexical.CategorySpec("tok", ("ba", "baby", "mother's", "kind-hearted"), "prefix"),
                lexical.CategorySpec("empty", (), "prefix"),
            ],
            [lexical.ExclusionSpec("not aggressive"), lexical.ExclusionSpec(r"x-?au", True)],
        ),
        lexical.Matcher([lexical.CategorySpec("plain", ("she", "he", "her"), "whole_word")]),
    ]
    return lexical.TextCounter(matchers)


def test_text_counter_counting_a_chunk_equals_counting_each_text():
    """count_many (every text's tokens looked up at once, counted by array operations) gives what count gives text
    by text, and token_counts of its token ids what a Counter updated with each text's tokens in turn gives (the
    same order included); also on chunks that bring new tokens after others were learnt."""
    texts = list(random_texts(300, seed=21)) + ["", "   ", "—", "İstanbul Babylon baby", "a--b x/y ’tis", None]
    fast, plain = _text_counter_for_chunks(), _text_counter_for_chunks()
    for chunk in (texts[:40], texts[40:41], texts[41:], texts[::-1], []):
        found, ids = fast.count_many(chunk)
        expected = [plain.count(text) for text in chunk]
        assert [(n, counts) for n, counts, _ in found] == [(n, counts) for n, counts, _ in expected]
        assert [len(t) for _, _, t in found] == [len(t) for _, _, t in expected]
        for parts in ([0, len(chunk)], [0, len(chunk) // 3, len(chunk)], [len(chunk) // 2, len(chunk)]):
            seqs = [found[i][2] for i in range(*parts[:2])] + [found[i][2] for i in range(*parts[-2:])]
            tokens = Counter()
            for i in list(range(*parts[:2])) + list(range(*parts[-2:])):
                tokens.update(expected[i][2])
            assert fast.token_counts(seqs) == list(tokens.items())
        assert ids is None or len(ids) == sum(len(t) for _, _, t in expected)


def test_text_counter_counting_a_chunk_with_a_full_cache_counts_the_same(monkeypatch):
    monkeypatch.setattr(lexical.TextCounter, "CACHE", 5)
    fast, plain = _text_counter_for_chunks(), _text_counter_for_chunks()
    texts = list(random_texts(60, seed=5))
    found, _ = fast.count_many(texts)
    expected = [plain.count(text) for text in texts]
    assert [(n, c) for n, c, _ in found] == [(n, c) for n, c, _ in expected]
    tokens = Counter()
    for _, _, t in expected:
        tokens.update(t)
    assert fast.token_counts([t for _, _, t in found]) == list(tokens.items())


def test_counts_json_writes_what_json_dumps_writes():
    """The measures' category counts are written by a template per key order: the same text as json.dumps."""
    from measures.scoring import NumbersJson

    rng = random.Random(36)
    keys = ["1", "22", "a b", 'q"uote', "100%", "%d", "ä", "\\", "\n", "💡", ""]
    dumps = NumbersJson()
    cases = [{}, {"1": 0}, {"1": True}, {"1": 1.0}, {1: 2}, {"1": None}, {"1": -3, "2": 10**30}, {"x": "y"}]
    for _ in range(500):
        chosen = rng.sample(keys, rng.randint(0, len(keys)))
        cases.append({k: rng.choice([0, 1, 7, 12345, -1]) for k in chosen})
    for counts in cases + cases:  # templates made, then reused
        assert dumps(counts) == json.dumps(counts), counts


def test_row_json_writes_what_json_dumps_writes():
    """The measures' label shares (floats) and gender details (a few scalars, repeated) are written by a template per
    key order and value types, or remembered: the same text as json.dumps."""
    from measures.scoring import DetailJson, NumbersJson

    rng = random.Random(37)
    numbers, details = NumbersJson(), DetailJson()
    cases = [
        {},
        {"negative": 0.0, "neutral": 1.0, "positive": 0.0},
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": -float("inf"), "b": 1},
        {"a": 1e-300, "b": 1e300, "c": -0.0, "d": 1 / 3},
        {"a": True, "b": 1},
        {"a": 1, "b": True},
        {"a": 1.0, "b": 1},
        {"a": 1, "b": 1.0},
        {"%r": 0.5, 'q"': 2},
        {"slot": "name", "value": "Kelly", "by": "name list"},
        {"slot": "name", "value": 'Kelly \u00e4 "q" \n', "by": None},
        {"female_pronouns": 3, "male_pronouns": 0, "reason": "fewer than 4 gendered pronouns"},
        {"female_pronouns": 3.0, "male_pronouns": 0},
        {"female_pronouns": True, "male_pronouns": 0},
        {"x": [1, 2]},
        {"x": {"y": 1}},
        {"x": (1, True)},
        {1: "a"},
        {None: 1},
    ]
    for _ in range(500):
        keys = rng.sample(["negative", "neutral", "positive", "x", "%s"], rng.randint(0, 5))
        cases.append({k: rng.choice([rng.random(), rng.randint(0, 9) / rng.randint(1, 9), 0.0, 1.0, 3]) for k in keys})
    for case in cases + cases:  # templates made (remembered), then reused
        assert numbers(case) == json.dumps(case), case
        assert details(case) == json.dumps(case), case
