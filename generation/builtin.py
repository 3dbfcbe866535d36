"""Built-in toolkits (loaded by `manage.py load_builtin` into the read-only library study)."""

from functools import partial
from pathlib import Path

from stereoscope.builtin import BuiltinSpec

from .toolkits.file_format import create_toolkit, validate_data

DATA = Path(__file__).resolve().parent / "builtin_data"

# (key, version, file). Bump the version when a file changes; the new version is added beside the old.
TOOLKITS = [
    ("fang2025-phase3", "1", "fang2025_phase3.json"),
    ("fang2025-phase2-induction", "1", "fang2025_phase2_induction.json"),
    ("fang2025-phase1-occupations", "1", "fang2025_phase1_occupations.json"),
    ("jung2025-reference-letters", "1", "jung2025_reference_letters.json"),
]


def load_toolkit(study, data, key):

    return create_toolkit(study, validate_data(data), builtin_key=key, locked=True)


def builtin_specs():
    return [
        BuiltinSpec(kind="toolkit", key=key, version=version, path=DATA / filename, load=partial(load_toolkit, key=key))
        for key, version, filename in TOOLKITS
    ]
