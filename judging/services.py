"""Writes for judging (templates, human verification, weights import) and toolkit_weights for exports.
Rounds live in judging/rounds.py; reads for reports in judging/reports.py."""

import csv
import hashlib
import io
import math
import random
import re
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from stereoscope import schemas
from stereoscope.models import Membership, Role
from stereoscope.services import record_activity
from stereoscope.stats import agreement as A
from stereoscope.tables import table_text, unescape_formula
from stereoscope.untrusted import loads_json, nul_problem
from stereoscope.versioning import Versioning

from . import prompts, reports
from .models import HumanCheck, ItemWeight, JudgeTemplate, TemplateKind, VerdictStatus, VerificationRequest

WEIGHTS_FORMAT = "stereoscope-toolkit-weights"
WEIGHT_COLUMNS = [
    "toolkit",
    "toolkit_version",
    "item_number",
    "dimension",
    "target_stereotype",
    "n",
    "detected",
    "rate",
    "ci_low",
    "ci_high",
    "mean_model_rate",
    "mean_pairwise_difference",
    "consistency",
    "shrunk_rate",
    "reliability",
    "weight",
    "method",
    "flags",
]


class JudgingError(ValueError):
    """Bad input; the message says what to fix."""


class WeightsAlreadyImported(JudgingError):
    """The same weights file was imported from the same toolkit version before; `toolkit` is where it went."""

    def __init__(self, message, toolkit):
        super().__init__(message)
        self.toolkit = toolkit


# -- templates ------------------------------------------------------------------------------------------------------
def clean_labels(labels):
    """A categorical template's labels: at least two, distinct ignoring case, each at most 200 characters."""
    if isinstance(labels, str):
        labels = [part for part in labels.replace("\n", ",").split(",")]
    if not isinstance(labels, (list, tuple)):
        raise JudgingError("Labels must be a list of words.")
    labels = [str(label).strip() for label in labels if str(label).strip()]
    if len(labels) < 2:
        raise JudgingError("A categorical template needs at least two labels.")
    seen = set()
    for label in labels:
        if label.lower() in seen:
            raise JudgingError(f"The label '{label}' appears twice.")
        if len(label) > 200:
            raise JudgingError("A label is at most 200 characters.")
        seen.add(label.lower())
    return labels


def _clean_template(kind, text, scale_min, scale_max, detect_threshold, labels=None):
    if kind == TemplateKind.CATEGORICAL:
        labels = clean_labels(labels or [])
        _clean_template(TemplateKind.CUSTOM, text, 0, len(labels) - 1, 1)
        return 0, len(labels) - 1, 1, labels
    if kind not in TemplateKind.values:
        raise JudgingError(f"Unknown template kind {kind!r}; choose one of {', '.join(TemplateKind.values)}.")
    try:
        prompts.validate_template(text)
    except prompts.TemplateError as exc:
        raise JudgingError(str(exc)) from None
    try:
        scale_min, scale_max, detect_threshold = int(scale_min), int(scale_max), int(detect_threshold)
    except (TypeError, ValueError):
        raise JudgingError("Scale bounds and the detection threshold must be whole numbers.") from None
    if scale_min >= scale_max:
        raise JudgingError("The scale minimum must be below its maximum.")
    if not scale_min < detect_threshold <= scale_max:
        raise JudgingError(f"The detection threshold must be above {scale_min} and at most {scale_max}.")
    if kind in (TemplateKind.SEED_BINARY, TemplateKind.STRUCTURED_JSON) and (scale_min, scale_max) != (0, 1):
        raise JudgingError("Binary templates use the scale 0–1.")
    return scale_min, scale_max, detect_threshold, []


# Locked once a round uses it; judge templates have no children.
JUDGE_TEMPLATES = Versioning(
    JudgeTemplate,
    noun="judge template",
    error=JudgingError,
    in_use=lambda template: template.rounds.exists(),
    used_by="a round",
)


def _clean_template_fields(name, kind, text, scale_min, scale_max, detect_threshold, description, labels=None):
    name = (name or "").strip()
    if not name:
        raise JudgingError("Give the template a name.")
    scale_min, scale_max, detect_threshold, labels = _clean_template(
        kind, text, scale_min, scale_max, detect_threshold, labels
    )
    return {
        "name": name,
        "kind": kind,
        "text": text,
        "scale_min": scale_min,
        "scale_max": scale_max,
        "detect_threshold": detect_threshold,
        "description": description or "",
        "labels": labels,
    }


