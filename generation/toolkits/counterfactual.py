"""Gender-swapped twins of prompts and contexts (counterfactual pairs). No Django imports.

Swaps gendered words and given names both ways, keeps the case of each word (he → she, He → She,
HE → SHE), and resolves the his/her ambiguity: "her" becomes "his" before a word it determines
("her desk" → "his desk") and "him" otherwise ("thanked her." → "thanked him."); "his" becomes "hers"
when it stands alone ("the book is his" → "the book is hers").

Public entry points (other apps call these; psychometrics uses them for persona/context twins):
- `swap_gender(text, name_pairs=None)`: the twin of any plain text.
- `swap_template(text, name_pairs=None)`: the twin of a prompt template; `{slot}` placeholders stay.
- `swap_values(values, name_pairs=None)`: the twin of slot values (strings, lists, dicts).
- `parse_name_pairs("Kelly=Joseph, Anna=Paul")`: user-entered name pairs → [("Kelly", "Joseph"), ...].
"""

import re

from .slots import _tokens, escape_braces

__all__ = ["swap_gender", "swap_template", "swap_values", "parse_name_pairs", "WORD_PAIRS", "DEFAULT_NAME_PAIRS"]

# Pairs are swapped both ways. "her" is handled separately (his/him); so is "his" (her/hers).
WORD_PAIRS = [
    ("he", "she"),
    ("himself", "herself"),
    ("hers", "his"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("male", "female"),
    ("males", "females"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("guy", "gal"),
    ("guys", "gals"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("dad", "mom"),
    ("dads", "moms"),
    ("daddy", "mommy"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("boyfriend", "girlfriend"),
    ("boyfriends", "girlfriends"),
    ("uncle", "aunt"),
    ("uncles", "aunts"),
    ("nephew", "niece"),
    ("nephews", "nieces"),
    ("grandfather", "grandmother"),
    ("grandson", "granddaughter"),
    ("grandpa", "grandma"),
    ("king", "queen"),
    ("prince", "princess"),
    ("lord", "lady"),
    ("sir", "madam"),
    ("mr", "ms"),
    ("mister", "miss"),
    ("masculine", "feminine"),
    ("masculinity", "femininity"),
    ("fraternity", "sorority"),
    ("manhood", "womanhood"),
    ("groom", "bride"),
    ("widower", "widow"),
    ("businessman", "businesswoman"),
    ("chairman", "chairwoman"),
    ("spokesman", "spokeswoman"),
    ("policeman", "policewoman"),
    ("salesman", "saleswoman"),
    ("actor", "actress"),
    ("waiter", "waitress"),
    ("steward", "stewardess"),
    ("hero", "heroine"),
    ("heroes", "heroines"),
]
# Given names swapped by default (Wan et al. 2023 / Jung 2025 use Kelly and Joseph).
DEFAULT_NAME_PAIRS = [
    ("Joseph", "Kelly"),
    ("John", "Mary"),
    ("James", "Emily"),
    ("Michael", "Sarah"),
    ("David", "Jennifer"),
]

# After "her", these words mean it was an object pronoun ("gave her the book", "saw her at noon").
_NOT_DETERMINED = {
    "a",
    "an",
    "the",
    "this",
    "that",
    "these",
    "those",
    "some",
    "any",
    "and",
    "or",
    "but",
    "nor",
    "so",
    "yet",
    "to",
    "at",
    "in",
    "on",
    "by",
    "for",
    "from",
    "of",
    "off",
    "with",
    "about",
    "as",
    "into",
    "over",
    "up",
    "down",
    "out",
    "back",
    "away",
    "again",
    "too",
    "very",
    "when",
    "while",
    "if",
    "because",
    "before",
    "after",
    "than",
    "then",
    "there",
    "here",
    "now",
    "once",
    "well",
    "until",
    "all",
    "is",
    "was",
    "be",
    "not",
    "no",
    "what",
    "how",
    "why",
    "who",
    "whom",
    "where",
    "which",
    "more",
    "most",
    "less",
    "anything",
    "something",
    "everything",
    "nothing",
    "his",
    "her",
    "him",
    "he",
    "she",
    "they",
    "them",
    "we",
    "you",
    "i",
    "me",
    "it",
    "its",
    "their",
    "our",
    "my",
    "your",
    "alone",
    "herself",
    "himself",
    "either",
    "neither",
    "both",
    "yesterday",
    "today",
    "tomorrow",
    "home",
    "through",
    "across",
    "around",
    "like",
    "just",
    "only",
    "even",
    "also",
    "still",
    "already",
    "instead",
    "later",
    "soon",
}


def _match_case(template, word):
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[0].isupper():
        return word[0].upper() + word[1:]
    return word


def _build_map(name_pairs):
    mapping = {}
    for a, b in WORD_PAIRS:
        mapping.setdefault(a, b)
        mapping.setdefault(b, a)
    names = {}
    for a, b in name_pairs:
        names[a.lower()] = b
        names[b.lower()] = a
    return mapping, names


def _next_word(text, end):
    match = re.match(r"[ \t]*([A-Za-z]+)", text[end:])
    return match.group(1).lower() if match else None


def swap_gender(text, name_pairs=None):
    """The gender-swapped twin of `text`. `name_pairs` [(a, b), ...] replaces the default name list."""
    mapping, names = _build_map(DEFAULT_NAME_PAIRS if name_pairs is None else name_pairs)

    def replace(match):
        word = match.group(0)
        lower = word.lower()
        if lower == "her":
            following = _next_word(text, match.end())
            swapped = "his" if following and following not in _NOT_DETERMINED else "him"
        elif lower == "his":
            following = _next_word(text, match.end())
            swapped = "her" if following and following not in _NOT_DETERMINED else "hers"
        elif lower == "him":
            swapped = "her"
        elif lower in names:
            return names[lower] if word[0].isupper() else names[lower].lower()
        elif lower in mapping:
            swapped = mapping[lower]
        else:
            return word
        return _match_case(word, swapped)

    return re.sub(r"(?<![A-Za-z'’])[A-Za-z]+(?![A-Za-z])", replace, text)


def swap_values(values, name_pairs=None):
    """Swap every string value of a slot-values mapping (lists included)."""

    def swap(value):
        if isinstance(value, str):
            return swap_gender(value, name_pairs)
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return value

    return swap(values)


def parse_name_pairs(text):
    """'Kelly=Joseph, Anna=Paul' → [("Kelly", "Joseph"), ("Anna", "Paul")]; raises ValueError with a clear message."""
    if text is not None and not isinstance(text, str):  # a list or object from a JSON body
        raise ValueError("name_pairs must be text of the form Female=Male, e.g. Kelly=Joseph, Anna=Paul.")
    pairs = []
    for chunk in re.split(r"[,;\n]+", text or ""):
        chunk = chunk.strip()
        if not chunk:
            continue
        parts = [p.strip() for p in chunk.split("=")]
        if len(parts) != 2 or not all(re.fullmatch(r"[A-Za-zÀ-ÿ'\-]+", p) for p in parts):
            raise ValueError(f"Name pair {chunk!r} is not of the form Female=Male (e.g. Kelly=Joseph).")
        pairs.append((parts[0], parts[1]))
    return pairs


def swap_template(text, name_pairs=None):
    """Swap a prompt template's literal text and leave its `{slot}` placeholders alone."""

    parts = []
    for kind, value in _tokens(text):
        parts.append(escape_braces(swap_gender(value, name_pairs)) if kind == "text" else "{" + value + "}")
    return "".join(parts)
