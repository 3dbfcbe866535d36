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
from dataclasses import dataclass

WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*")
_END_RE = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s+|$)")
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "e.g", "i.e", "etc", "eg", "ie", "cf", "no", "fig",
    "z.b", "nr", "bzw", "ca", "usw", "dipl", "ing", "hr", "fr", "inc", "ltd", "co", "approx", "dept", "mt",
}


@dataclass(frozen=True)
class Sentence:
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


def _ends_sentence(line, match):
    """Rule 2/3 for one candidate end inside a line (looks at a few characters around it only)."""
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
            if token.lower() in ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                return False
    return True


def split_sentences(text):
    """The sentences of a text as Sentence(index, start, end, text), offsets into `text`."""
    text = text or ""
    sentences = []
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        start = 0
        for match in _END_RE.finditer(line):
            if _ends_sentence(line, match):
                _add(sentences, line, line_start, start, match.end())
                start = match.end()
        _add(sentences, line, line_start, start, len(line))
    return sentences


def _add(sentences, line, line_start, start, end):
    chunk = line[start:end]
    stripped = chunk.strip()
    if not stripped or not any(c.isalnum() for c in stripped):
        return
    offset = start + (len(chunk) - len(chunk.lstrip()))
    s = line_start + offset
    sentences.append(Sentence(len(sentences), s, s + len(stripped), stripped))
