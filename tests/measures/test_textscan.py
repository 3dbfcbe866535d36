"""The compiled text scanner (stereoscope/stats/_textscan.c) gives what the Python code gives: the sentences of
split_sentences' expression and of the rule-by-rule splitter, and the tokens of str.split looked up in a dict, on
random and tricky texts, on every character of the Basic Multilingual Plane where a rule looks at one, and across
the three string widths CPython stores."""

import random
from collections import Counter

import numpy as np
import pytest

from measures import lexical
from stereoscope.stats import textproc
from tests.measures.test_speed_equivalence import (
    PIECES,
    SENTENCE_PIECES,
    SEPARATORS,
    _text_counter_for_chunks,
    random_texts,
    reference_split,
)

scanner = textproc.compiled

TRICKY = [
    *PIECES,
    *SENTENCE_PIECES,
    *SEPARATORS,
    "MR.",
    "mR.",
    "E.G.",
    "Z.B.",
    "z.b.",
    "xdr.",
    "_dr.",
    ".dr.",
    "Ā.",
    "ā.",
    "ǅ.",
    "ß",
    "Σ.",
    "²",
    "٣",
    "\x1c",
    "\x1f",
    "\x85",
    "\u3000",
    "\u180e",
    "\u200b",
    "»",
    "”",
    "’",
    ")",
    "]",
    "…",
    "...",
    "?!.",
    "!…",
]


def tricky_texts(n, seed, pieces=TRICKY):
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(pieces) + rng.choice(SEPARATORS + [""]) for _ in range(rng.randint(0, 30)))


def as_tuples(sentences):
    return [(s.index, s.start, s.end, s.text) for s in sentences]


def test_the_scanner_is_built():
    """`pip install -e .` compiles it (gcc and the Python headers are on every machine the project runs on); without
    it the measure engine's own work (all but the classifier) takes nearly twice as long, with the same results."""
    assert scanner is not None, "stereoscope/stats/_textscan.c was not compiled: reinstall with a C compiler present"


def test_sentences_equal_the_expression_and_the_rules():
    texts = [*random_texts(400, seed=3), *tricky_texts(6000, seed=29), "", " ", "\n", ".", "a.", "A. b", "Dr."]
    texts += ["ā " + t for t in tricky_texts(500, seed=30)]  # stored two bytes a character
    texts += ["\ud800 " + t for t in tricky_texts(200, seed=31)]  # a lone surrogate: still the Basic Plane
    for text in texts:
        want = as_tuples(textproc._split_by_expression(text))
        assert as_tuples(textproc.split_sentences(text)) == want, repr(text)
        assert as_tuples(textproc._split_by_rules(text)) == want, repr(text)
        assert as_tuples(reference_split(text)) == want, repr(text)
        assert all(type(s) is textproc.Sentence for s in textproc.split_sentences(text))


def test_sentences_look_at_every_character_as_the_expression_does():
    """Each rule that looks at one character (lower-case after an end, an initial, a word character before an
    abbreviation or an initial, whitespace, closers, letters and digits in a sentence), tried with every character
    of the Basic Multilingual Plane."""
    for code in range(0x10000):
        c = chr(code)
        for text in (f"A. {c}x", f"x {c}. Y", f"{c}dr. Y", f"A.{c}Y", f"A{c}. B", f"{c}", f"A. {c}"):
            assert as_tuples(textproc.split_sentences(text)) == as_tuples(textproc._split_by_expression(text)), (
                hex(code),
                text,
            )


def test_texts_beyond_the_basic_plane_go_to_the_rules():
    text = "Mr. X met 𝐀. Then she left."
    assert scanner.sentences(text, textproc.Sentence, textproc._ABBREVIATION_TUPLE) is None
    assert as_tuples(textproc.split_sentences(text)) == as_tuples(reference_split(text))


def python_token_ids(lowered, vocabulary):
    tokens = [t for text in lowered for t in text.split()]
    return [vocabulary.get(t, -1) for t in tokens], [len(text.split()) for text in lowered]


def compiled_token_ids(lowered, vocabulary):
    ids, lengths, unknown = scanner.token_ids(lowered, vocabulary)
    ids = np.frombuffer(ids, dtype=np.int64).tolist()
    tokens = [t for text in lowered for t in text.split()]
    assert unknown == list(dict.fromkeys(t for t in tokens if t not in vocabulary))
    assert all(unknown[-1 - i] == token for i, token in zip(ids, tokens, strict=True) if i < 0)
    return [max(i, -1) for i in ids], np.frombuffer(lengths, dtype=np.int64).tolist()


