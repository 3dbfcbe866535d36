"""Built-in instruments and persona sets (loaded by `manage.py load_builtin` into the library study)."""

from functools import partial
from pathlib import Path

from stereoscope.builtin import BuiltinSpec

DATA = Path(__file__).resolve().parent / "builtin_data"

# (key, version, file); the alternate form comes after the ASI so it can link its items to it.
INSTRUMENTS = [
    ("asi", "1", "asi.json"),
    ("asi-alternate-jung2025", "1", "asi_alternate.json"),
    ("mss-jung2025", "1", "mss_jung2025.json"),
    ("fang2025-66", "1", "fang2025_66.json"),
    ("gsdb-rupsycho", "1", "gsdb_rupsycho.json"),
]
PERSONA_SETS = [("rupsycho-personas", "1", "rupsycho_personas.json")]


def load_instrument(study, data, key):
    from .services import create_instrument

    return create_instrument(study, data, builtin_key=key, locked=True)


def load_personas(study, data, key):
    from .services import generate_personas

    return generate_personas(
        study,
        data["name"],
        data["template"],
        data["attributes"],
        description=f"{data['description']} Source: {data['source']}",
        builtin_key=key,
    )


def builtin_specs():
    specs = [
        BuiltinSpec("instrument", key, version, DATA / name, partial(load_instrument, key=key))
        for key, version, name in INSTRUMENTS
    ]
    specs += [
        BuiltinSpec("persona_set", key, version, DATA / name, partial(load_personas, key=key))
        for key, version, name in PERSONA_SETS
    ]
    return specs
