"""Built-in lexicons (loaded by `manage.py load_builtin` into the read-only library study)."""

from functools import partial
from pathlib import Path

from stereoscope.builtin import BuiltinSpec

from .services import create_lexicon, validate_lexicon_data

DATA = Path(__file__).resolve().parent / "builtin_data"

# (key, version, file). Bump the version when a file changes; the new version is added beside the old.
LEXICONS = [
    ("jung2025-reference-letters", "2", "jung2025_reference_letters.json"),
    ("regard-facets", "1", "regard_facets.json"),
    ("wan2023-categories", "1", "wan2023_categories.json"),
]


def load_lexicon(study, data, key):

    return create_lexicon(study, validate_lexicon_data(data), builtin_key=key, locked=True)


def builtin_specs():
    return [
        BuiltinSpec(kind="lexicon", key=key, version=version, path=DATA / filename, load=partial(load_lexicon, key=key))
        for key, version, filename in LEXICONS
    ]
