"""Print the SHA-256 of every member of every study's exports, as JSON, for the install this process's environment
names (DATABASE_URL, STEREOSCOPE_DATA_DIR). The backup test runs it against the original install and against the
restored one: `python -m tests.exports.export_digests`.

Each export is written with the exports app's own services. An export's manifest.json says when it was written
(`created_at`), and a REFI-QDA project's <Project> element says when the project was written (its
`creationDateTime`): those two fields are left out of the digests, and every other byte of every member counts."""

import hashlib
import json
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

FORMATS = ("csv", "jsonl", "qdpx")
VOLATILE_MANIFEST_KEYS = ("created_at",)
PROJECT_WRITTEN_AT = re.compile(rb'(<Project\b[^>]*?) creationDateTime="[^"]*"')


def member_digest(name, data):
    if name == "manifest.json":
        manifest = json.loads(data)
        for key in VOLATILE_MANIFEST_KEYS:
            manifest.pop(key, None)
        data = json.dumps(manifest, sort_keys=True).encode()
    elif name == "project.qde":
        data = PROJECT_WRITTEN_AT.sub(rb"\1", data, count=1)
    return hashlib.sha256(data).hexdigest()


def export_digests():
    from exports.services import write_export
    from stereoscope.models import Study

    digests = {}
    with tempfile.TemporaryDirectory() as tmp:
        for study in Study.objects.order_by("pk"):
            for fmt in FORMATS:
                path = Path(tmp) / f"{study.pk}.{fmt}.zip"
                write_export(study, fmt, path)
                with zipfile.ZipFile(path) as zf:
                    digests[f"{study.pk}/{fmt}"] = {n: member_digest(n, zf.read(n)) for n in sorted(zf.namelist())}
    return digests


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    import django

    django.setup()
    json.dump(export_digests(), sys.stdout, sort_keys=True)