def create_template(
    study,
    *,
    name,
    kind,
    text,
    scale_min=0,
    scale_max=1,
    detect_threshold=1,
    description="",
    builtin_key="",
    locked=False,
    actor=None,
    labels=None,
):
    JUDGE_TEMPLATES.refuse_library(study, builtin=bool(builtin_key))
    values = _clean_template_fields(name, kind, text, scale_min, scale_max, detect_threshold, description, labels)
    with transaction.atomic():
        template = JudgeTemplate.objects.create(
            study=study,
            version=JUDGE_TEMPLATES.next_version(study, values["name"]),
            builtin_key=builtin_key,
            locked=locked,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            **values,
        )
        if not study.is_library:
            record_activity(study, actor, "created judge template", f"{template}")
    return template


def update_template(template, *, study, actor=None, **fields):
    """Edit a template; a locked one (used by a round, or built-in) gets a new version in `study` instead."""
    values = _clean_template_fields(
        *(
            fields.get(k, getattr(template, k))
            for k in ("name", "kind", "text", "scale_min", "scale_max", "detect_threshold", "description", "labels")
        )
    )
    if JUDGE_TEMPLATES.is_locked(template) or template.study_id != study.pk:
        return JUDGE_TEMPLATES.copy_into(template, study=study, actor=actor, **values), True
    if (
        values["name"] != template.name
        and JudgeTemplate.objects.filter(study=study, name=values["name"], version=template.version).exists()
    ):
        raise JudgingError("Another template has this name and version.")
    for field, value in values.items():
        setattr(template, field, value)
    template.save()
    record_activity(study, actor, "edited judge template", f"{template}")
    return template, False


@transaction.atomic
def delete_template(template, *, study, actor=None):
    """Delete an unused template of this study (a used or locked one is kept: rounds name it)."""
    if template.study_id != study.pk or JUDGE_TEMPLATES.is_locked(template):
        raise JudgingError("Only unused templates of this study can be deleted.")
    record_activity(study, actor, "deleted judge template", f"{template}")
    template.delete()


# -- toolkit weights ------------------------------------------------------------------------------------------------
def toolkit_weights(study, rounds=None, method=reports.W.DEFAULT_METHOD):
    """One row per prompt item: item number, dimension, target stereotype, n, detected, rate, ci_low, ci_high, weight,
    method (plus toolkit, version, shrinkage figures and flags). rounds: JudgeRounds or ids; None = all rounds of the
    study with verdicts."""
    if rounds is None:
        rounds = reports.rounds_of(study)
    else:
        ids = [getattr(r, "pk", r) for r in rounds]
        rounds = reports.rounds_of(study, ids) if ids else []
    data = reports.report(rounds, method=method)
    out = []
    for r in data["items"]:
        out.append(
            {
                "toolkit": r["toolkit_name"],
                "toolkit_version": r["toolkit_version"],
                "item_number": r["item_number"],
                "dimension": r["dimension"],
                "target_stereotype": r["target_stereotype"],
                "n": r["n"],
                "detected": r["detected"],
                "rate": r["rate"],
                "ci_low": r["ci_low"],
                "ci_high": r["ci_high"],
                "mean_model_rate": r["mean_model_rate"],
                "mean_pairwise_difference": r["mean_pairwise_difference"],
                "consistency": r["consistency"],
                "shrunk_rate": r["shrunk_rate"],
                "reliability": r["reliability"],
                "weight": r["weight"],
                "method": method,
                "flags": "; ".join(r["flags"]),
            }
        )
    return out


def weights_document(study, rounds=None, method=reports.W.DEFAULT_METHOD):
    """The weights export: method and inputs (toolkit version, judge panel, template version, date) and the rows."""
    round_list = reports.rounds_of(study, [getattr(r, "pk", r) for r in rounds] if rounds else None)
    rows = toolkit_weights(study, round_list, method=method)
    toolkits = sorted({(r["toolkit"], r["toolkit_version"]) for r in rows})
    return {
        "format": WEIGHTS_FORMAT,
        "format_version": 1,
        "study": study.name,
        "method": method,
        "method_description": reports.W.METHODS[method],
        "toolkits": [{"name": n, "version": v} for n, v in toolkits],
        **reports.provenance(round_list),
        "items": rows,
    }


