"""Export services: validate options, write an export bundle (streaming), and run export jobs on the one job engine
(stereoscope.jobs): a CSV/JSONL export's units are its datasets (each staged to a file of the job's own) and the
bundle that zips them; an XLSX or .qdpx export is one unit. A worker that dies mid-export leaves finished datasets
staged, and the engine's sweep hands the rest to a live worker; the final path only ever receives a whole file."""

import contextlib
import hashlib
import hmac
import io
import json
import logging
import os
import shutil
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from django.apps import apps
from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from stereoscope import jobs
from stereoscope.datasets import data_dictionary, datasets
from stereoscope.models import Study
from stereoscope.permissions import LEVELS, role_for
from stereoscope.pipeline import BackgroundWriter
from stereoscope.services import record_activity
from stereoscope.tables import CSVTableWriter, JSONLTableWriter, XLSXWorkbookWriter

from .manifest import build_manifest
from .models import DATA_FORMATS, ExportFormat, ExportJob, ExportStatus

log = logging.getLogger(__name__)
PROGRESS_EVERY = 5000  # rows between progress callbacks
PROGRESS_SECONDS = 2.0  # between a job's progress ticks (they renew its leases)
STAGED_FORMATS = ("csv", "jsonl")
BUNDLE = "bundle"  # the unit that writes the final file
TABLE_FORMATS = ("csv", "jsonl", "xlsx")
LIST_OPTIONS = {"run_ids": int, "item_numbers": int, "code_ids": int, "round_ids": int, "models": str}


class ExportError(ValueError):
    """Bad export request; the message says what to fix."""


class Document(NamedTuple):
    """A file another app writes as an export (the reports app's study report as PDF): an AppConfig's
    `export_documents()` returns {format: Document}. Exports run it as a job like any other, so a slow document is
    never made inside a web request."""

    extension: str
    content_type: str
    write: Callable[[Any, Path], None]  # write(study, path): the whole file at `path`
    problem: Callable[[], str | None] = lambda: None  # why it cannot be written here (a missing extra), or None


def documents():
    """{format: Document} of every installed app that contributes one."""
    found = {}
    for config in apps.get_app_configs():
        contribute = getattr(config, "export_documents", None)
        if contribute is not None:
            found.update(contribute())
    return found


def _document(fmt):
    """The Document of `fmt` when it is one and can be written here (else an ExportError saying why); None for the
    formats this app writes itself."""
    if fmt in DATA_FORMATS:
        return None
    document = documents().get(fmt)
    if document is None:
        raise ExportError(f"No installed app writes {ExportFormat(fmt).label}.")
    problem = document.problem()
    if problem:
        raise ExportError(problem)
    return document


def file_type(fmt):
    """(file extension, content type) of an export of format `fmt`."""
    if fmt in DATA_FORMATS:
        return ("qdpx" if fmt == "qdpx" else "zip"), "application/zip"
    document = documents().get(fmt)
    return (document.extension, document.content_type) if document else ("bin", "application/octet-stream")


def write_document(study, fmt, path, document, options, actor=None):
    """Write another app's document to `path`; its manifest (kept with the job: the file is the document alone)."""
    document.write(study, path)
    return build_manifest(
        study,
        fmt=fmt,
        datasets=[],
        options=options,
        files=[{"path": path.name.removesuffix(".part"), "bytes": path.stat().st_size, "sha256": _sha256(path)}],
        row_counts={},
        actor=actor,
    )


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
        if _has_model("annotation", "Code"):
            from annotation.selectors import study_codes

            found = set(study_codes(study, options["code_ids"]).values_list("pk", flat=True))
            missing = sorted(set(options["code_ids"]) - found)
            if missing:
                raise ExportError(f"No code with id {', '.join(map(str, missing))} in this study.")
    if options["round_ids"]:
        if _has_model("judging", "JudgeRound"):
            from judging.selectors import study_rounds

            found = {r.pk for r in study_rounds(study, options["round_ids"])}
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


def _write_table(raw, fmt, study, ds, ropts, escape, tracker):
    """Stream one dataset as CSV or JSONL into the binary file `raw`; returns {"rows", "bytes", "sha256"}."""
    hashing = _HashingWriter(raw)
    background = BackgroundWriter(hashing)  # hashing, compression and the file write run beside the formatting
    try:
        buffered = io.BufferedWriter(background, buffer_size=1 << 20)
        text = io.TextIOWrapper(buffered, encoding="utf-8", newline="")
        writer_class = CSVTableWriter if fmt == "csv" else JSONLTableWriter
        table = writer_class(text, [c.name for c in ds.columns_for(study, ropts)], escape=escape)

        def advanced(rows):
            tracker.rows += rows
            tracker.tick()

        if fmt == "csv" and ds.batches is not None and ds.extra_columns is None:
            table.write_batches(ds.batches(study, ropts), progress=advanced)
        else:
            table.write_rows(ds.rows(study, ropts), batch=PROGRESS_EVERY, progress=advanced)
        text.flush()
        buffered.flush()
        text.detach()
    except BaseException:
        with contextlib.suppress(Exception):  # the first failure is the one to report
            background.close()
        raise
    background.close()
    return {"rows": table.rows, "bytes": hashing.size, "sha256": hashing.digest.hexdigest()}


