"""The sentence rows of one output measure (each sentence's offsets and the classifier's label, score and scores),
packed into one bytes value stored with the measure. No Django imports.

A measure run with a per-sentence classifier writes about 27 sentences per story: 270,500 rows for 10,000 stories.
As table rows they cost more than everything else a run writes (a multi-row INSERT each, every score printed as
decimal text); packed, they are a few array copies per story. Layout (little-endian):

    b"SP1\\n", header length (uint32), header (JSON: n, labels, keys, and "scores" when not a table of floats),
    index (uint32 × n), start (uint32 × n), end (uint32 × n), label number (uint16 × n, into header "labels"),
    score (float64 × n, NaN for none), scores (float64 × n × len(keys), row by row; only when keys are given).

`unpack` gives back exactly what `pack` was given (tests/measures/test_sentence_pack.py).
"""

import json
import math
import struct
import sys
from array import array
from itertools import chain
from typing import NamedTuple

import numpy as np

from stereoscope.stats.textproc import compiled

MAGIC = b"SP1\n"
_LENGTH = struct.Struct("<I")
_NAN = float("nan")


class SentenceRow(NamedTuple):
    index: int
    start: int
    end: int
    label: str
    score: float | None
    scores: dict


class PackError(ValueError):
    """Bytes that are not packed sentence rows."""


def _to_bytes(arr):
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def _from_bytes(code, data, offset, n):
    arr = array(code)
    end = offset + arr.itemsize * n
    if end > len(data):
        raise PackError("The packed sentence rows are cut short.")
    arr.frombytes(data[offset:end])
    if sys.byteorder != "little":
        arr.byteswap()
    return arr, end


def pack(indices, starts, ends, labels, scores, score_dicts):
    """Bytes holding the rows given column by column (equal lengths; a score may be None). b"" for no rows."""
    labels = [label[:100] for label in labels]
    n = len(labels)
    if not n:
        return b""
    score_dicts = list(score_dicts)
    distinct = list(dict.fromkeys(labels))
    number = {label: i for i, label in enumerate(distinct)}
    header = {"n": n, "labels": distinct}
    table = _float_values(score_dicts)
    if table is None:
        header["scores"] = score_dicts
    else:
        header["keys"] = list(table[0])
    scores = array("d", [_NAN if s is None else s for s in scores])
    columns = [array("I", indices), array("I", starts), array("I", ends), array("H", map(number.__getitem__, labels))]
    if any(len(c) != n for c in columns) or len(scores) != n or len(score_dicts) != n:
        raise PackError("Every column of the sentence rows needs one value per sentence.")
    head = json.dumps(header, ensure_ascii=False).encode()
    parts = [MAGIC, _LENGTH.pack(len(head)), head, *map(_to_bytes, columns), _to_bytes(scores)]
    if table is not None and table[0]:
        parts.append(_to_bytes(array("d", table[1])))
    return b"".join(parts)


def _labels(labels):
    """The labels as a list, each cut to 100 characters (only looked at one by one when one is longer)."""
    labels = list(labels)
    if any(len(label) > 100 for label in set(labels)):
        return [label[:100] for label in labels]
    return labels


def _scores(scores):
    """The scores (a list) as an array of floats, NaN for None."""
    try:
        return array("d", scores)
    except TypeError:  # a None among them
        return array("d", [_NAN if s is None else s for s in scores])


def _float_values(score_dicts):
    """(keys, every dict's values one after the other) when every scores dict has the same string keys in the same
    order and float values (VADER, transformers), else None. The compiled scanner checks and copies them without an
    object per value (its values: native float64 in a bytearray, which array("d", ...) reads as they are)."""
    if not score_dicts:
        return (), []
    if compiled is not None and sys.byteorder == "little":
        return compiled.float_table(score_dicts)
    return _float_values_in_python(score_dicts)


def _float_values_in_python(score_dicts):
    """_float_values without the compiled scanner (values: a list of floats)."""
    if set(map(type, score_dicts)) != {dict}:
        return None
    layouts = set(map(tuple, score_dicts))
    if len(layouts) != 1:
        return None
    (keys,) = layouts
    if keys and set(map(type, keys)) != {str}:
        return None
    values = list(chain.from_iterable(map(dict.values, score_dicts)))
    if set(map(type, values)) - {float}:
        return None
    return keys, values


def _story_labels(sizes, labels):
    """(each story's distinct labels in the order they first occur, each row's label numbered by them) for the
    rows of several stories: the label numbers as little-endian uint16 bytes, two a row."""
    ids = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    width, total = len(ids), len(labels)
    row_label = np.fromiter(map(ids.__getitem__, labels), dtype=np.int64, count=total)
    story = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    first = np.full(len(sizes) * width, total, dtype=np.int64)
    np.minimum.at(first, story * width + row_label, np.arange(total, dtype=np.int64))
    first = first.reshape(len(sizes), width)
    order = np.argsort(first, axis=1, kind="stable")  # a story's labels by first occurrence, absent ones last
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(width, dtype=np.int64)[None, :].repeat(len(sizes), 0), axis=1)
    numbers = rank[story, row_label].astype("<u2").tobytes()
    present = (first < total).sum(axis=1).tolist()
    names = list(ids)
    distinct = [tuple(map(names.__getitem__, row[:k])) for row, k in zip(order.tolist(), present, strict=True)]
    return distinct, numbers