def weights_table(study, rounds=None, method=reports.W.DEFAULT_METHOD):
    """The weights export as a table: (preamble lines naming method and inputs, columns, rows)."""
    doc = weights_document(study, rounds, method)
    preamble = [
        f"{WEIGHTS_FORMAT} v1; method: {doc['method']}; {doc['method_description']}",
        "rounds: "
        + "; ".join(
            f"{r['name']} (template {r['template']['name']} v{r['template']['version']}, "
            f"judges {', '.join(r['judge_panel'])}, policy {r['policy']}, seed {r['seed']})"
            for r in doc["rounds"]
        )
        + f"; generated {doc['generated_at']}",
    ]
    return preamble, WEIGHT_COLUMNS, doc["items"]


def weights_csv(study, rounds=None, method=reports.W.DEFAULT_METHOD):
    preamble, columns, rows = weights_table(study, rounds, method)
    return table_text(columns, rows, preamble=preamble)


WEIGHTS_SCHEMA = schemas.register(
    "judge_weights", Path(__file__).resolve().parent / "schema" / "judge_weights.schema.json"
)
CSV_NUMBER_COLUMNS = ("item_number", "weight", "rate", "ci_low", "ci_high", "n")


def _csv_cell(column, text):
    """A CSV cell as the JSON export would hold it: numbers as numbers, an empty optional cell as null; text that is
    no number stays text for the schema to refuse."""
    text = unescape_formula(text) if text is not None else ""
    if column not in CSV_NUMBER_COLUMNS:
        return text
    if not text.strip():
        return None if column not in ("item_number", "weight") else text
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    return int(number) if column == "item_number" and number.is_integer() else number


def _weights_document(text, filename):
    """The file as the weights document (the JSON export's shape); a CSV's rows become its items."""
    if text[0] in "{[" or filename.lower().endswith(".json"):
        try:
            return loads_json(text)
        except ValueError as exc:
            raise JudgingError(f"Not valid JSON: {exc}.") from None
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if not reader.fieldnames or "item_number" not in reader.fieldnames or "weight" not in reader.fieldnames:
        raise JudgingError("The CSV needs the columns item_number and weight (as in the weights export).")
    items = [{key: _csv_cell(key, value) for key, value in row.items() if key is not None} for row in reader]
    method = items[0].get("method") if items else ""
    return {"format": WEIGHTS_FORMAT, "method": method or "", "items": items}


def _weights_schema_errors(data):
    """The schema's problems, an item's named by its item number (or its row when that is what is wrong)."""
    items = data.get("items") if isinstance(data, dict) else None
    errors = []
    for problem in schemas.problems(data, WEIGHTS_SCHEMA, what="The weights file"):
        found = re.match(r"items\[(\d+)\]\.?(\w*)", problem.path)
        if not found:
            errors.append(problem.message if problem.path in ("", "format", "items") else str(problem))
            continue
        entry, field = items[int(found[1])], found[2]
        number = entry.get("item_number") if isinstance(entry, dict) else None
        if field and field != "item_number" and isinstance(number, int) and not isinstance(number, bool):
            errors.append(f"Item {number} {field}: {problem.message}")
        else:
            errors.append(f"Row {int(found[1]) + 1}: {problem.message}")
    return errors


def _weights_error(errors):
    return JudgingError(
        "The weights file has problems: "
        + " ".join(errors[:20])
        + (f" (and {len(errors) - 20} more)" if len(errors) > 20 else "")
    )


def _optional_number(value):
    return None if value is None else float(value)


