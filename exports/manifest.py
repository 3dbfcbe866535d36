"""manifest.json: what an export holds and how to regenerate it (study, versions, runs with every parameter,
judge templates and panels, software, date, options, row counts, file checksums)."""

import datetime
import decimal
import platform as python_platform
import subprocess
import uuid
from functools import lru_cache
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils import timezone

import stereoscope
from generation import selectors as generation
from generation.runs.providers.base import merged_params
from judging.selectors import study_rounds

MANIFEST_VERSION = 1
SKIP_FIELDS = {"lease_token", "lease_expires_at", "progress", "cancel_requested"}
PLATFORM_APPS = ["generation", "annotation", "judging", "psychometrics", "measures"]


def jsonable(value):
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def describe(obj, skip=()):
    """Every concrete field of a row (foreign keys as ids) and its many-to-many ids."""
    data = {}
    for field in obj._meta.concrete_fields:
        if field.name in SKIP_FIELDS or field.name in skip:
            continue
        data[field.attname] = jsonable(field.value_from_object(obj))
        if field.is_relation and field.name not in ("study", "created_by") and _is_versioned(field.related_model):
            target = getattr(obj, field.name)
            if target is not None:  # e.g. a library instrument: say which version it is
                data[f"{field.name}_version"] = {
                    "id": target.pk,
                    "name": target.name,
                    "version": target.version,
                    "study_id": getattr(target, "study_id", None),
                }
    for field in obj._meta.many_to_many:
        data[field.name] = sorted(getattr(obj, field.name).values_list("pk", flat=True))
    return data


def _is_versioned(model):
    names = {f.name for f in model._meta.concrete_fields}
    return "version" in names and "name" in names


def describe_endpoint(endpoint, overrides=None):

    data = describe(endpoint, skip={"study", "api_key_env"})
    data["model_identity"] = endpoint.model_identity
    data["effective_params"] = jsonable(merged_params(endpoint, overrides or {}))
    return data


@lru_cache(maxsize=1)
def git_commit():
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(settings.BASE_DIR), capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def software():
    return {
        "name": "stereoscope",
        "version": stereoscope.__version__,
        "git_commit": git_commit(),
        "django": django.get_version(),
        "python": python_platform.python_version(),
    }


def _study_models():
    """Models of the platform apps with a direct `study` foreign key."""
    for app in PLATFORM_APPS:
        if not apps.is_installed(app):
            continue
        for model in apps.get_app_config(app).get_models():
            try:
                field = model._meta.get_field("study")
            except Exception:
                continue
            if isinstance(field, models.ForeignKey):
                yield model


def versioned_objects(study):
    """Every versioned definition (toolkits, codebooks, judge templates, instruments, lexicons, ...) of the study,
    keyed by model: name, version, lock and built-in key."""
    result = {}
    for model in _study_models():
        names = {f.name for f in model._meta.concrete_fields}
        if "version" not in names or "name" not in names:
            continue
        rows = []
        for obj in model.objects.filter(study=study).order_by("pk"):
            row = {"id": obj.pk, "name": obj.name, "version": obj.version}
            for extra in ("locked", "builtin_key", "parent_id", "kind", "language"):
                if extra in names or extra.removesuffix("_id") in names:
                    row[extra] = jsonable(getattr(obj, extra, None))
            rows.append(row)
        result[model._meta.label_lower] = rows
    return result


def generation_runs(study, run_ids=None):

    runs = (
        generation.study_runs(study, run_ids or None)
        .select_related("toolkit")
        .prefetch_related("endpoints")
        .order_by("pk")
    )
    result = []
    for run in runs:
        data = describe(run, skip={"study"})
        data["toolkit"] = (
            None
            if run.toolkit is None
            else {
                "id": run.toolkit.pk,
                "name": run.toolkit.name,
                "version": run.toolkit.version,
                "study_id": run.toolkit.study_id,
                "builtin_key": run.toolkit.builtin_key,
            }
        )
        data["endpoints"] = [describe_endpoint(e, run.param_overrides) for e in run.endpoints.order_by("name")]
        data["output_counts"] = generation.run_output_counts(run)
        result.append(data)
    return result


def judge_rounds(study, round_ids=None):
    if not apps.is_installed("judging"):
        return []

    rounds = study_rounds(study, round_ids)
    result = []
    for rnd in rounds:
        data = describe(rnd, skip={"study"})
        data["template"] = describe(rnd.template, skip={"study"})
        overrides = {"temperature": rnd.temperature} if getattr(rnd, "temperature", None) is not None else {}
        data["judges"] = [describe_endpoint(e, overrides) for e in rnd.judges.order_by("name")]
        result.append(data)
    return result


def other_runs(study):
    """Runs of other apps (questionnaire runs, measure runs, ...) described field by field."""
    result = {}
    for model in _study_models():
        label = model._meta.label_lower
        if not model.__name__.endswith("Run") or label in ("generation.generationrun", "judging.judgeround"):
            continue
        result[label] = [describe(obj, skip={"study"}) for obj in model.objects.filter(study=study).order_by("pk")]
    return result


def build_manifest(study, *, fmt, datasets, options, files, row_counts, actor=None, extra=None):
    public_options = {k: v for k, v in (options or {}).items() if k != "pseudonym"}
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "created_at": timezone.now().isoformat(),
        "created_by": getattr(actor, "username", None),
        "software": software(),
        "study": {"id": study.pk, "name": study.name, "description": study.description},
        "export": {
            "format": fmt,
            "datasets": list(datasets),
            "options": jsonable(public_options),
            "formula_escaping": fmt in ("csv", "xlsx") and public_options.get("escape_formulas", True),
            "offsets": "code-point indices into the output text, line endings normalised to \\n",
        },
        "row_counts": row_counts,
        "files": files,
        "versions": versioned_objects(study),
        "generation_runs": generation_runs(study, public_options.get("run_ids")),
        "judge_rounds": judge_rounds(study, public_options.get("round_ids")),
        "other_runs": other_runs(study),
    }
    for config in apps.get_app_configs():  # apps that add to every manifest (e.g. recipes: the study's recipe)
        contribute = getattr(config, "manifest_sections", None)
        if contribute is not None:
            manifest.update(contribute(study))
    if extra:
        manifest.update(extra)
    return manifest
