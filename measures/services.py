"""Writes for lexicons (create, import, edit with versioning, exclusions, copies) and their matchers.

Lexicon data format (JSON; the built-ins use it too):
{"name", "description", "source", "count_policy": "per_entry"|"per_token",
 "categories": [{"key", "name", "direction": "male"|"female"|"none", "mode": "prefix"|"whole_word"|"substring"|"regex",
                 "language", "color", "source", "description", "words": [...]}],
 "exclusions": [{"phrase", "is_regex", "category" (a key or null), "note"}]}
"""

import re
from pathlib import Path

from django.db import transaction
from django.db.models import Max, Q

from stereoscope import schemas
from stereoscope.services import record_activity
from stereoscope.versioning import Versioning

from . import lexical
from .lexical import CategorySpec, ExclusionSpec, Matcher, UserPattern
from .models import Lexicon, LexiconCategory, LexiconExclusion

COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
MAX_WORDS = 5000
SCHEMA = schemas.register("lexicon", Path(__file__).resolve().parent / "schema" / "lexicon.schema.json")
# A category from the lexicon editor or the API: the schema's category, on its own.
CATEGORY_SCHEMA = {"$ref": "#/$defs/category", "$defs": schemas.load(SCHEMA)["$defs"]}
# An exclusion from the review list or the API: the schema's exclusion, on its own.
EXCLUSION_SCHEMA = {"$ref": "#/$defs/exclusion", "$defs": schemas.load(SCHEMA)["$defs"]}


class LexiconDataError(ValueError):
    """Invalid lexicon data; `errors` lists every problem."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


def lexicons_for(study):
    """Lexicons a measure run in `study` may use: its own and the built-in library's."""
    return Lexicon.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def _where(path):
    """'categories[0].direction' -> 'Category 1'; an exclusion likewise."""
    found = re.match(r"(categories|exclusions)\[(\d+)\]", path)
    if not found:
        return path
    return f"{'Category' if found[1] == 'categories' else 'Exclusion'} {int(found[2]) + 1}"


def schema_errors(data, schema=SCHEMA, where="Category"):
    """The schema's problems, each said as the lexicon editor names things (`Category 2: direction must be …`)."""
    out = []
    for problem in schemas.problems(data, schema, what="The lexicon"):
        if schema is CATEGORY_SCHEMA or schema is EXCLUSION_SCHEMA:
            out.append(f"{where}: {problem.message}")
        else:
            out.append(f"{_where(problem.path)}: {problem.message}" if problem.path else problem.message)
    return out


def _name_and_key(raw, where, errors):
    """A category's name and key (derived from the name when absent); a bad key is appended to `errors`."""
    name = str(raw.get("name") or raw.get("key") or "").strip()
    key = str(raw.get("key") or "").strip().lower() or re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not key or not KEY_RE.match(key):
        errors.append(f"{where}: key {key!r} must be lower-case letters, digits, - or _ (up to 60).")
    return name, key


def clean_category(raw, where="Category", errors=None):
    """One category (already checked against the schema's category) cleaned: the key derived from the name when
    absent, the word list read and each entry checked against the match mode; problems appended to `errors`."""
    errors = [] if errors is None else errors
    name, key = _name_and_key(raw, where, errors)
    mode = raw.get("mode", raw.get("match_mode", "prefix")) or "prefix"
    try:
        words = lexical.normalize_words(raw.get("words", []))
    except lexical.LexiconError as exc:
        errors.append(f"{where} ({key}): {exc}")
        words = []
    if len(words) > MAX_WORDS:
        errors.append(f"{where} ({key}): at most {MAX_WORDS} entries.")
    errors.extend(f"{where} ({key}): {e}" for e in lexical.validate_category(words, mode))
    return {
        "key": key,
        "name": name or key,
        "direction": raw.get("direction") or "none",
        "match_mode": mode,
        "words": words,
        "color": str(raw.get("color") or "#4c6ef5"),
        "language": str(raw.get("language", "en") or "").strip().lower(),
        "source": str(raw.get("source") or "")[:300],
        "description": str(raw.get("description") or ""),
    }


def _clean_exclusion(raw, where, keys, errors):
    ex = {
        "phrase": raw["phrase"].strip(),
        "is_regex": bool(raw.get("is_regex")),
        "category": raw.get("category") or None,
        "note": str(raw.get("note") or ""),  # at most 300 characters: the schema says so
    }
    if ex["category"] is not None and ex["category"] not in keys:
        errors.append(f"{where} names an unknown category {ex['category']!r}.")
    if ex["is_regex"]:
        try:
            UserPattern(ex["phrase"])
        except UserPattern.Invalid as exc:
            errors.append(f"{where}: {ex['phrase']!r} is not a valid regular expression: {exc}.")
    return ex


def validate_lexicon_data(data):
    """A lexicon document (lexicon.schema.json) cleaned for create_lexicon; LexiconDataError lists every problem.
    The schema checks the structure; code derives keys, reads word lists and keeps the rules across categories."""
    errors = schema_errors(data)
    if not isinstance(data, dict):
        raise LexiconDataError(errors)
    bad = {p for p in (re.match(r"(Category|Exclusion) \d+", e) for e in errors) if p}
    bad_labels = {m[0] for m in bad}
    raw_categories = data.get("categories") if isinstance(data.get("categories"), list) else []
    categories, keys = [], []
    for i, raw in enumerate(raw_categories, 1):
        if f"Category {i}" not in bad_labels:
            categories.append(clean_category(raw, f"Category {i}", errors))
            keys.append(categories[-1]["key"])
        elif isinstance(raw, dict):  # its structure is reported already; its key is still checked
            keys.append(_name_and_key(raw, f"Category {i}", errors)[1])
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        errors.append(f"Category keys must be unique: {', '.join(dupes)}.")
    raw_exclusions = data.get("exclusions") if isinstance(data.get("exclusions"), list) else []
    exclusions = [
        _clean_exclusion(raw, f"Exclusion {i}", keys, errors)
        for i, raw in enumerate(raw_exclusions, 1)
        if f"Exclusion {i}" not in bad_labels
    ]
    if errors:
        raise LexiconDataError(errors)
    return {
        "name": data["name"].strip(),
        "description": str(data.get("description") or ""),
        "source": str(data.get("source") or "")[:300],
        "count_policy": data.get("count_policy", "per_token"),
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
    errors = schema_errors(data, CATEGORY_SCHEMA)
    cleaned = None if errors else clean_category(data, "Category", errors)
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
    if not isinstance(phrase, str | None) or not isinstance(note, str | None) or len(note or "") > 300:
        # a list, object or number (JSON), or a note too long for its column: the schema's message
        raise LexiconDataError(schema_errors({"phrase": phrase, "note": note}, EXCLUSION_SCHEMA, where="Exclusion"))
    phrase = (phrase or "").strip()
    if not phrase:
        raise LexiconDataError(["An exclusion needs a phrase."])
    if len(phrase) > 300:
        raise LexiconDataError(["An exclusion phrase has at most 300 characters."])
    if is_regex:
        try:
            UserPattern(phrase)
        except UserPattern.Invalid as exc:
            raise LexiconDataError([f"{phrase!r} is not a valid regular expression: {exc}."]) from None
    if category is not None and category.lexicon_id != lexicon.pk:
        raise LexiconDataError(["That category belongs to another lexicon."])
    target, created = LEXICONS.writable(lexicon, actor=actor)
    cat = _same_category(target, category) if category else None
    ex = LexiconExclusion.objects.create(
        lexicon=target, category=cat, phrase=phrase, is_regex=bool(is_regex), note=note or "", created_by=actor
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
