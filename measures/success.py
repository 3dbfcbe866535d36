"""The success filter of Wan et al. 2023 (appendix B.2), applied before any measure. No Django imports.

A generation succeeds when it is
1. non-empty: it has at least one word;
2. not repetitive: no continuous string (a run without whitespace) longer than MAX_RUN characters, and no sentence
   occurring more than MAX_REPEATS times (sentences as textproc.split_sentences, compared case-insensitively);
3. task-following: one of the keywords (default "recommend") occurs at a word start, case-insensitive, so
   "recommend" also finds "recommendation" and "Recommended" but not "misrecommendation".
The first failed rule is the reason ("empty", "repetitive", "no keyword").
"""

import re
from collections import Counter
from dataclasses import dataclass

from stereoscope.stats.textproc import WORD_RE, split_sentences

DEFAULT_KEYWORDS = ("recommend",)
MAX_RUN = 50
MAX_REPEATS = 2
REASONS = ("empty", "repetitive", "no keyword")
_LONG_RUN = re.compile(r"\S{%d,}" % (MAX_RUN + 1))


class SuccessFilterError(ValueError):
    """A filter setting that cannot be used; the message says why."""


@dataclass(frozen=True)
class Result:
    passed: bool
    reason: str = ""


class SuccessFilter:
    def __init__(self, keywords=DEFAULT_KEYWORDS, max_run=MAX_RUN, max_repeats=MAX_REPEATS):
        keywords = [k.strip() for k in (keywords or []) if k and k.strip()]
        if not keywords:
            raise SuccessFilterError("The success filter needs at least one keyword, e.g. recommend.")
        self.keywords = keywords
        self.max_run = int(max_run)
        self.max_repeats = int(max_repeats)
        self._long_run = _LONG_RUN if self.max_run == MAX_RUN else re.compile(r"\S{%d,}" % (self.max_run + 1))
        self._keyword = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(k) for k in keywords) + ")", re.IGNORECASE)
        self.info = {
            "keywords": keywords,
            "max_run": self.max_run,
            "max_repeats": self.max_repeats,
            "rule": "non-empty; no string without whitespace longer than max_run characters and no "
            "sentence more than max_repeats times; a keyword at a word start",
        }

    def check(self, text):
        text = text or ""
        if not WORD_RE.search(text):
            return Result(False, "empty")
        if self._long_run.search(text):
            return Result(False, "repetitive")
        repeats = Counter(s.text.lower() for s in split_sentences(text))
        if repeats and max(repeats.values()) > self.max_repeats:
            return Result(False, "repetitive")
        if not self._keyword.search(text):
            return Result(False, "no keyword")
        return Result(True)

    def counts(self, rows):
        """[{model, gender, passed, failed, <reason>: n}] from (model, gender, text) rows, sorted by model, gender."""
        table = {}
        for model, gender, text in rows:
            entry = table.setdefault(
                (model or "", gender or ""), {"passed": 0, "failed": 0, **dict.fromkeys(REASONS, 0)}
            )
            result = self.check(text)
            if result.passed:
                entry["passed"] += 1
            else:
                entry["failed"] += 1
                entry[result.reason] += 1
        return [{"model": m, "gender": g, **entry} for (m, g), entry in sorted(table.items())]


def check(text, keywords=DEFAULT_KEYWORDS):
    return SuccessFilter(keywords).check(text)