def parse_weights(content, filename=""):
    """A weights file (our JSON or CSV export) -> (meta, [{"item_number", "weight", ...}]). Raises JudgingError
    listing every problem. The structure is the schema's (judging/schema/judge_weights.schema.json); code keeps
    the rule across rows (each item number once)."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise JudgingError("The file is not UTF-8 text.") from None
    text = content.strip()
    if not text:
        raise JudgingError("The file is empty.")
    if nul_problem(text):
        raise JudgingError(nul_problem(text))
    data = _weights_document(text, filename)
    errors = _weights_schema_errors(data)
    if len(errors) == 1 and not errors[0].startswith(("Row", "Item")):
        raise JudgingError(errors[0])  # no weights document at all: that one message, not a list
    if errors:
        raise _weights_error(errors)
    meta = {k: data.get(k) for k in ("method", "method_description", "toolkits", "rounds", "generated_at")}
    rows, seen = [], set()
    for i, raw in enumerate(data["items"], 1):
        number = int(str(raw["item_number"]).strip())
        if number in seen:
            errors.append(f"Row {i}: item {number} appears twice.")
            continue
        seen.add(number)
        rows.append(
            {
                "item_number": number,
                "weight": float(raw["weight"]),
                "method": str(raw.get("method") or meta.get("method") or ""),
                "rate": _optional_number(raw.get("rate")),
                "ci_low": _optional_number(raw.get("ci_low")),
                "ci_high": _optional_number(raw.get("ci_high")),
                "n": _optional_number(raw.get("n")),
                "flags": [f for f in str(raw.get("flags") or "").split("; ") if f],
            }
        )
    if errors:
        raise _weights_error(errors)
    return meta, rows


def import_weights(
    study, toolkit, content, *, filename="", new_version=True, drop_flagged=False, actor=None, allow_repeat=False
):
    """Attach imported weights to `toolkit` — by default to a new version of it (a copy for library toolkits),
    optionally without the prompts the file flags. All or nothing. Returns (toolkit version, ItemWeight count)."""
    from generation.toolkits.services import TOOLKITS, drop_items

    if toolkit.study_id != study.pk and not toolkit.study.is_library:
        raise JudgingError("Choose a toolkit of this study or of the built-in library.")
    meta, rows = parse_weights(content, filename)
    digest = hashlib.sha256(content if isinstance(content, bytes) else content.encode("utf-8")).hexdigest()
    earlier = (
        ItemWeight.objects.filter(toolkit__study=study, source__sha256=digest, source__from_toolkit_id=toolkit.pk)
        .select_related("toolkit")
        .first()
    )
    if earlier is not None and not allow_repeat:
        raise WeightsAlreadyImported(
            f"This file was already imported into {earlier.toolkit}; open that version "
            "instead (a second import would make yet another version).",
            earlier.toolkit,
        )
    numbers = set(toolkit.items.values_list("number", flat=True))
    unknown = sorted(r["item_number"] for r in rows if r["item_number"] not in numbers)
    if unknown:
        raise JudgingError(
            f"The toolkit {toolkit} has no item(s) {', '.join(map(str, unknown))}; "
            "weights belong to a version with the same item numbers."
        )
    with transaction.atomic():
        if toolkit.study.is_library:
            target = TOOLKITS.copy_into(toolkit, study=study, actor=actor)
        elif new_version:
            target = TOOLKITS.new_version(toolkit, actor=actor)
        else:
            target = toolkit
        dropped = []
        if drop_flagged:
            dropped = sorted(r["item_number"] for r in rows if r["flags"])
            if target is toolkit and dropped:
                raise JudgingError("Dropping flagged prompts needs a new toolkit version.")
            drop_items(target, dropped, actor=actor)
        items = {i.number: i for i in target.items.all()}
        source = {
            "file": filename,
            "method": meta.get("method"),
            "rounds": meta.get("rounds"),
            "toolkits": meta.get("toolkits"),
            "generated_at": meta.get("generated_at"),
            "imported_at": timezone.now().isoformat(),
            "from_toolkit": f"{toolkit.name} v{toolkit.version}",
            "from_toolkit_id": toolkit.pk,
            "sha256": digest,
        }
        ItemWeight.objects.filter(toolkit=target).delete()
        objs = [
            ItemWeight(
                toolkit=target,
                item=items[r["item_number"]],
                weight=r["weight"],
                rate=r["rate"],
                ci_low=r["ci_low"],
                ci_high=r["ci_high"],
                n=int(r["n"]) if r["n"] is not None else None,
                method=r["method"][:30],
                flags=r["flags"],
                source=source,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            for r in rows
            if r["item_number"] in items
        ]
        ItemWeight.objects.bulk_create(objs)
        record_activity(
            study,
            actor,
            "imported prompt weights into",
            f"{target}" + (f" (dropped {len(dropped)} flagged)" if dropped else ""),
        )
    return target, len(objs)


# -- human verification ---------------------------------------------------------------------------------------------
def request_verification(rnd, *, coders, sample_size, seed=0, actor=None):
    """Send a seeded random sample of the round's judged outputs to coders as yes/no questions."""
    coders = list(coders)
    if not coders:
        raise JudgingError("Choose at least one coder.")
    members = set(Membership.objects.filter(study=rnd.study, user__in=coders).values_list("user_id", flat=True))
    outsiders = [c.username for c in coders if c.pk not in members and not c.is_staff]
    if outsiders:
        raise JudgingError(f"Not members of this study: {', '.join(outsiders)}.")
    try:
        sample_size = int(sample_size)
    except (TypeError, ValueError):
        raise JudgingError("The sample size must be a whole number.") from None
    if sample_size < 1:
        raise JudgingError("The sample size must be at least 1.")
    verdicts = list(rnd.verdicts.filter(status=VerdictStatus.OK).order_by("pk").values_list("pk", flat=True))
    if not verdicts:
        raise JudgingError("The round has no judged outputs yet.")
    rng = random.Random(f"verify:{rnd.pk}:{seed}")
    chosen = rng.sample(verdicts, min(sample_size, len(verdicts)))
    with transaction.atomic():
        objs = [VerificationRequest(verdict_id=v, coder=c, requested_by=actor) for v in chosen for c in coders]
        VerificationRequest.objects.bulk_create(objs, ignore_conflicts=True)
        record_activity(rnd.study, actor, f"sent {len(chosen)} judged outputs for human verification from", rnd.name)
    return len(chosen)


