"""Packed sentence rows give back exactly what was packed."""

import random

import pytest

from measures.sentence_pack import PackError, SentenceRow, pack, pack_many, unpack


def columns(rows):
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[]] * 6


def test_vader_like_rows_come_back_as_they_went_in():
    rows = [
        SentenceRow(0, 0, 12, "positive", 0.4404, {"neg": 0.0, "neu": 0.56, "pos": 0.44, "compound": 0.4404}),
        SentenceRow(1, 13, 40, "negative", -0.1, {"neg": 0.2, "neu": 0.8, "pos": 0.0, "compound": -0.1}),
        SentenceRow(2, 41, 2**31, "neutral", None, {"neg": 0.1, "neu": 0.8, "pos": 0.1, "compound": 0.0}),
    ]
    packed = pack(*columns(rows))
    assert isinstance(packed, bytes) and unpack(packed) == rows
    assert unpack(memoryview(packed)) == rows  # PostgreSQL hands bytea back as a memoryview


def test_rows_whose_scores_are_not_one_table_of_floats_keep_them_as_given():
    rows = [
        SentenceRow(0, 0, 5, "Frau ≠ Mann", 1.0, {"a": 1, "b": "x"}),
        SentenceRow(1, 6, 9, "", 0.25, {}),
        SentenceRow(2, 10, 20, "x" * 100, 0.5, {"c": 0.5}),
    ]
    assert unpack(pack(*columns(rows))) == rows


def test_labels_are_cut_to_100_characters_and_no_rows_pack_to_nothing():
    (row,) = unpack(pack([0], [0], [3], ["y" * 150], [0.5], [{"p": 0.5}]))
    assert row.label == "y" * 100
    assert pack([], [], [], [], [], []) == b"" and unpack(b"") == [] and unpack(None) == []


@pytest.mark.parametrize("data", [b"rows", b"SP1\n\x05\x00\x00\x00{bad}", b"SP1\n\x02\x00\x00\x00{}"[:-1]])
def test_bytes_that_are_not_packed_rows_are_refused(data):
    with pytest.raises(PackError):
        unpack(data)


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(PackError):
        pack([0, 1], [0], [3], ["a"], [0.5], [{}])


def _random_story(rng, layout):
    labels = ["positive", "negative", "neutral", "Frau ≠ Mann", "y" * 130]
    n = rng.choice([0, 0, 1, 2, 5, 27])
    rows = []
    for i in range(n):
        if layout == "vader":
            scores = {"neg": rng.random(), "neu": rng.random(), "pos": rng.random(), "compound": rng.random()}
        elif layout == "empty":
            scores = {}
        else:
            scores = rng.choice([{"a": 1, "b": "x"}, {"c": 0.5}, {"neg": 0.5, "pos": 0.25}, {}])
        score = rng.choice([None, rng.random(), -1.5, 0.0])
        rows.append(SentenceRow(i, rng.randrange(10_000), rng.randrange(2**32), rng.choice(labels), score, scores))
    return rows


@pytest.mark.parametrize("layout", ["vader", "empty", "mixed"])
def test_pack_many_gives_the_bytes_of_packing_story_by_story(layout):
    """A chunk packed at once (scoring.packed_chunk) stores exactly the bytes each story packed alone would."""
    rng = random.Random(36)
    stories = [_random_story(rng, layout) for _ in range(300)]
    flat = [row for story in stories for row in story]
    packed = pack_many([len(s) for s in stories], *columns(flat))
    assert packed == [pack(*columns(story)) for story in stories]
    assert [unpack(p) for p in packed] == [[row._replace(label=row.label[:100]) for row in story] for story in stories]
    assert pack_many([], *columns([])) == []
    with pytest.raises(PackError):
        pack_many([len(flat) + 1], *columns(flat))


