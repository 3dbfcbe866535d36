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