def answer_check(request_obj, *, user, value, note=""):
    if request_obj.coder_id != user.pk:
        raise JudgingError("This question was sent to someone else.")
    if str(value) not in ("0", "1"):
        raise JudgingError("Answer yes (1) or no (0).")
    check, _ = HumanCheck.objects.update_or_create(
        verdict=request_obj.verdict, user=user, defaults={"value": int(value), "note": (note or "")[:2000]}
    )
    return check


def verification_pairs(rnd):
    """[(verdict, human check)] for every human answer on the round's verdicts (judge value binarised)."""
    checks = (
        HumanCheck.objects.filter(verdict__round=rnd)
        .select_related("verdict", "verdict__output", "user")
        .order_by("verdict_id", "user_id")
    )
    return [(c.verdict, c) for c in checks]


def verification_summary(rnd, bootstrap=500):
    """Judge–human agreement on the sample, with the pure agreement statistics (stereoscope.stats.agreement):
    a pooled judge × human table with observed agreement and Cohen's kappa, plus Krippendorff's alpha, Gwet's AC1
    and bootstrap intervals over verdicts with the judge as one rater and each coder as another."""
    pairs = verification_pairs(rnd)
    table = [[0, 0], [0, 0]]
    long_rows = {}
    for v, c in pairs:
        j = reports.detected(v.value, rnd.template)
        table[j][c.value] += 1
        long_rows[(v.pk, "judge")] = j
        long_rows[(v.pk, c.user.username)] = c.value
    n = len(pairs)
    summary = {
        "n": n,
        "table": table,
        "agreement": None,
        "kappa": None,
        "kappa_note": "",
        "alpha": None,
        "gwet_ac1": None,
        "ci95": {},
        "requested": VerificationRequest.objects.filter(verdict__round=rnd).count(),
    }
    if not n:
        return summary
    summary["agreement"] = (table[0][0] + table[1][1]) / n
    kappa = A.cohen_kappa_table(table)
    summary["kappa"], summary["kappa_note"] = kappa.value, kappa.note
    rm = A.from_long([(unit, rater, value) for (unit, rater), value in long_rows.items()], level="nominal")
    result = A.agreement(rm, bootstrap=bootstrap if n >= 2 else 0, seed=rnd.seed, include_pairs=False)
    summary.update(alpha=result.krippendorff_alpha, gwet_ac1=result.gwet_ac1, ci95=result.ci95, notes=result.notes)
    return summary


def pending_checks(study, user):
    return (
        VerificationRequest.objects.filter(verdict__round__study=study, coder=user)
        .exclude(verdict__human_checks__user=user)
        .select_related("verdict", "verdict__output", "verdict__round")
        .order_by("created_at", "pk")
    )


def coders_of(study):
    return (
        get_user_model()
        .objects.filter(memberships__study=study, memberships__role__in=[Role.CODER, Role.RESEARCHER, Role.ADMIN])
        .order_by("username")
    )