def _copy(path, member, tracker, block=1 << 22):
    with open(path, "rb") as fh:
        for data in iter(lambda: fh.read(block), b""):
            member.write(data)
            tracker.tick(force=True)


def write_table_bundle(study, fmt, path, selected, options, actor=None, progress=None, staged=None):
    """Write a ZIP with one file per dataset (CSV/JSONL) or one workbook (XLSX), data_dictionary.csv and
    manifest.json. `staged` ({dataset key: (file, {"rows", "bytes", "sha256"})}) are CSV/JSONL files written
    before (by an export job's units). Returns the manifest."""
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
            staged = staged or {}
            for ds in selected:
                tracker.dataset = ds.key
                name = f"{ds.key}.{fmt}"
                with zf.open(name, "w", force_zip64=True) as member:
                    if ds.key in staged:  # written by a job unit already: copied in, not queried again
                        part, info = staged[ds.key]
                        _copy(part, member, tracker)
                    else:
                        info = _write_table(member, fmt, study, ds, ropts, escape, tracker)
                row_counts[ds.key] = info["rows"]
                files.append({"path": name, "dataset": ds.key, **info})
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

    written = {}

    def with_manifest(counts):  # the manifest goes into the archive as its last member, in the same pass
        written["manifest"] = build_manifest(
            study,
            fmt="qdpx",
            datasets=[],
            options=options,
            files=[{"path": "project.qde"}],
            row_counts=dict(counts),
            actor=actor,
            extra={"refi_qda": QDPX_MANIFEST_NOTES},
        )
        return {"manifest.json": json.dumps(written["manifest"], indent=2, ensure_ascii=False)}

    export_qdpx(study, path, options=runtime_options(study, options), progress=progress, finish=with_manifest)
    return written["manifest"]


def write_export(study, fmt, path, *, dataset_keys=None, options=None, actor=None, progress=None, staged=None):
    """Write an export to `path` (a temporary `<path>.part` renamed into place when complete). Returns the manifest."""
    if fmt not in ExportFormat.values:
        raise ExportError(f"Unknown format {fmt!r}; choose one of {', '.join(ExportFormat.values)}.")
    options = clean_options(study, options)
    document = _document(fmt)
    path = Path(path)
    part = path.with_name(path.name + ".part")
    try:
        if document is not None:
            manifest = write_document(study, fmt, part, document, options, actor=actor)
        elif fmt == "qdpx":
            manifest = write_qdpx(study, part, options, actor=actor, progress=progress)
        else:
            selected = resolve_datasets(study, dataset_keys, user=actor)
            manifest = write_table_bundle(
                study, fmt, part, selected, options, actor=actor, progress=progress, staged=staged
            )
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return manifest


# --- jobs -------------------------------------------------------------------------------------------------


class _Cancelled(Exception):
    """Raised out of a writer when the job's cancel flag is seen; the unit's temporary file is removed."""


class ExportUnit:
    def __init__(self, key):
        self.key = key


def staging_dir(job):
    """Where an export job's units leave their finished parts until the bundle is written (then it is removed)."""
    return export_root() / f"study-{job.study_id}" / f".export-{job.pk}"


def staged_parts(job):
    """{dataset key: (file, {"rows", "bytes", "sha256"})} of the datasets this job has finished writing."""
    folder = staging_dir(job)
    found = {}
    for key in job.datasets:
        data, info = folder / f"{key}.{job.format}", folder / f"{key}.json"
        if info.exists() and data.exists():
            found[key] = (data, json.loads(info.read_text()))
    return found


def _replace_atomically(path, write):
    """Write `path` through `<path>.tmp` (fsynced, then renamed): a reader sees the whole file or none."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            result = write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return result


def stage_dataset(job, key, progress=None):
    """One unit of a CSV/JSONL export job: write one dataset to the job's staging folder. Returns its figures."""
    study = job.study
    ds = resolve_datasets(study, [key], user=job.created_by)[0]
    ropts = runtime_options(study, job.options)
    tracker = _Progress(progress, ds.count(study, ropts) if ds.count else None)
    tracker.dataset = key
    folder = staging_dir(job)
    folder.mkdir(parents=True, exist_ok=True)
    escape = job.options.get("escape_formulas", True)
    info = _replace_atomically(
        folder / f"{key}.{job.format}", lambda fh: _write_table(fh, job.format, study, ds, ropts, escape, tracker)
    )
    _replace_atomically(folder / f"{key}.json", lambda fh: fh.write(json.dumps(info).encode()))
    tracker.tick(force=True)
    return info


