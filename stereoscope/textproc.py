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
from typing import NamedTuple

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


class Sentence(NamedTuple):  # a tuple: hundreds of thousands are made per run
    index: int
    start: int
    end: int
    text: str


def lower_same_length(text):
    """text.lower(), but any character whose lower-case form changes length is left as it is, so offsets agree."""
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

    Rules 2/3 and the stripping are inlined here (the hot loop of a measure run); _ends_sentence is the same rule."""
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
