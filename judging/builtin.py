"""Built-in judge templates (loaded by `manage.py load_builtin` into the read-only library study)."""

from functools import partial
from pathlib import Path

from stereoscope.builtin import BuiltinSpec

from .services import create_template

DATA = Path(__file__).resolve().parent / "builtin_data"
KEYS = ["fang2025-seed-binary", "structured-json-binary", "likert-0-4"]
CATEGORICAL_KEYS = ["regard-categorical"]
VERSION = "1"


def load_template(study, data, key):

    spec = next(t for t in data["templates"] if t["key"] == key)
    return create_template(
        study,
        name=spec["name"],
        kind=spec["kind"],
        text=spec["text"],
        scale_min=spec.get("scale_min", 0),
        scale_max=spec.get("scale_max", 1),
        detect_threshold=spec.get("detect_threshold", 1),
        description=spec["description"],
        builtin_key=key,
        locked=True,
        labels=spec.get("labels"),
    )


def builtin_specs():
    return [
        BuiltinSpec(
            kind="judge_template",
            key=key,
            version=VERSION,
            path=DATA / "judge_templates.json",
            load=partial(load_template, key=key),
        )
        for key in KEYS
    ] + [
        BuiltinSpec(
            kind="judge_template",
            key=key,
            version=VERSION,
            path=DATA / "categorical_templates.json",
            load=partial(load_template, key=key),
        )
        for key in CATEGORICAL_KEYS
    ]