def job_file_name(job):
    """Fixed per job, so a bundle written again after a crash replaces its own file instead of leaving one."""
    ext, _ = file_type(job.format)
    stamp = job.created_at.strftime("%Y%m%d-%H%M%S")
    return f"{slugify(job.study.name) or 'study'}-{job.format}-{job.pk}-{stamp}.{ext}"


def write_job_bundle(job, progress=None):
    """The last unit of an export job: the final file (from the staged parts for CSV/JSONL), renamed into place."""
    file_name = job_file_name(job)
    target = export_root() / f"study-{job.study_id}" / file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    manifest = write_export(
        job.study,
        job.format,
        target,
        dataset_keys=job.datasets or None,
        options=job.options,
        actor=job.created_by,
        progress=progress,
        staged=staged_parts(job) if job.format in STAGED_FORMATS else None,
    )
    ExportJob.objects.filter(pk=job.pk).update(
        file_name=file_name, size_bytes=target.stat().st_size, sha256=_sha256(target), manifest=manifest
    )
    shutil.rmtree(staging_dir(job), ignore_errors=True)
    return file_name


class ExportJobKind(jobs.JobKind):
    """Export jobs for the engine. A unit is a dataset key (CSV/JSONL, staged) or BUNDLE (the final file); one unit
    per chunk, so several workers may write the datasets of one export at once."""

    name = "exports.job"
    model = ExportJob
    task_name = "stereoscope.run_export"  # the original name: tasks queued before the engine still run
    label = "export"
    units_label = "parts"
    error = ExportError
    chunk_size = 1

    def __init__(self):
        self.live = {}  # job id -> figures of the unit this process is writing

    def enqueue(self, job):
        from .tasks import run_export

        run_export.delay(job.pk)

    def get(self, job_id):
        return ExportJob.objects.select_related("study", "created_by").get(pk=job_id)

    def pending_keys(self, job):
        if job.file_name:
            return []
        if job.format in STAGED_FORMATS:
            staged = staged_parts(job)
            missing = [key for key in job.datasets if key not in staged]
            if missing:
                return missing
        return [BUNDLE]

    def load_units(self, job, keys):
        pending = set(self.pending_keys(ExportJob.objects.select_related("study").get(pk=job.pk)))
        return [ExportUnit(key) for key in keys if key in pending]

    def run(self, job, source, cancel_check, progress):
        stats, began = jobs.UnitStats(), time.monotonic()
        last = {"t": began}

        def tick(figures):
            self.live[job.pk] = figures
            if cancel_check():
                raise _Cancelled
            if time.monotonic() - last["t"] >= PROGRESS_SECONDS:
                last["t"] = time.monotonic()
                stats.elapsed_s = last["t"] - began
                progress(stats, 1)

        try:
            while not cancel_check():
                units = source.take()
                if not units:
                    break
                stats.total += len(units)
                for unit in units:
                    if ExportJob.objects.filter(pk=job.pk, status=ExportStatus.FAILED).exists():
                        return stats  # another worker's unit failed it
                    try:
                        if unit.key == BUNDLE:
                            write_job_bundle(self.get(job.pk), tick)
                        else:
                            stage_dataset(job, unit.key, tick)
                    except _Cancelled:
                        stats.cancelled = True
                        return stats
                    except Exception as exc:
                        log.exception("export job %s failed", job.pk)
                        message = str(exc) if isinstance(exc, ExportError) else f"{exc.__class__.__name__}: {exc}"
                        jobs.fail(self, job.pk, f"The export failed: {message}")
                        stats.failed += 1
                        return stats
                    source.finished(unit)
                    stats.succeeded += 1
                    stats.elapsed_s = time.monotonic() - began
                    progress(stats, 0)
        finally:
            self.live.pop(job.pk, None)
        stats.cancelled = stats.cancelled or cancel_check()
        return stats

    def next_pass(self, job):
        """Every dataset is staged: plan the bundle (pending_keys says BUNDLE until the file is written)."""
        return not ExportJob.objects.filter(pk=job.pk).exclude(file_name="").exists()

    def reset_failed(self, job):
        return 1 if job.status == ExportStatus.FAILED else 0

    def progress_extra(self, job_id):
        job = ExportJob.objects.select_related("study").get(pk=job_id)
        units = len(job.datasets) + 1 if job.format in STAGED_FORMATS else 1
        done = (len(staged_parts(job)) if job.format in STAGED_FORMATS else 0) + (1 if job.file_name else 0)
        live = self.live.get(job_id) or {}
        share = (live.get("rows") or 0) / live["total"] if live.get("total") else 0
        return {
            "dataset": live.get("dataset", ""),
            "rows": live.get("rows", 0),
            "total": live.get("total"),
            "parts_done": done,
            "parts": units,
            "percent": min(99, round(100 * (done + min(share, 1)) / units)),
        }

    def outcome(self, job):
        job = ExportJob.objects.get(pk=job.pk)
        if not job.file_name:
            return ExportStatus.FAILED, "The export ended without writing its file; retry it."
        rows = sum(job.manifest.get("row_counts", {}).values())
        ExportJob.objects.filter(pk=job.pk).update(progress={"rows": rows, "total": rows, "percent": 100}, message="")
        return ExportStatus.COMPLETED, ""


