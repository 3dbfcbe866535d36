"""Offsets and highlight segments. Offsets are code-point indices into the stored text (Python str indices).

Browsers count UTF-16 code units; an emoji outside the BMP is two units but one code point. Combining marks are
their own code points in both, so only surrogate pairs need converting.
"""

from itertools import pairwise


class OffsetError(ValueError):
    pass


def utf16_to_codepoint(text, offset):
    """The code-point index for a UTF-16 offset into `text`. An offset inside a surrogate pair is an error."""
    if offset < 0:
        raise OffsetError(f"Offset {offset} is negative.")
    units = 0
    for index, char in enumerate(text):
        if units == offset:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
        if units > offset:
            raise OffsetError(f"UTF-16 offset {offset} falls inside the character at position {index}.")
    if units == offset:
        return len(text)
    raise OffsetError(f"UTF-16 offset {offset} is past the end of the text ({units} units).")


def codepoint_to_utf16(text, index):
    if not 0 <= index <= len(text):
        raise OffsetError(f"Position {index} is outside the text (length {len(text)}).")
    return index + sum(1 for char in text[:index] if ord(char) > 0xFFFF)


def validate_span(text, start, end):
    """Check a span (None, None = the whole document). Returns (start, end, quote)."""
    if start is None and end is None:
        return None, None, ""
    if start is None or end is None:
        raise OffsetError("Give both start and end, or neither for a document-level coding.")
    if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
        raise OffsetError("Start and end must be whole numbers.")
    if start < 0 or end < 0:
        raise OffsetError("Start and end must not be negative.")
    if start >= end:
        raise OffsetError(f"The span {start}–{end} is empty; end must be greater than start.")
    if end > len(text):
        raise OffsetError(f"The span {start}–{end} runs past the end of the text ({len(text)} characters).")
    return start, end, text[start:end]


def segments(text, spans):
    """Split `text` at every span boundary. `spans` are (key, start, end); returns [(start, end, [keys...])],
    covering the whole text, keys in the order given, so overlapping spans all stay visible."""
    bounds = {0, len(text)}
    for _, start, end in spans:
        if start is not None and end is not None and 0 <= start < end <= len(text):
            bounds.add(start)
            bounds.add(end)
    points = sorted(bounds)
    starts = {}
    for key, start, end in spans:
        if start is not None and end is not None and 0 <= start < end <= len(text):
            starts.setdefault(start, []).append((key, end))
    active, result = [], []
    for left, right in pairwise(points):
        active = [(k, e) for k, e in active if e > left] + starts.get(left, [])
        result.append((left, right, [k for k, _ in active]))
    if not text:
        return []
    return result
