"""Tokens and sentences, with code-point offsets into the original text. No Django imports.

Words: maximal runs of letters, digits or underscores (Python's `\\w`), joined by inner hyphens or apostrophes
("well-rounded", "Kelly's", "self-confident" are one word each). `total` in the odds formulas is the number of
such words.

Sentences (one documented, deterministic rule, used by every measure):
1. A line break ends a sentence (LLM stories put headings, list items and paragraphs on their own lines).
2. Inside a line, a sentence ends after ".", "!", "?" or "…" (repeats allowed, then optional closing quotes or
   brackets) when whitespace follows and the next character is not lower-case.
3. A full stop after a known abbreviation (Mr., Mrs., Ms., Dr., Prof., St., Jr., Sr., vs., e.g., i.e., etc.,
   German z.B., Nr., bzw., ca., usw.) or after a single capital letter (initials: "J. K. Rowling") does not end one.
4. Sentences are stripped of surrounding whitespace; empty ones are dropped.
"""

import re
from itertools import accumulate, compress, count, repeat
from operator import add, getitem
from typing import NamedTuple

try:  # the compiled scanner (_textscan.c): built at install where a C compiler is; else the Python code below
    from stereoscope.stats import _textscan as compiled
except ImportError:  # pragma: no cover - a machine without a C compiler
    compiled = None

WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*")
_END_RE = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s+|$)")
ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "jr",
    "sr",
    "vs",
    "e.g",
    "i.e",
    "etc",
    "eg",
    "ie",
    "cf",
    "no",
    "fig",
    "z.b",
    "nr",
    "bzw",
    "ca",
    "usw",
    "dipl",
    "ing",
    "hr",
    "fr",
    "inc",
    "ltd",
    "co",
    "approx",
    "dept",
    "mt",
}
_ABBREVIATION_TUPLE = tuple(sorted(ABBREVIATIONS))


class Sentence(NamedTuple):  # a tuple: hundreds of thousands are made per run
    index: int
    start: int
    end: int
    text: str


def lower_same_length(text):
    """text.lower(), but any character whose lower-case form changes length is left as it is, so offsets agree.
    A Latin-1 text (no such character in it) is lower-cased by the compiled scanner's table, in one pass."""
    if compiled is not None:
        lowered = compiled.lower_latin1(text)
        if lowered is not None:
            return lowered
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def words(text):
    """The words of a text (strings, original case)."""
    return WORD_RE.findall(text or "")


def word_spans(text):
    return [(m.start(), m.end()) for m in WORD_RE.finditer(text or "")]


def word_count(text):
    return sum(1 for _ in WORD_RE.finditer(text or ""))


_ABBREV_TAIL = re.compile(r"([\w.]{1,12})$")
_SPACES = re.compile(r"\s*")
_ALNUM = re.compile(r"[^\W_]")  # a character for which str.isalnum() is true
_CLOSERS = "\"'”’»)]"
_FIRST = slice(0, 1)


def _ends_sentence(line, match):
    """Rule 2/3 for one candidate end inside a line (looks at a few characters around it only)."""
    end = _SPACES.match(line, match.end()).end()
    if end < len(line) and line[end].islower():
        return False
    punct = match.group(0)
    if punct[0] == "." and len(punct.rstrip(_CLOSERS)) == 1:
        before = _ABBREV_TAIL.search(line, max(0, match.start() - 12), match.start())
        if before:
            token = before.group(1)
            if token.lower() in ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                return False
    return True


def split_sentences(text):
    """The sentences of a text as Sentence(index, start, end, text), offsets into `text`.

    The compiled scanner applies the rules in one pass over the text; without it, _split_by_expression does. Texts
    with characters beyond the Basic Multilingual Plane take the plain rule-by-rule splitter. All give the same
    sentences (tests: test_speed_equivalence.py, test_textscan.py)."""
    text = text or ""
    if compiled is not None:
        found = compiled.sentences(text, Sentence, _ABBREVIATION_TUPLE)
        return _split_by_rules(text) if found is None else found
    return _split_by_expression(text)