EXPORT_JOB = jobs.register(ExportJobKind())


def create_job(study, *, fmt, dataset_keys=None, options=None, actor=None, enqueue=True):
    """Validate everything a job needs, save it queued, and hand it to a worker (`enqueue=False`: the caller runs
    it with `execute_job`)."""
    if fmt not in ExportFormat.values:
        raise ExportError(f"Unknown format {fmt!r}; choose one of {', '.join(ExportFormat.values)}.")
    options = clean_options(study, options)
    document = _document(fmt)  # a document that cannot be written here (a missing extra) makes no job
    keys = [] if fmt == "qdpx" or document else [ds.key for ds in resolve_datasets(study, dataset_keys, user=actor)]
    if fmt == "qdpx" and not _has_model("annotation", "Coding"):
        raise ExportError("REFI-QDA export needs the annotation app.")
    with transaction.atomic():
        if document is not None:
            _refuse_a_second_document(study, fmt)
        job = ExportJob.objects.create(study=study, format=fmt, datasets=keys, options=options, created_by=actor)
        record_activity(study, actor, f"started a {fmt} export", f"export {job.pk}")
        jobs.queue(EXPORT_JOB, job, actor)
    if enqueue:
        jobs.launch(EXPORT_JOB, job)
    job.refresh_from_db()
    return job


def _refuse_a_second_document(study, fmt):
    """One document of a kind per study at a time (pressing the button again, or a script, adds no work): checked
    under the study's row lock, so two requests at once cannot both pass (call inside a transaction)."""
    Study.objects.select_for_update().filter(pk=study.pk).first()
    unfinished = (*jobs.ACTIVE, jobs.JobStatus.WAITING)
    active = ExportJob.objects.filter(study=study, format=fmt, status__in=unfinished).order_by("pk").first()
    if active is not None:
        raise ExportError(
            f"A {ExportFormat(fmt).label} is already being made (export {active.pk}); it appears on the Exports page "
            "when it is ready."
        )


def job_path(job):
    return export_root() / f"study-{job.study_id}" / job.file_name


def execute_job(job_id):
    """Work on one export job in this process (with any other workers on it). Returns the file name once this call
    saw the job complete; None when it failed, was cancelled, or there was nothing for this worker to do."""
    stats = jobs.execute(EXPORT_JOB, job_id)
    job = ExportJob.objects.get(pk=job_id)
    if stats is None or job.status != ExportStatus.COMPLETED:
        return None
    return job.file_name


def cancel_job(job, actor=None):
    jobs.cancel(EXPORT_JOB, job)
    record_activity(job.study, actor, "cancelled export", f"export {job.pk}")
    return job


def resume_job(job, actor=None):
    """Queue a stopped (cancelled, interrupted) export again: datasets already staged are not written again."""
    if job.status == ExportStatus.COMPLETED:
        raise ExportError("The export is already completed.")
    if job.status in jobs.ACTIVE and jobs.is_live(job):
        raise ExportError("The export is already running.")
    record_activity(job.study, actor, "resumed export", f"export {job.pk}")
    return jobs.resume(EXPORT_JOB, job, actor)


def retry_job(job, actor=None):
    """A failed export again, from its staged datasets on."""
    jobs.retry_failed(EXPORT_JOB, job, actor)
    record_activity(job.study, actor, "retried export", f"export {job.pk}")
    job.refresh_from_db()
    return job


def delete_job(job, actor=None):
    if job.status in jobs.ACTIVE:
        jobs.cancel(EXPORT_JOB, job)  # its workers stop at their next check instead of writing a file for nobody
    if job.file_name:
        job_path(job).unlink(missing_ok=True)
    shutil.rmtree(staging_dir(job), ignore_errors=True)
    record_activity(job.study, actor, "deleted export", f"export {job.pk}")
    job.delete()  # its chunks go with it (the engine's post_delete)
