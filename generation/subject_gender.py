"""The gender of an output's subject, from the best available source, with the source recorded. No Django imports.

Order of preference:
1. "slots": the prompt's slot values (a gender/sex/subject/pronoun slot, else a known given name) — the design
   of the prompt, so the most reliable.
2. "coders": the coders' gender attributions (annotation.GenderAttribution): the majority of F/M answers when more
   than half of all attributions agree; "mixed"/"unclear" answers count against a majority.
3. "pronouns": for single-subject texts, she/her/hers/herself vs he/him/his/himself (German: sie is ambiguous and
   ignored; er/ihm/ihn/sein count as male, ihr/ihre only with no male forms): at least MIN_PRONOUNS gendered pronouns
   and one gender with at least PRONOUN_SHARE of them.
Otherwise the gender is unknown ("").
"""

import re
from collections import Counter

from generation.toolkits.counterfactual import DEFAULT_NAME_PAIRS

FEMALE, MALE = "F", "M"
SOURCES = ("slots", "coders", "pronouns", "none")
MIN_PRONOUNS = 3
PRONOUN_SHARE = 0.8
GENDER_SLOT_NAMES = ("gender", "sex", "subject", "pronoun", "pronouns", "geschlecht", "person")
NAME_SLOT_NAMES = ("name", "first_name", "given_name", "candidate", "vorname")
_VALUE_WORDS = {
    FEMALE: {
        "f",
        "female",
        "woman",
        "women",
        "girl",
        "she",
        "her",
        "lady",
        "ms",
        "mrs",
        "miss",
        "mother",
        "wife",
        "daughter",
        "sister",
        "frau",
        "die frau",
        "the woman",
        "weiblich",
        "mädchen",
        "mutter",
        "feminine",
    },
    MALE: {
        "m",
        "male",
        "man",
        "men",
        "boy",
        "he",
        "him",
        "his",
        "gentleman",
        "mr",
        "father",
        "husband",
        "son",
        "brother",
        "mann",
        "der mann",
        "the man",
        "männlich",
        "junge",
        "vater",
        "masculine",
    },
}
DEFAULT_NAMES = {}
for _male, _female in DEFAULT_NAME_PAIRS:
    DEFAULT_NAMES[_male.lower()], DEFAULT_NAMES[_female.lower()] = MALE, FEMALE
_FEMALE_PRONOUNS = re.compile(r"\b(she|her|hers|herself)\b", re.IGNORECASE)
_MALE_PRONOUNS = re.compile(r"\b(he|him|his|himself)\b", re.IGNORECASE)
_DE_MALE = re.compile(r"\b(er|ihm|ihn|sein|seine|seinen|seinem|seiner|seines)\b", re.IGNORECASE)
_DE_FEMALE = re.compile(r"\b(ihr|ihre|ihren|ihrem|ihrer|ihres)\b")


def _word_gender(value):
    text = re.sub(r"[^\w\s]", "", str(value)).strip().lower()
    for gender, words in _VALUE_WORDS.items():
        if text in words:
            return gender
    tokens = set(text.split())
    hits = {g for g, words in _VALUE_WORDS.items() if tokens & {w for w in words if " " not in w and len(w) > 1}}
    return hits.pop() if len(hits) == 1 else None


def from_slots(slot_values, names=None):
    """(gender or None, detail) from an output's slot values."""
    names = {**DEFAULT_NAMES, **{k.lower(): v for k, v in (names or {}).items()}}
    values = {str(k).lower(): v for k, v in (slot_values or {}).items()}
    for key in values:
        if key in GENDER_SLOT_NAMES or any(key.startswith(n) for n in GENDER_SLOT_NAMES):
            gender = _word_gender(values[key])
            if gender:
                return gender, {"slot": key, "value": str(values[key])}
    for key, value in values.items():
        if key in NAME_SLOT_NAMES or "name" in key:
            first = str(value).strip().split(" ")[0].lower() if str(value).strip() else ""
            if first in names:
                return names[first], {"slot": key, "value": str(value), "by": "name list"}
    return None, {}


def from_attributions(answers):
    """(gender or None, detail) from coders' answers ("F", "M", "mixed", "unclear")."""
    answers = [a for a in answers if a]
    if not answers:
        return None, {}
    counts = Counter(answers)
    for gender in (FEMALE, MALE):
        if counts[gender] * 2 > len(answers):
            return gender, {"attributions": dict(counts), "n": len(answers)}
    return None, {"attributions": dict(counts), "n": len(answers), "reason": "no majority"}


_FOLDS = {"s": "\u017f", "i": "\u0130\u0131", "k": "\u212a"}  # other letters re.IGNORECASE matches (long s, ...)


def _caseless(letters):
    """A character class matching what re.IGNORECASE matches for these ASCII letters."""
    return "[" + "".join(c + c.upper() + _FOLDS.get(c, "") for c in letters) + "]"


def _caseless_word(word):
    return "".join(_caseless(c) for c in word)


S, H = _caseless("s"), _caseless("h")
# The English pronouns in one pass, matching exactly what _FEMALE_PRONOUNS and _MALE_PRONOUNS find: the match starts
# with a character class (re then scans for it in C instead of trying every position), the lookbehind is the
# opening \b, the lookahead the closing one. Group 1 or 2: female, group 3: male.
_ENGLISH_PRONOUNS = re.compile(
    f"{_caseless('sh')}(?<!\\w.)(?:(?<={S})({_caseless_word('he')})|(?<={H})(?:"
    f"({_caseless_word('er')}(?:{_caseless_word('s')}(?:{_caseless_word('elf')})?)?)|"
    f"({_caseless_word('e')}|{_caseless_word('i')}(?:{_caseless_word('m')}(?:{_caseless_word('self')})?|{S}))))"
    "(?!\\w)"
)


def english_pronoun_counts(text):
    """(female, male): how many words _FEMALE_PRONOUNS and _MALE_PRONOUNS find in the text, in one scan."""
    female = male = 0
    for match in _ENGLISH_PRONOUNS.finditer(text or ""):
        if match.lastindex == 3:
            male += 1
        else:
            female += 1
    return female, male


def from_pronouns(text, language="en"):
    """(gender or None, detail) from pronoun counts, for single-subject texts."""
    text = text or ""
    f, m = english_pronoun_counts(text)
    if language.startswith("de"):
        m += len(_DE_MALE.findall(text))
        de_f = len(_DE_FEMALE.findall(text))
        if not m:
            f += de_f
    detail = {"female_pronouns": f, "male_pronouns": m}
    total = f + m
    if total < MIN_PRONOUNS:
        return None, {**detail, "reason": f"fewer than {MIN_PRONOUNS} gendered pronouns"}
    if f / total >= PRONOUN_SHARE:
        return FEMALE, detail
    if m / total >= PRONOUN_SHARE:
        return MALE, detail
    return None, {**detail, "reason": "pronouns of both genders (not a single-subject text)"}


def resolve(slot_values=None, attributions=(), text="", names=None, language="en", use=("slots", "coders", "pronouns")):
    """(gender "F"/"M"/"", source, detail): the first source in `use` order that decides."""
    tried = {}
    for source in use:
        if source == "slots":
            gender, detail = from_slots(slot_values, names)
        elif source == "coders":
            gender, detail = from_attributions(attributions)
        elif source == "pronouns":
            gender, detail = from_pronouns(text, language)
        else:
            continue
        if gender:
            return gender, source, detail
        if detail:
            tried[source] = detail
    return "", "none", tried
