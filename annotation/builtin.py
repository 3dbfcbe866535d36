"""Built-in codebooks (loaded by `manage.py load_builtin` into the read-only library study)."""

from functools import partial
from pathlib import Path

from stereoscope.builtin import BuiltinSpec

from .services import import_codebook

DATA = Path(__file__).resolve().parent / "builtin_data"

# (key, version, file). Bump the version when a file changes; the new version is added beside the old.
CODEBOOKS = [
    ("fang2025-phase2-codes", "1", "fang2025_phase2_codes.json"),
    ("fang2025-phase1-occupation", "2", "fang2025_phase1_occupation.json"),
    ("regard", "1", "regard_variable.json"),
]


def load_codebook(study, data, key):

    return import_codebook(study, data, builtin_key=key, locked=True)


def builtin_specs():
    return [
        BuiltinSpec(
            kind="codebook", key=key, version=version, path=DATA / filename, load=partial(load_codebook, key=key)
        )
        for key, version, filename in CODEBOOKS
    ]