def pack_many(sizes, indices, starts, ends, labels, scores, score_dicts):
    """[pack(...) of each story]: the columns hold the rows of several stories one after the other, `sizes` how
    many rows each story has. The same bytes as packing story by story; the checks and the array conversions are
    done once for all the rows (a chunk of 1,000 stories holds about 27,000), each story's labels numbered by
    array operations (_story_labels)."""
    sizes = list(sizes)
    labels = _labels(labels)
    score_dicts = list(score_dicts)
    columns = [list(indices), list(starts), list(ends)]
    scores = list(scores)
    score_array = _scores(scores)
    total = sum(sizes)
    table = _float_values(score_dicts)
    if any(len(c) != total for c in (labels, score_dicts, score_array, *columns)):
        raise PackError("Every column of the sentence rows needs one value per sentence.")
    if table is None or len(dict.fromkeys(labels)) > 0xFFFF:  # not a table of floats: story by story
        out, at = [], 0
        for n in sizes:
            out.append(pack(*(c[at : at + n] for c in (*columns, labels, scores, score_dicts))))
            at += n
        return out
    keys, values = table
    index, start, end = (_to_bytes(array("I", c)) for c in columns)
    score = _to_bytes(score_array)
    width = len(keys)
    values = _to_bytes(array("d", values)) if keys else b""
    tail = ', "keys": ' + json.dumps(list(keys), ensure_ascii=False) + "}"
    distinct, numbers = _story_labels(sizes, labels) if total else ([()] * len(sizes), b"")
    heads_of, heads = {}, []
    for n, mine in zip(sizes, distinct, strict=True):
        head = heads_of.get((n, mine)) if n else b""
        if head is None:  # json.dumps({"n": n, "labels": [...], "keys": [...]}) with the default separators
            head = f'{{"n": {n}, "labels": {json.dumps(list(mine), ensure_ascii=False)}{tail}'.encode()
            heads_of[(n, mine)] = head
        heads.append(head)
    if compiled is not None:  # each story's bytes copied together in C
        return compiled.assemble(sizes, heads, (index, start, end, numbers, score, values), (4, 4, 4, 2, 8, 8 * width))
    out, at = [], 0
    for n, head in zip(sizes, heads, strict=True):
        if not n:
            out.append(b"")
            continue
        parts = [
            MAGIC,
            _LENGTH.pack(len(head)),
            head,
            index[4 * at : 4 * (at + n)],
            start[4 * at : 4 * (at + n)],
            end[4 * at : 4 * (at + n)],
            numbers[2 * at : 2 * (at + n)],
            score[8 * at : 8 * (at + n)],
        ]
        if keys:
            parts.append(values[8 * width * at : 8 * width * (at + n)])
        out.append(b"".join(parts))
        at += n
    return out


def unpack(data: bytes | memoryview | None) -> list[SentenceRow]:
    """[SentenceRow] of packed bytes (b"" or None: no rows)."""
    data = bytes(data or b"")
    if not data:
        return []
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _LENGTH.size:
        raise PackError("Not packed sentence rows.")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    offset = len(MAGIC) + _LENGTH.size
    try:
        header = json.loads(data[offset : offset + length])
    except ValueError as exc:
        raise PackError("The header of the packed sentence rows is not JSON.") from exc
    offset += length
    if not isinstance(header, dict) or type(header.get("n")) is not int or type(header.get("labels")) is not list:
        raise PackError("The header of the packed sentence rows lacks its row count or labels.")
    n, labels = header["n"], header["labels"]
    indices, offset = _from_bytes("I", data, offset, n)
    starts, offset = _from_bytes("I", data, offset, n)
    ends, offset = _from_bytes("I", data, offset, n)
    numbers, offset = _from_bytes("H", data, offset, n)
    scores, offset = _from_bytes("d", data, offset, n)
    if "scores" in header:
        score_dicts = header["scores"]
    else:
        keys = header.get("keys") or []
        values, offset = _from_bytes("d", data, offset, n * len(keys))
        width = len(keys)
        score_dicts = [dict(zip(keys, values[i * width : (i + 1) * width], strict=True)) for i in range(n)]
    return [
        SentenceRow(i, s, e, labels[k], None if math.isnan(v) else v, d)
        for i, s, e, k, v, d in zip(indices, starts, ends, numbers, scores, score_dicts, strict=True)
    ]