def test_token_ids_equal_split_and_a_dict_lookup():
    rng = random.Random(7)
    texts = [textproc.lower_same_length(t) for t in tricky_texts(3000, seed=8)]
    texts += ["", "   ", "ā b", "a\x1cb", "a\x85b\u2028c", "straße ǆ", "\U0001d400 x 𝐀𝐀"]
    tokens = sorted({t for text in texts for t in text.split()})
    vocabulary = {t: i for i, t in enumerate(rng.sample(tokens, len(tokens) // 2))}
    vocabulary["never"] = 10**12
    for chunk in (texts, texts[:1], [], texts[::-1]):
        assert compiled_token_ids(chunk, vocabulary) == python_token_ids(chunk, vocabulary)
    assert compiled_token_ids(texts, {}) == python_token_ids(texts, {})
    many = {f"t{i}": i for i in range(5000)}  # the table grows past its first size with unknown tokens
    chunk = [" ".join(f"t{i}" for i in range(k, 12000, 7)) for k in range(7)]
    assert compiled_token_ids(chunk, many) == python_token_ids(chunk, many)


def test_token_ids_split_on_exactly_the_whitespace_str_split_splits_on():
    texts = [f"a{chr(code)}b" for code in range(0x110000)]
    _, lengths = compiled_token_ids(texts, {})
    assert lengths == [len(t.split()) for t in texts]


def test_token_ids_compare_keys_and_texts_stored_at_different_widths():
    vocabulary = {"kelly": 0, "ā": 1, "𝐀": 2, "straße": 3}
    for text in ("kelly ā", "kelly 𝐀", "ā kelly straße", "kelly", "𝐀 straße kelly ā"):
        assert compiled_token_ids([text], vocabulary) == python_token_ids([text], vocabulary)


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError):
        scanner.token_ids(["a", 3], {})
    with pytest.raises(TypeError):
        scanner.token_ids(["a"], {"a": "x"})
    with pytest.raises(ValueError):
        scanner.token_ids(["a"], {"a": -2})
    with pytest.raises(TypeError):
        scanner.sentences("a", tuple, ("mr", 3))
    with pytest.raises(TypeError):
        scanner.sentences("a", int, ())


def test_counting_a_chunk_with_and_without_the_scanner_is_the_same(monkeypatch):
    texts = [*random_texts(200, seed=40), *tricky_texts(300, seed=41), "", None, "İstanbul Babylon baby"]
    fast = _text_counter_for_chunks()
    found_fast = [fast.count_many(chunk) for chunk in (texts[:50], texts[50:], texts[::-1])]
    monkeypatch.setattr(textproc, "compiled", None)
    plain = _text_counter_for_chunks()
    found_plain = [plain.count_many(chunk) for chunk in (texts[:50], texts[50:], texts[::-1])]
    for (fast_rows, fast_ids), (plain_rows, plain_ids) in zip(found_fast, found_plain, strict=True):
        assert [(n, c) for n, c, _ in fast_rows] == [(n, c) for n, c, _ in plain_rows]
        assert (fast_ids is None) == (plain_ids is None)
        if fast_ids is not None:
            assert [fast._token_of[i] for i in fast_ids] == [plain._token_of[i] for i in plain_ids]
    words = Counter(t for text in texts for t in textproc.lower_same_length(text or "").split())
    assert sum(n for rows, _ in found_fast[:2] for n, _, _ in rows) == sum(
        n for rows, _ in found_plain[:2] for n, _, _ in rows
    )
    assert words  # the chunks had tokens to count


def test_splitting_without_the_scanner_is_the_same(monkeypatch):
    texts = list(tricky_texts(300, seed=50))
    fast = [as_tuples(textproc.split_sentences(t)) for t in texts]
    monkeypatch.setattr(textproc, "compiled", None)
    assert [as_tuples(textproc.split_sentences(t)) for t in texts] == fast
    assert isinstance(lexical.TextCounter([]).count_many(["a b"])[0], list)


def test_lower_latin1_is_str_lower():
    """Every Latin-1 character, alone and among others (ASCII texts stay ASCII, others not); texts stored wider are
    left to str.lower()."""
    for code in range(256):
        assert scanner.lower_latin1(chr(code)) == chr(code).lower(), hex(code)
    rng = random.Random(12)
    alphabet = [chr(c) for c in range(256)]
    texts = ["", "ABC", "Ärzte STRASSE ß ÿ µ", "".join(alphabet), "ÀÉÎ" * 1000]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 80))) for _ in range(2000)]
    texts += ["".join(rng.choices(alphabet[:128], k=rng.randint(0, 80))) for _ in range(500)]
    for text in texts:
        lowered = scanner.lower_latin1(text)
        assert lowered == text.lower() and lowered.isascii() == text.isascii(), repr(text)
        assert hash(lowered) == hash(text.lower())
    for text in ("İstanbul", "ΣΑΣ", "𝐀B", "Ā"):
        assert scanner.lower_latin1(text) is None
    with pytest.raises(TypeError):
        scanner.lower_latin1(b"abc")


def test_lower_same_length_with_and_without_the_scanner_is_the_same(monkeypatch):
    texts = ["İstanbul Ärzte", "ΣΑΣ ΟΔΟΣ", "Straße", "ABC", "ǅ x", *tricky_texts(300, seed=60)]
    fast = list(map(textproc.lower_same_length, texts))
    monkeypatch.setattr(textproc, "compiled", None)
    assert list(map(textproc.lower_same_length, texts)) == fast
