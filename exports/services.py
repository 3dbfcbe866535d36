"""Export services: validate options, write an export bundle (streaming), and run export jobs with a lease."""

import hashlib
import hmac
import io
import json
import logging
import os
import zipfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.text import slugify

from stereoscope.datasets import data_dictionary, datasets
from stereoscope.jobs import acquire_job_lease as acquire_lease
from stereoscope.permissions import LEVELS, role_for
from stereoscope.services import record_activity
from stereoscope.tables import CSVTableWriter, JSONLTableWriter, XLSXWorkbookWriter

from .manifest import build_manifest
from .models import ExportFormat, ExportJob, ExportStatus

log = logging.getLogger(__name__)
LEASE_SECONDS = 120
PROGRESS_EVERY = 5000
TABLE_FORMATS = ("csv", "jsonl", "xlsx")
LIST_OPTIONS = {"run_ids": int, "item_numbers": int, "code_ids": int, "round_ids": int, "models": str}


class ExportError(ValueError):
    """Bad export request; the message says what to fix."""


def export_root():
    root = Path(settings.EXPORT_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    return root


def pseudonymiser(study):
    """user (or pk) -> a stable id like "P-3f9a1c0b2e", the same in every export of this study."""
    key = hashlib.sha256(f"stereoscope-pseudonym:{settings.SECRET_KEY}".encode()).digest()

    def pseudonym(user):
        pk = getattr(user, "pk", user)
        digest = hmac.new(key, f"{study.pk}:{pk}".encode(), hashlib.sha256).hexdigest()
        return f"P-{digest[:10]}"

    return pseudonym


def _as_list(name, value, kind):
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        value = [v for v in value.replace(";", ",").split(",")]
    if not isinstance(value, (list, tuple)):
        raise ExportError(f"{name} must be a list.")
    result = []
    for raw in value:
        raw = raw.strip() if isinstance(raw, str) else raw
        if raw in ("", None):
            continue
        if kind is int:
            try:
                if isinstance(raw, bool):
                    raise ValueError
                result.append(int(raw))
            except (TypeError, ValueError):
                raise ExportError(f"{name}: {raw!r} is not a whole number.") from None
        else:
            result.append(str(raw))
    return result


def clean_options(study, raw=None):
    """Validate filters against the study (unknown ids are errors, not silently empty exports)."""
    from generation import selectors as generation

    raw = dict(raw or {})
    unknown = set(raw) - set(LIST_OPTIONS) - {"pseudonymise", "escape_formulas"}
    if unknown:
        raise ExportError(f"Unknown options: {', '.join(sorted(unknown))}.")
    options = {name: _as_list(name, raw.get(name), kind) for name, kind in LIST_OPTIONS.items()}
    options["pseudonymise"] = _as_bool("pseudonymise", raw.get("pseudonymise", False))
    options["escape_formulas"] = _as_bool("escape_formulas", raw.get("escape_formulas", True))
    if options["run_ids"]:
        found = set(generation.study_runs(study, options["run_ids"]).values_list("pk", flat=True))
        missing = sorted(set(options["run_ids"]) - found)
        if missing:
            raise ExportError(f"No generation run with id {', '.join(map(str, missing))} in this study.")
    if options["models"]:
        known = set(generation.study_models(study))
        missing = sorted(set(options["models"]) - known)
        if missing:
            raise ExportError(f"No outputs from model {', '.join(missing)} in this study.")
    if options["code_ids"]:
        from django.apps import apps

        if apps.is_installed("annotation") and _has_model("annotation", "Code"):
            Code = apps.get_model("annotation", "Code")
            found = set(
                Code.objects.filter(codebook__study=study, pk__in=options["code_ids"]).values_list("pk", flat=True)
            )
            missing = sorted(set(options["code_ids"]) - found)
            if missing:
                raise ExportError(f"No code with id {', '.join(map(str, missing))} in this study.")
    if options["round_ids"]:
        from django.apps import apps

        if _has_model("judging", "JudgeRound"):
            JudgeRound = apps.get_model("judging", "JudgeRound")
            found = set(
                JudgeRound.objects.filter(study=study, pk__in=options["round_ids"]).values_list("pk", flat=True)
            )
            missing = sorted(set(options["round_ids"]) - found)
            if missing:
                raise ExportError(f"No judge round with id {', '.join(map(str, missing))} in this study.")
    return options


def _as_bool(name, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("0", "false", "no", "off", ""):
        return False
    if value in (0, 1, None):
        return bool(value)
    raise ExportError(f"{name} must be true or false.")


def _has_model(app, name):
    from django.apps import apps

    try:
        apps.get_model(app, name)
        return True
    except (LookupError, ValueError):
        return False


def runtime_options(study, options):
    """Cleaned options plus the pseudonym function the datasets use."""
    return {**options, "pseudonym": pseudonymiser(study)}


def available_datasets(user, study):
    role = role_for(user, study)
    if role is None:
        return {}
    return {key: ds for key, ds in datasets().items() if LEVELS[role] >= LEVELS[ds.min_role]}


def resolve_datasets(study, keys, user=None):
    known = datasets() if user is None else available_datasets(user, study)
    keys = list(keys or [])
    if not keys:
        keys = [k for k in known]
    bad = [k for k in keys if k not in known]
    if bad:
        if user is not None and all(k in datasets() for k in bad):
            raise ExportError(f"Your role may not export: {', '.join(bad)}.")
        raise ExportError(f"Unknown dataset {', '.join(bad)}; choose from {', '.join(known) or 'none'}.")
    return [known[k] for k in dict.fromkeys(keys)]


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _Progress:
    def __init__(self, callback, total):
        self.callback, self.total, self.rows, self.dataset = callback, total, 0, ""

    def tick(self, force=False):
        if self.callback and (force or self.rows % PROGRESS_EVERY == 0):
            self.callback(
                {
                    "dataset": self.dataset,
                    "rows": self.rows,
                    "total": self.total,
                    "percent": min(99, round(100 * self.rows / self.total)) if self.total else None,
                }
            )


class _HashingWriter(io.RawIOBase):
    """Counts bytes and hashes them on their way into a zip member."""

    def __init__(self, raw):
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def writable(self):
        return True

    def write(self, data):
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)


def write_table_bundle(study, fmt, path, selected, options, actor=None, progress=None):
    """Write a ZIP with one file per dataset (CSV/JSONL) or one workbook (XLSX), data_dictionary.csv and
    manifest.json. Returns the manifest."""
    ropts = runtime_options(study, options)
    total = None
    if all(ds.count for ds in selected):
        total = sum(ds.count(study, ropts) for ds in selected)
    tracker = _Progress(progress, total)
    files, row_counts = [], {}
    escape = options.get("escape_formulas", True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True) as zf:
        if fmt == "xlsx":
            tmp = Path(f"{path}.xlsx.part")
            book = XLSXWorkbookWriter(tmp)
            try:
                for ds in selected:
                    tracker.dataset = ds.key
                    table = book.table(ds.key, [c.name for c in ds.columns_for(study, ropts)], escape=escape)
                    for row in ds.rows(study, ropts):
                        table.write(row)
                        tracker.rows += 1
                        tracker.tick()
                    row_counts[ds.key] = table.rows
                dictionary = book.table("data_dictionary", ["dataset", "column", "description"], escape=escape)
                for entry in data_dictionary(selected, study, ropts):
                    dictionary.write(entry)
                book.close()
                name = f"{slugify(study.name) or 'study'}.xlsx"
                zf.write(tmp, name)
                files.append(
                    {
                        "path": name,
                        "datasets": [ds.key for ds in selected],
                        "bytes": tmp.stat().st_size,
                        "sha256": _sha256(tmp),
                    }
                )
            finally:
                tmp.unlink(missing_ok=True)
        else:
            writer_class = CSVTableWriter if fmt == "csv" else JSONLTableWriter
            for ds in selected:
                tracker.dataset = ds.key
                name = f"{ds.key}.{fmt}"
                with zf.open(name, "w", force_zip64=True) as member:
                    hashing = _HashingWriter(member)
                    buffered = io.BufferedWriter(hashing, buffer_size=1 << 16)
                    text = io.TextIOWrapper(buffered, encoding="utf-8", newline="")
                    table = writer_class(text, [c.name for c in ds.columns_for(study, ropts)], escape=escape)
                    for row in ds.rows(study, ropts):
                        table.write(row)
                        tracker.rows += 1
                        tracker.tick()
                    text.flush()
                    buffered.flush()
                    text.detach()
                row_counts[ds.key] = table.rows
                files.append(
                    {
                        "path": name,
                        "dataset": ds.key,
                        "rows": table.rows,
                        "bytes": hashing.size,
                        "sha256": hashing.digest.hexdigest(),
                    }
                )
        dictionary_rows = data_dictionary(selected, study, ropts)
        buffer = io.StringIO()
        csv_writer = CSVTableWriter(buffer, ["dataset", "column", "description"], escape=False)
        for entry in dictionary_rows:
            csv_writer.write(entry)
        zf.writestr("data_dictionary.csv", buffer.getvalue())
        files.append(
            {
                "path": "data_dictionary.csv",
                "rows": len(dictionary_rows),
                "sha256": hashlib.sha256(buffer.getvalue().encode()).hexdigest(),
            }
        )
        manifest = build_manifest(
            study,
            fmt=fmt,
            datasets=[ds.key for ds in selected],
            options=options,
            files=files,
            row_counts=row_counts,
            actor=actor,
            extra={"data_dictionary": dictionary_rows},
        )
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    tracker.tick(force=True)
    return manifest


def write_qdpx(study, path, options, actor=None, progress=None):
    """Write the study's REFI-QDA project with manifest.json inside. Returns the manifest."""
    from annotation.refi_services import QDPX_MANIFEST_NOTES, export_qdpx

    counts = export_qdpx(study, path, options=runtime_options(study, options), progress=progress)
    manifest = build_manifest(
        study,
        fmt="qdpx",
        datasets=[],
        options=options,
        files=[{"path": "project.qde"}],
        row_counts=counts,
        actor=actor,
        extra={"refi_qda": QDPX_MANIFEST_NOTES},
    )
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    return manifest


def write_export(study, fmt, path, *, dataset_keys=None, options=None, actor=None, progress=None):
    """Write an export to `path` (a temporary `<path>.part` renamed into place when complete). Returns the manifest."""
    if fmt not in ExportFormat.values:
        raise ExportError(f"Unknown format {fmt!r}; choose one of {', '.join(ExportFormat.values)}.")
    options = clean_options(study, options)
    path = Path(path)
    part = path.with_name(path.name + ".part")
    try:
        if fmt == "qdpx":
            manifest = write_qdpx(study, part, options, actor=actor, progress=progress)
        else:
            selected = resolve_datasets(study, dataset_keys, user=actor)
            manifest = write_table_bundle(study, fmt, part, selected, options, actor=actor, progress=progress)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return manifest


# --- jobs -------------------------------------------------------------------------------------------------


def create_job(study, *, fmt, dataset_keys=None, options=None, actor=None, enqueue=True):
    """Validate everything a job needs, save it queued, and hand it to a worker."""
    if fmt not in ExportFormat.values:
        raise ExportError(f"Unknown format {fmt!r}; choose one of {', '.join(ExportFormat.values)}.")
    options = clean_options(study, options)
    keys = [] if fmt == "qdpx" else [ds.key for ds in resolve_datasets(study, dataset_keys, user=actor)]
    if fmt == "qdpx" and not _has_model("annotation", "Coding"):
        raise ExportError("REFI-QDA export needs the annotation app.")
    job = ExportJob.objects.create(study=study, format=fmt, datasets=keys, options=options, created_by=actor)
    record_activity(study, actor, f"started a {fmt} export", f"export {job.pk}")
    if enqueue:
        from .tasks import run_export

        run_export.delay(job.pk)
        job.refresh_from_db()
    return job


def _acquire_lease(job_id):
    return acquire_lease(
        ExportJob.objects.filter(status__in=[ExportStatus.QUEUED, ExportStatus.RUNNING]), job_id, LEASE_SECONDS
    )


def job_path(job):
    return export_root() / f"study-{job.study_id}" / job.file_name


def execute_job(job_id):
    """Run one export job. Idempotent: a completed job (or one another worker holds) is left alone."""
    token = _acquire_lease(job_id)
    if token is None:
        return None
    job = ExportJob.objects.select_related("study", "created_by").get(pk=job_id)
    ExportJob.objects.filter(pk=job_id).update(status=ExportStatus.RUNNING, started_at=timezone.now(), message="")
    ext = "qdpx" if job.format == "qdpx" else "zip"
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    file_name = f"{slugify(job.study.name) or 'study'}-{job.format}-{job.pk}-{stamp}.{ext}"
    target = export_root() / f"study-{job.study_id}" / file_name
    target.parent.mkdir(parents=True, exist_ok=True)

    def progress(figures):
        ExportJob.objects.filter(pk=job_id, lease_token=token).update(
            progress=figures, lease_expires_at=timezone.now() + timedelta(seconds=LEASE_SECONDS)
        )

    try:
        manifest = write_export(
            job.study,
            job.format,
            target,
            dataset_keys=job.datasets or None,
            options=job.options,
            actor=job.created_by,
            progress=progress,
        )
    except Exception as exc:
        log.exception("export job %s failed", job_id)
        message = str(exc) if isinstance(exc, ExportError) else f"The export failed: {exc.__class__.__name__}: {exc}"
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportStatus.FAILED,
            message=message[:2000],
            finished_at=timezone.now(),
            lease_token="",
            lease_expires_at=None,
        )
        return None
    row_total = sum(manifest.get("row_counts", {}).values())
    ExportJob.objects.filter(pk=job_id).update(
        status=ExportStatus.COMPLETED,
        file_name=file_name,
        size_bytes=target.stat().st_size,
        sha256=_sha256(target),
        manifest=manifest,
        finished_at=timezone.now(),
        lease_token="",
        lease_expires_at=None,
        progress={"rows": row_total, "total": row_total, "percent": 100},
    )
    return file_name


def delete_job(job, actor=None):
    if job.file_name:
        job_path(job).unlink(missing_ok=True)
    record_activity(job.study, actor, "deleted export", f"export {job.pk}")
    job.delete()
