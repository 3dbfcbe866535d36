"""Writes for lexicons (create, import, edit with versioning, exclusions, copies) and their matchers.

Lexicon data format (JSON; the built-ins use it too):
{"name", "description", "source", "count_policy": "per_entry"|"per_token",
 "categories": [{"key", "name", "direction": "male"|"female"|"none", "mode": "prefix"|"whole_word"|"substring"|"regex",
                 "language", "color", "source", "description", "words": [...]}],
 "exclusions": [{"phrase", "is_regex", "category" (a key or null), "note"}]}
"""

import re

from django.db import transaction
from django.db.models import Max, Q

from stereoscope.services import record_activity
from stereoscope.versioning import Versioning

from . import lexical
from .lexical import CategorySpec, ExclusionSpec, Matcher
from .models import Lexicon, LexiconCategory, LexiconExclusion

COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
MAX_WORDS = 5000


class LexiconDataError(ValueError):
    """Invalid lexicon data; `errors` lists every problem."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


def lexicons_for(study):
    """Lexicons a measure run in `study` may use: its own and the built-in library's."""
    return Lexicon.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def clean_category(raw, where="Category", errors=None):
    """Validate one category dict; returns the cleaned dict (errors appended to `errors`)."""
    errors = [] if errors is None else errors
    if not isinstance(raw, dict):
        errors.append(f"{where} must be an object.")
        return None
    name = str(raw.get("name") or raw.get("key") or "").strip()
    key = str(raw.get("key") or "").strip().lower() or re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not key or not KEY_RE.match(key):
        errors.append(f"{where}: key {key!r} must be lower-case letters, digits, - or _ (up to 60).")
    direction = raw.get("direction", "none") or "none"
    if direction not in lexical.DIRECTIONS:
        errors.append(f"{where} ({key}): direction must be male, female or none, not {direction!r}.")
    mode = raw.get("mode", raw.get("match_mode", "prefix")) or "prefix"
    try:
        words = lexical.normalize_words(raw.get("words", []))
    except lexical.LexiconError as exc:
        errors.append(f"{where} ({key}): {exc}")
        words = []
    if len(words) > MAX_WORDS:
        errors.append(f"{where} ({key}): at most {MAX_WORDS} entries.")
    errors.extend(f"{where} ({key}): {e}" for e in lexical.validate_category(words, mode))
    color = str(raw.get("color") or "#4c6ef5")
    if not COLOR_RE.match(color):
        errors.append(f"{where} ({key}): colour must look like #1c7ed6, not {color!r}.")
    language = str(raw.get("language", "en") or "").strip().lower()
    if len(language) > 10:
        errors.append(f"{where} ({key}): language code too long.")
    return {
        "key": key,
        "name": name or key,
        "direction": direction,
        "match_mode": mode,
        "words": words,
        "color": color,
        "language": language,
        "source": str(raw.get("source") or "")[:300],
        "description": str(raw.get("description") or ""),
    }