def test_pack_many_numbers_each_storys_labels_in_the_order_they_first_occur():
    """Each story numbers its own labels (the header lists them in the order they first occur there), whatever
    order the labels first occur in the chunk; whole-number and None scores, and a chunk of empty stories too."""
    stories = [
        [SentenceRow(0, 0, 3, "b", 1, {"p": 0.5}), SentenceRow(1, 4, 9, "a", None, {"p": 0.25})],
        [],
        [SentenceRow(0, 0, 2, "a", 0.5, {"p": 1.0}), SentenceRow(1, 3, 5, "c", 2, {"p": 0.0})],
        [SentenceRow(i, i, i + 1, "cba"[i % 3], -0.5, {"p": 0.5}) for i in range(7)],
    ]
    flat = [row for story in stories for row in story]
    packed = pack_many([len(s) for s in stories], *columns(flat))
    assert packed == [pack(*columns(story)) for story in stories]
    assert [unpack(p) for p in packed] == [
        [row._replace(score=row.score and float(row.score)) for row in story] for story in stories
    ]
    assert pack_many([0, 0], *columns([])) == [b"", b""]


class Text(str):
    pass


FLOAT_TABLE_CASES = [
    [],
    [{}],
    [{}, {}],
    [{"neg": 0.5, "pos": 0.25}, {"neg": 1.0, "pos": -0.0}],
    [{"neg": 0.5, "pos": 0.25}, {"pos": 1.0, "neg": 0.0}],  # another order
    [{"neg": 0.5, "pos": 0.25}, {"neg": 1.0}],  # fewer keys
    [{"neg": 0.5}, {"neg": 1.0, "pos": 0.0}],  # more keys
    [{"neg": 0.5}, {"neg": 1}],  # an int
    [{"neg": 0.5}, {"neg": True}],
    [{"neg": 0.5}, {"neg": None}],
    [{"neg": float("nan")}, {"neg": float("inf")}],
    [{"neg": 0.5}, {"pos": 0.5}],  # another key
    [{1: 0.5}, {1: 0.5}],  # not text
    [{Text("neg"): 0.5}, {"neg": 0.5}],  # a str subclass first
    [{"neg": 0.5}, {Text("neg"): 0.25}],  # and later, equal by value
    [{"neg": 0.5}, ["neg"]],
    [dict(a=0.1, b=0.2, c=0.3, d=0.4)] * 3,
]


@pytest.mark.parametrize("dicts", FLOAT_TABLE_CASES)
def test_the_compiled_float_table_checks_and_copies_as_python_does(dicts):
    from array import array

    from measures import sentence_pack

    want = sentence_pack._float_values_in_python(dicts) if dicts else ((), [])
    got = sentence_pack._float_values(dicts)
    if want is None:
        assert got is None
    else:
        assert got[0] == tuple(want[0])
        assert array("d", got[1]).tobytes() == array("d", want[1]).tobytes()  # NaN and -0.0 as they were


@pytest.mark.parametrize("layout", ["vader", "empty", "mixed"])
def test_pack_many_with_and_without_the_compiled_scanner_is_the_same(layout, monkeypatch):
    from measures import sentence_pack

    rng = random.Random(52)
    stories = [_random_story(rng, layout) for _ in range(300)]
    flat = [row for story in stories for row in story]
    sizes = [len(s) for s in stories]
    fast = pack_many(sizes, *columns(flat))
    monkeypatch.setattr(sentence_pack, "compiled", None)
    assert pack_many(sizes, *columns(flat)) == fast
    assert [pack(*columns(story)) for story in stories] == fast


def test_assemble_refuses_columns_that_do_not_fit():
    from stereoscope.stats.textproc import compiled

    with pytest.raises(ValueError):
        compiled.assemble([2], [b"{}"], (b"\0" * 4,), (4,))  # one row's bytes for two rows
    with pytest.raises(ValueError):
        compiled.assemble([1], [], (b"\0" * 4,), (4,))  # no head
    with pytest.raises(TypeError):
        compiled.assemble([1], ["{}"], (b"\0" * 4,), (4,))  # a head that is not bytes
    with pytest.raises(ValueError):
        compiled.assemble([-1], [b""], (b"",), (4,))
    with pytest.raises(ValueError):  # sizes whose total, or its bytes, would not fit a machine integer
        compiled.assemble([2**61, 2**61], [b"{}", b"{}"], (b"",), (0,))
    with pytest.raises(ValueError):
        compiled.assemble([2**40], [b"{}"], (b"",), (2**30,))
    assert compiled.assemble([0, 1], [b"", b"{}"], (b"abcd",), (4,)) == [b"", b"SP1\n\x02\x00\x00\x00{}abcd"]
