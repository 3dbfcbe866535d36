"""Wan et al.'s success filter for generated letters, applied before any measure. No Django imports.

A text passes when it is (1) not empty, (2) not repetitive: with 12 or more words, at least half of its word
trigrams are distinct (a model stuck in a loop repeats the same trigrams), and (3) contains one of the keywords
(case-insensitive, as a substring, so "recommend" also finds "recommendation"). The first failed check is the reason.
"""
import re
from collections import Counter

DEFAULT_KEYWORDS = ("recommend",)
MIN_WORDS_FOR_REPETITION = 12
MIN_DISTINCT_TRIGRAMS = 0.5
REASONS = ("empty", "repetitive", "no_keyword")
WORD = re.compile(r"\w+", re.UNICODE)


class FilterError(ValueError):
    pass


def clean_settings(settings):
    """{} (off) or {"keywords": [...], "min_distinct_trigrams": x}."""
    if not settings:
        return {}
    if not isinstance(settings, dict):
        raise FilterError("The success filter is an object with keywords.")
    keywords = settings.get("keywords", DEFAULT_KEYWORDS)
    if isinstance(keywords, str):
        keywords = [k for k in re.split(r"[,\n]", keywords)]
    keywords = [str(k).strip().lower() for k in keywords if str(k).strip()]
    try:
        share = float(settings.get("min_distinct_trigrams", MIN_DISTINCT_TRIGRAMS))
    except (TypeError, ValueError):
        raise FilterError("The distinct-trigram share must be a number.") from None
    if not 0 < share <= 1:
        raise FilterError("The distinct-trigram share must be above 0 and at most 1.")
    return {"keywords": keywords, "min_distinct_trigrams": share}


def is_repetitive(text, min_distinct=MIN_DISTINCT_TRIGRAMS):
    words = WORD.findall((text or "").lower())
    if len(words) < MIN_WORDS_FOR_REPETITION:
        return False
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    return len(trigrams) / (len(words) - 2) < min_distinct


def failure(text, settings):
    """None when the text passes, else the first reason it fails."""
    if not (text or "").strip():
        return "empty"
    if is_repetitive(text, settings.get("min_distinct_trigrams", MIN_DISTINCT_TRIGRAMS)):
        return "repetitive"
    keywords = settings.get("keywords") or ()
    lowered = text.lower()
    if keywords and not any(k in lowered for k in keywords):
        return "no_keyword"
    return None


def apply(items, settings):
    """(passed ids, report) for [(id, text)]; the report counts checked, passed and each reason, with failed ids."""
    report = {"checked": 0, "passed": 0, **{r: 0 for r in REASONS}, "failed": {r: [] for r in REASONS},
              "keywords": list(settings.get("keywords") or ()),
              "min_distinct_trigrams": settings.get("min_distinct_trigrams", MIN_DISTINCT_TRIGRAMS)}
    passed = []
    for pk, text in items:
        report["checked"] += 1
        reason = failure(text, settings)
        if reason is None:
            passed.append(pk)
            report["passed"] += 1
        else:
            report[reason] += 1
            report["failed"][reason].append(pk)
    return passed, report