def validate_lexicon_data(data):
    errors = []
    if not isinstance(data, dict):
        raise LexiconDataError(["A lexicon must be a JSON object with a name and categories."])
    name = str(data.get("name") or "").strip()
    if not name:
        errors.append("The lexicon needs a name.")
    policy = data.get("count_policy", "per_token")
    if policy not in lexical.COUNT_POLICIES:
        errors.append(f"count_policy must be per_entry or per_token, not {policy!r}.")
    raw_categories = data.get("categories")
    if not isinstance(raw_categories, list) or not raw_categories:
        errors.append("The lexicon needs a list of categories.")
        raw_categories = []
    categories = [clean_category(c, f"Category {i}", errors) for i, c in enumerate(raw_categories, 1)]
    keys = [c["key"] for c in categories if c]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        errors.append(f"Category keys must be unique: {', '.join(dupes)}.")
    exclusions = []
    raw_exclusions = data.get("exclusions") or []
    if not isinstance(raw_exclusions, list):
        errors.append("exclusions must be a list of {phrase, is_regex, category, note} objects.")
        raw_exclusions = []
    for i, raw in enumerate(raw_exclusions, 1):
        if not isinstance(raw, dict) or not str(raw.get("phrase") or "").strip():
            errors.append(f"Exclusion {i} needs a phrase.")
            continue
        ex = {
            "phrase": str(raw["phrase"]).strip()[:300],
            "is_regex": bool(raw.get("is_regex")),
            "category": raw.get("category") or None,
            "note": str(raw.get("note") or "")[:300],
        }
        if ex["category"] is not None and ex["category"] not in keys:
            errors.append(f"Exclusion {i} names an unknown category {ex['category']!r}.")
        if ex["is_regex"]:
            try:
                re.compile(ex["phrase"])
            except re.error as exc:
                errors.append(f"Exclusion {i}: {ex['phrase']!r} is not a valid regular expression: {exc}.")
        exclusions.append(ex)
    if errors:
        raise LexiconDataError(errors)
    return {
        "name": name[:200],
        "description": str(data.get("description") or ""),
        "source": str(data.get("source") or "")[:300],
        "count_policy": policy,
        "categories": categories,
        "exclusions": exclusions,
    }


@transaction.atomic
def create_lexicon(study, data, *, actor=None, builtin_key="", locked=False, parent=None, version=None):
    """Create a lexicon from validated data (see validate_lexicon_data)."""
    LEXICONS.refuse_library(study, builtin=bool(builtin_key))
    lexicon = Lexicon.objects.create(
        study=study,
        name=data["name"],
        version=version or LEXICONS.next_version(study, data["name"]),
        parent=parent,
        description=data["description"],
        source=data["source"],
        count_policy=data["count_policy"],
        builtin_key=builtin_key,
        locked=locked,
        created_by=actor,
    )
    _create_categories(lexicon, data, actor=actor)
    if actor is not None:
        record_activity(study, actor, "created lexicon", str(lexicon))
    return lexicon


def lexicon_data(lexicon):
    """The lexicon in the import/export format."""
    cats = list(lexicon.categories.all())
    keys = {c.pk: c.key for c in cats}
    return {
        "name": lexicon.name,
        "version": lexicon.version,
        "description": lexicon.description,
        "source": lexicon.source,
        "count_policy": lexicon.count_policy,
        "categories": [
            {
                "key": c.key,
                "name": c.name,
                "direction": c.direction,
                "mode": c.match_mode,
                "language": c.language,
                "color": c.color,
                "source": c.source,
                "description": c.description,
                "words": list(c.words),
            }
            for c in cats
        ],
        "exclusions": [
            {"phrase": e.phrase, "is_regex": e.is_regex, "category": keys.get(e.category_id), "note": e.note}
            for e in lexicon.exclusions.all()
        ],
    }


def _create_categories(lexicon, data, *, actor=None):
    """Save validated categories and exclusions into `lexicon`."""
    by_key = {}
    for order, cat in enumerate(data["categories"]):
        by_key[cat["key"]] = LexiconCategory.objects.create(lexicon=lexicon, order=order, **cat)
    for ex in data["exclusions"]:
        LexiconExclusion.objects.create(
            lexicon=lexicon,
            category=by_key.get(ex["category"]),
            phrase=ex["phrase"],
            is_regex=ex["is_regex"],
            note=ex["note"],
            created_by=actor,
        )


def _copy_categories(lexicon, copy, *, actor=None):
    """A lexicon version's children: its categories and exclusions."""
    _create_categories(copy, validate_lexicon_data(lexicon_data(lexicon)), actor=actor)


def _refuse(message):
    return LexiconDataError([message])


# Locked when a measure run uses it (measures/scoring.py locks it as the run is created).
LEXICONS = Versioning(Lexicon, noun="lexicon", error=_refuse, copy_children=_copy_categories)


def _same_category(lexicon, category):
    return category if category.lexicon_id == lexicon.pk else lexicon.categories.get(key=category.key)


