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


def _float_table(score_dicts):
    """The keys when every scores dict has the same string keys and float values (VADER, transformers), else None."""
    if not score_dicts:
        return ()
    if set(map(type, score_dicts)) != {dict}:
        return None
    layouts = set(map(tuple, score_dicts))
    if len(layouts) != 1:
        return None
    (keys,) = layouts
    if keys and set(map(type, keys)) != {str}:
        return None
    if set(map(type, chain.from_iterable(map(dict.values, score_dicts)))) - {float}:
        return None
    return keys


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
    keys = _float_table(score_dicts)
    if keys is None:
        header["scores"] = score_dicts
    else:
        header["keys"] = list(keys)
    scores = array("d", [_NAN if s is None else s for s in scores])
    columns = [array("I", indices), array("I", starts), array("I", ends), array("H", map(number.__getitem__, labels))]
    if any(len(c) != n for c in columns) or len(scores) != n or len(score_dicts) != n:
        raise PackError("Every column of the sentence rows needs one value per sentence.")
    head = json.dumps(header, ensure_ascii=False).encode()
    parts = [MAGIC, _LENGTH.pack(len(head)), head, *map(_to_bytes, columns), _to_bytes(scores)]
    if keys:
        parts.append(_to_bytes(array("d", chain.from_iterable(map(dict.values, score_dicts)))))
    return b"".join(parts)


def pack_many(sizes, indices, starts, ends, labels, scores, score_dicts):
    """[pack(...) of each story]: the columns hold the rows of several stories one after the other, `sizes` how
    many rows each story has. The same bytes as packing story by story; the checks and the array conversions are
    done once for all the rows (a chunk of 1,000 stories holds about 27,000)."""
    sizes = list(sizes)
    labels = [label[:100] for label in labels]
    score_dicts = list(score_dicts)
    columns = [list(indices), list(starts), list(ends), list(scores)]
    total = sum(sizes)
    keys = _float_table(score_dicts)
    if any(len(c) != total for c in (labels, score_dicts, *columns)):
        raise PackError("Every column of the sentence rows needs one value per sentence.")
    if keys is None:  # not a table of floats: story by story
        out, at = [], 0
        for n in sizes:
            out.append(pack(*(c[at : at + n] for c in (*columns[:3], labels, columns[3], score_dicts))))
            at += n
        return out
    index, start, end = (_to_bytes(array("I", c)) for c in columns[:3])
    score = _to_bytes(array("d", [_NAN if s is None else s for s in columns[3]]))
    width = len(keys)
    values = _to_bytes(array("d", chain.from_iterable(map(dict.values, score_dicts)))) if keys else b""
    tail = ', "keys": ' + json.dumps(list(keys), ensure_ascii=False) + "}"
    heads = {}
    out, at = [], 0
    for n in sizes:
        if not n:
            out.append(b"")
            continue
        mine = labels[at : at + n]
        distinct = tuple(dict.fromkeys(mine))
        head = heads.get((n, distinct))
        if head is None:  # json.dumps({"n": n, "labels": [...], "keys": [...]}) with the default separators
            head = f'{{"n": {n}, "labels": {json.dumps(list(distinct), ensure_ascii=False)}{tail}'.encode()
            heads[(n, distinct)] = head
        number = {label: i for i, label in enumerate(distinct)}
        parts = [
            MAGIC,
            _LENGTH.pack(len(head)),
            head,
            index[4 * at : 4 * (at + n)],
            start[4 * at : 4 * (at + n)],
            end[4 * at : 4 * (at + n)],
            _to_bytes(array("H", map(number.__getitem__, mine))),
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
