"""An app writes another app's tables only through that app's services: no `OtherAppModel.objects.create(...)`,
`bulk_create`, `get_or_create`, `update_or_create`, `bulk_update`, or `.update()` / `.delete()` on its querysets."""

import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]


def _owners():
    owner = {}
    for config in apps.get_app_configs():
        if (ROOT / config.name).is_dir():
            owner.update({model.__name__: config.name for model in config.get_models()})
    return owner


def test_no_app_writes_another_apps_tables_directly():
    owner = _owners()
    assert owner["GenerationRun"] == "generation" and owner["Membership"] == "stereoscope"
    names = "|".join(sorted(owner, key=len, reverse=True))
    write = re.compile(
        rf"\b({names})\.objects\.((create|bulk_create|get_or_create|update_or_create|bulk_update)\b"
        rf"|[^\n]*\.(update|delete)\()"
    )
    found = []
    for app in sorted(set(owner.values())):
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                found += [
                    f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
                    for match in write.finditer(line)
                    if owner[match.group(1)] != app
                ]
    assert found == []


def test_refi_import_uses_generation_and_membership_services():
    source = (ROOT / "annotation" / "refi_services.py").read_text(encoding="utf-8")
    assert "import_texts(" in source and "ensure_member(" in source