@transaction.atomic
def save_category(lexicon, data, *, category=None, actor=None):
    """Create or update a category from form/API data; returns (category, new_version_created)."""
    errors = []
    cleaned = clean_category(data, "Category", errors)
    if errors:
        raise LexiconDataError(errors)
    target, created = LEXICONS.writable(lexicon, actor=actor)
    existing = _same_category(target, category) if category else None
    clash = target.categories.filter(key=cleaned["key"])
    if existing:
        clash = clash.exclude(pk=existing.pk)
    if clash.exists():
        raise LexiconDataError([f"Another category already has the key {cleaned['key']!r}."])
    if existing:
        for field, value in cleaned.items():
            setattr(existing, field, value)
        existing.save()
        cat = existing
    else:
        order = (target.categories.aggregate(o=Max("order"))["o"] or 0) + 1
        cat = LexiconCategory.objects.create(lexicon=target, order=order, **cleaned)
    record_activity(target.study, actor, "edited lexicon category", f"{target}: {cat.name}")
    return cat, created


@transaction.atomic
def delete_category(category, *, actor=None):
    target, created = LEXICONS.writable(category.lexicon, actor=actor)
    _same_category(target, category).delete()
    record_activity(target.study, actor, "deleted lexicon category", f"{target}: {category.name}")
    return target


@transaction.atomic
def add_exclusion(lexicon, *, phrase, is_regex=False, category=None, note="", actor=None):
    phrase = (phrase or "").strip()
    if not phrase:
        raise LexiconDataError(["An exclusion needs a phrase."])
    if len(phrase) > 300:
        raise LexiconDataError(["An exclusion phrase has at most 300 characters."])
    if is_regex:
        try:
            re.compile(phrase)
        except re.error as exc:
            raise LexiconDataError([f"{phrase!r} is not a valid regular expression: {exc}."]) from None
    if category is not None and category.lexicon_id != lexicon.pk:
        raise LexiconDataError(["That category belongs to another lexicon."])
    target, created = LEXICONS.writable(lexicon, actor=actor)
    cat = _same_category(target, category) if category else None
    ex = LexiconExclusion.objects.create(
        lexicon=target, category=cat, phrase=phrase, is_regex=bool(is_regex), note=(note or "")[:300], created_by=actor
    )
    record_activity(target.study, actor, "excluded a false match", f"{target}: {phrase}")
    return ex, created


@transaction.atomic
def delete_exclusion(exclusion, *, actor=None):
    target, created = LEXICONS.writable(exclusion.lexicon, actor=actor)
    rows = target.exclusions.filter(phrase=exclusion.phrase, is_regex=exclusion.is_regex)
    rows = (
        rows.filter(category__key=exclusion.category.key)
        if exclusion.category_id
        else rows.filter(category__isnull=True)
    )
    rows.delete()
    record_activity(target.study, actor, "removed an exclusion", f"{target}: {exclusion.phrase}")
    return target


def language_applies(category_language, output_language):
    if not category_language:
        return True
    return (output_language or "en").lower()[:2] == category_language.lower()[:2]


def matcher_for(lexicon, language=None, categories=None, exclusions=None):
    """A Matcher over the lexicon's categories (keys = category ids as strings), optionally for one language."""
    categories = list(lexicon.categories.all()) if categories is None else categories
    exclusions = list(lexicon.exclusions.all()) if exclusions is None else exclusions
    used = [c for c in categories if language is None or language_applies(c.language, language)]
    specs = [CategorySpec(str(c.pk), tuple(c.words), c.match_mode, c.direction, c.name) for c in used]
    keys = [s.key for s in specs]
    ex_specs = []
    for ex in exclusions:
        if ex.category_id is not None:
            if str(ex.category_id) in keys:
                ex_specs.append(ExclusionSpec(ex.phrase, ex.is_regex, str(ex.category_id)))
        else:
            ex_specs.extend(ExclusionSpec(ex.phrase, ex.is_regex, key) for key in keys)
    return Matcher(specs, ex_specs, lexicon.count_policy)


def category_warnings(category):
    return lexical.warnings_for(category.words, category.match_mode, category.lexicon.count_policy)