def _split_by_expression(text):
    """split_sentences by one regular expression.

    One regular expression finds the accepted sentence ends (rules 1-3 written as lookarounds); the text is cut
    there and the pieces stripped, measured and filtered by C loops (map, accumulate, compress), not a Python loop
    per sentence. Texts with characters beyond the Basic Multilingual Plane take the plain
    rule-by-rule splitter; both give the same sentences (tests: test_speed_equivalence.py).
    """
    text = text or ""
    if not text.isascii() and len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text):  # beyond the BMP
        return _split_by_rules(text)
    parts = _boundaries().split(text)  # [piece, its end and the whitespace after it, piece, ..., last piece]
    pieces = list(map(add, parts[::2], parts[1::2] + [""]))
    starts = list(accumulate(map(len, pieces), initial=0))  # where each piece starts in `text`
    # Every piece but the first starts after an end's whitespace, so with its first non-space character.
    starts[0] = len(pieces[0]) - len(pieces[0].lstrip())
    stripped = list(map(str.strip, pieces))
    keep = list(map(str.isalnum, map(getitem, stripped, repeat(_FIRST))))  # most start with a letter or digit
    if not all(keep):  # the others: any letter or digit (the regex), or none (dropped)
        keep = [k or _ALNUM.search(piece) is not None for k, piece in zip(keep, stripped, strict=True)]
    kept_starts, kept = list(compress(starts, keep)), list(compress(stripped, keep))
    ends = map(add, kept_starts, map(len, kept))
    return list(map(tuple.__new__, repeat(Sentence), zip(count(), kept_starts, ends, kept)))


_BOUNDARY = None


def _char_class(predicate):
    """A regex character class of the Basic Multilingual Plane characters for which predicate(char) holds."""
    ranges, begin, prev = [], None, None
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF or not predicate(chr(code)):
            continue
        if prev is not None and code == prev + 1:
            prev = code
            continue
        if begin is not None:
            ranges.append((begin, prev))
        begin = prev = code
    if begin is not None:
        ranges.append((begin, prev))
    parts = [re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


def _boundaries():
    """Where a sentence ends: at a line break (taken with it), or after an end (rule 2) that is not an abbreviation's
    or an initial's full stop (rule 3). Built on first use (the character classes take a few milliseconds)."""
    global _BOUNDARY
    if _BOUNDARY is None:
        lower, upper = _char_class(str.islower), _char_class(str.isupper)
        by_length = {}
        for abbreviation in ABBREVIATIONS:  # ASCII: only ASCII letters lower-case to ASCII letters in them
            by_length.setdefault(len(abbreviation), []).append(
                "".join(f"[{c.upper()}{c}]" if c.isalpha() else re.escape(c) for c in abbreviation)
            )
        # The expression starts with one character class, so the engine skips quickly to the next "." "!" "?" "…"
        # or line break; lookbehinds then tell which it was, and look at the token before a single full stop.
        not_abbreviation = "".join(
            rf"(?<!(?<![\w.])(?:{'|'.join(sorted(alts))})\.)" for _, alts in sorted(by_length.items())
        )
        not_initial = rf"(?<!(?<![\w.]){upper}\.)"
        end = rf"[{re.escape(_CLOSERS)}]*+(?=\s|\Z)(?![^\S\n]*+{lower})"
        # One group: split() keeps the ends, each with the whitespace after it (a line break's pieces in between
        # would hold no letter or digit, and be dropped anyway).
        _BOUNDARY = re.compile(
            rf"([.!?…\n](?:(?<=\n)|(?<=[!?…])[.!?…]*+{end}|(?<=\.)(?:[.!?…]++|(?![.!?…]){not_abbreviation}"
            rf"{not_initial}){end})\s*+)"
        )
    return _BOUNDARY


def _split_by_rules(text):
    """split_sentences rule by rule, line by line (the plain version, for texts the expression does not cover)."""
    text = text or ""
    sentences = []
    append = sentences.append
    has_alnum = _ALNUM.search
    spaces = _SPACES.match
    abbrev_tail = _ABBREV_TAIL.search
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        if not has_alnum(line):
            continue
        n = len(line)
        start = 0
        for match in _END_RE.finditer(line):
            end = match.end()
            after = spaces(line, end).end()
            if after < n and line[after].islower():
                continue
            punct = match.group(0)
            if punct[0] == "." and len(punct.rstrip(_CLOSERS)) == 1:
                m_start = match.start()
                before = abbrev_tail(line, max(0, m_start - 12), m_start)
                if before:
                    token = before.group(1)
                    if token.lower() in ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                        continue
            chunk = line[start:end]
            stripped = chunk.strip()
            if stripped and has_alnum(stripped):
                s = line_start + start + chunk.index(stripped[0])
                append(Sentence(len(sentences), s, s + len(stripped), stripped))
            start = end
        chunk = line[start:]
        stripped = chunk.strip()
        if stripped and has_alnum(stripped):
            s = line_start + start + chunk.index(stripped[0])
            append(Sentence(len(sentences), s, s + len(stripped), stripped))
    return sentences
