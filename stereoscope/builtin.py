"""Built-in content: versioned data files in the repo, loaded by `manage.py load_builtin`.

An app offers built-ins by defining `builtin.py` with `builtin_specs()` returning BuiltinSpec objects.
Loading is idempotent: a (kind, key, version) already loaded is skipped, and a newer version is added
beside the old one, never over it.
"""

import hashlib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from django.apps import apps
from django.db import transaction

from .models import BuiltinRecord


@dataclass(frozen=True)
class BuiltinSpec:
    kind: str  # "toolkit", "codebook", "instrument", "lexicon", ...
    key: str  # stable name, e.g. "fang-phase3"
    version: str
    path: Path  # the data file
    load: Callable  # load(study, data) -> created object (with .pk)

    def read(self):
        text = Path(self.path).read_text(encoding="utf-8")
        return text, (json.loads(text) if str(self.path).endswith(".json") else text)


def all_specs():
    specs = []
    for config in apps.get_app_configs():
        try:
            module = importlib.import_module(f"{config.name}.builtin")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.builtin":
                raise
            continue
        if module.__name__ != __name__ and hasattr(module, "builtin_specs"):
            specs.extend(module.builtin_specs())
    return specs


def load_builtins(specs=None, log=print):
    from .services import library_study

    specs = all_specs() if specs is None else specs
    created = []
    for spec in specs:
        text, data = spec.read()
        digest = hashlib.sha256(text.encode()).hexdigest()
        existing = BuiltinRecord.objects.filter(kind=spec.kind, key=spec.key, version=spec.version).first()
        if existing:
            if existing.content_hash != digest:
                log(f"warning: {spec.kind} {spec.key} v{spec.version} changed on disk; bump its version to load it")
            continue
        with transaction.atomic():
            obj = spec.load(library_study(), data)
            BuiltinRecord.objects.create(
                kind=spec.kind,
                key=spec.key,
                version=spec.version,
                content_hash=digest,
                object_id=getattr(obj, "pk", None),
            )
        created.append(spec)
        log(f"loaded {spec.kind} {spec.key} v{spec.version}")
    return created
