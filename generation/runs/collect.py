"""Manual collection and output import.

Manual endpoints: a run's collection sheet (CSV/XLSX, one row per unit, keyed by `unit`) is filled in by hand from
a chat interface and imported (CSV/XLSX/JSONL/JSON), or the answers are pasted in the browser form. Outputs made
elsewhere are imported into an import run. Every file is read and validated completely first; nothing is saved
unless every row is valid, and then everything is saved in one transaction.
"""

import csv
import io
import json
import os
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import ParseError

from django.db import transaction
from django.utils import timezone

from stereoscope import schemas
from stereoscope.bulk import bulk_insert
from stereoscope.downloads import table_download, xlsx_bytes
from stereoscope.services import record_activity
from stereoscope.tables import table_text
from stereoscope.untrusted import MAX_STORY_TEXT, loads_json, nul_problem, xlsx_problem

from ..models import GenerationRun, Output, OutputStatus, Provider, ProviderCall, RunStatus
from ..toolkits.expansion import SlotError, expand_units, variant_key
from ..toolkits.services import TOOLKITS
from .services import finish, messages_for, normalize_text, toolkits_for

SHEET_COLUMNS = ["unit", "endpoint", "model", "item", "dimension", "trial", "slot_values", "prompt", "answer"]
MAX_ROWS = 200_000
# What reading a damaged workbook's parts raises: XML errors (lxml's XMLSyntaxError is a SyntaxError), a part that
# fails its CRC check or ends early, a cell value openpyxl cannot convert.
XLSX_READ_ERRORS = (ParseError, SyntaxError, ValueError, zipfile.BadZipFile, EOFError, KeyError)
MAX_TEXT = MAX_STORY_TEXT
FORMATS = ("csv", "xlsx", "jsonl", "json")
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
OUTPUT_IMPORT_SCHEMA = schemas.register("output_import", SCHEMA_DIR / "output_import.schema.json", gate=True)
ANSWERS_SCHEMA = schemas.register("answers", SCHEMA_DIR / "answers.schema.json", gate=True)


class ImportProblems(ValueError):
    """Everything wrong with a file, one message per problem (row numbers count the header as row 1)."""

    def __init__(self, problems):
        self.problems = list(problems)
        shown = self.problems[:20]
        more = f" … and {len(self.problems) - 20} more." if len(self.problems) > 20 else ""
        super().__init__(" ".join(shown) + more)


# --- reading files ---------------------------------------------------------------------------------------------


def detect_format(filename, fmt=None):
    fmt = (fmt or "").lower().strip().lstrip(".")
    if not fmt:
        fmt = os.path.splitext(filename or "")[1].lower().lstrip(".")
    if fmt == "ndjson":
        fmt = "jsonl"
    if fmt not in FORMATS:
        raise ImportProblems(
            [f"Unknown file format {fmt or '(none)'!r}: use CSV, XLSX, JSONL or JSON (or name the format)."]
        )
    return fmt


def _clean_key(key):
    return str(key if key is not None else "").strip().lower().lstrip("\ufeff")


def read_records(filename, content, fmt=None):
    """[(row number, {column: value})] from CSV, XLSX, JSONL or JSON bytes. Raises ImportProblems."""
    fmt = detect_format(filename, fmt)
    if not content:
        raise ImportProblems(["The file is empty."])
    if fmt == "xlsx":
        return _read_xlsx(content)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportProblems([f"The file is not UTF-8 text ({exc.reason} at byte {exc.start})."]) from None
    if fmt == "csv":
        return _read_csv(text)
    if fmt == "jsonl":
        return _read_jsonl(text)
    return _read_json(text)


def _read_csv(text):
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        rows = list(reader)
    except csv.Error as exc:
        raise ImportProblems([f"The CSV file cannot be parsed: {exc}."]) from None
    rows = [r for r in rows if "".join(r).strip()] if rows else []  # drop blank lines
    if not rows:
        raise ImportProblems(["The CSV file has no header row."])
    header = [_clean_key(h) for h in rows[0]]
    _check_header(header)
    records = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):
            raise ImportProblems(
                [
                    f"Row {number} has {len(row)} cells but the header has {len(header)} columns "
                    "(an unquoted comma or line break?)."
                ]
            )
        # rows shorter than the header are allowed (missing trailing cells)
        records.append((number, {h: v for h, v in zip(header, row, strict=False) if h}))
    return _limit(records)


def _read_xlsx(content):
    from openpyxl import load_workbook  # lazy: heavy library, loaded on first use

    problem = xlsx_problem(content)
    if problem:
        raise ImportProblems([problem])
    try:
        workbook = load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:  # zipfile.BadZipFile, KeyError, InvalidFileException...
        raise ImportProblems([f"The file is not a valid XLSX workbook ({type(exc).__name__})."]) from exc
    try:
        return _xlsx_records(workbook)
    except ImportProblems:
        raise
    except XLSX_READ_ERRORS as exc:  # e.g. an entity reference (&name;) that nothing defines
        raise ImportProblems([f"The XLSX workbook cannot be read: {exc}."]) from None
    finally:
        workbook.close()


def _xlsx_records(workbook):
    """The first sheet's rows as records; its XML is parsed row by row as it is read."""
    sheet = workbook.worksheets[0]
    rows = iter(sheet.iter_rows(values_only=True))
    header = None
    for header in rows:
        if header and any(c not in (None, "") for c in header):
            break
    if not header or all(c in (None, "") for c in header):
        raise ImportProblems(["The XLSX sheet has no header row."])
    header = [_clean_key(h) for h in header]
    _check_header(header)
    records = []
    for number, row in enumerate(rows, start=2):
        if not row or all(c in (None, "") for c in row):
            continue
        values = {}
        for h, v in zip(header, row, strict=False):  # ragged sheets allowed
            if not h:
                continue
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            values[h] = "" if v is None else (v if isinstance(v, int) and not isinstance(v, bool) else str(v))
        records.append((number, values))
        if len(records) > MAX_ROWS:
            break
    return _limit(records)


def _read_jsonl(text):
    records, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = loads_json(line)
        except ValueError as exc:
            problems.append(f"Line {number} is not valid JSON ({exc.msg} at column {exc.colno}).")
            continue
        if not isinstance(value, dict):
            problems.append(f"Line {number} must be a JSON object, got {type(value).__name__}.")
            continue
        records.append((number, {_clean_key(k): v for k, v in value.items()}))
    if problems:
        raise ImportProblems(problems)
    if not records:
        raise ImportProblems(["The file has no records."])
    return _limit(records)


def _read_json(text):
    try:
        value = loads_json(text)
    except ValueError as exc:
        raise ImportProblems(
            [f"The file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."]
        ) from None
    if isinstance(value, dict):
        for key in ("outputs", "answers", "records", "rows"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if not isinstance(value, list):
        raise ImportProblems(['The JSON file must hold a list of objects (or {"outputs": [...]}).'])
    records, problems = [], []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            problems.append(f"Record {number} must be a JSON object, got {type(item).__name__}.")
        else:
            records.append((number, {_clean_key(k): v for k, v in item.items()}))
    if problems:
        raise ImportProblems(problems)
    if not records:
        raise ImportProblems(["The file has no records."])
    return _limit(records)


def _check_header(header):
    seen = set()
    for h in header:
        if h and h in seen:
            raise ImportProblems([f"The column {h!r} appears twice in the header."])
        seen.add(h)


def _limit(records):
    if len(records) > MAX_ROWS:
        raise ImportProblems([f"The file has more than {MAX_ROWS} rows; split it."])
    if not records:
        raise ImportProblems(["The file has a header but no rows."])
    problems = [p for number, values in records if (p := nul_problem(values, f"Row {number}"))]
    if problems:
        raise ImportProblems(problems)
    return records


def _pick(values, *names):
    for name in names:
        if name in values:
            return name, values[name]
    return None, None


def _blank(value):
    return value is None or (isinstance(value, str) and not value.strip())


# --- manual collection -----------------------------------------------------------------------------------------


def manual_outputs(run):
    return (
        run.outputs.filter(endpoint__provider=Provider.MANUAL)
        .select_related("item__dimension", "endpoint")
        .order_by("endpoint__name", "item__number", "variant_key", "trial")
    )


def has_manual(run):
    return run.endpoints.filter(provider=Provider.MANUAL).exists()


def sheet_rows(run, pending_only=True):
    rows = []
    qs = manual_outputs(run)
    if pending_only:
        qs = qs.filter(status__in=[OutputStatus.PENDING, OutputStatus.FAILED])
    for out in qs:
        rows.append(
            {
                "unit": out.pk,
                "endpoint": out.endpoint.name,
                "model": out.model_name,
                "item": out.item.number if out.item_id else "",
                "dimension": out.item.dimension.name if out.item_id and out.item.dimension_id else "",
                "trial": out.trial,
                "slot_values": json.dumps(out.slot_values, ensure_ascii=False) if out.slot_values else "",
                "prompt": out.prompt_text,
                "answer": "" if out.status != OutputStatus.DONE else out.text,
            }
        )
    return rows


# The XLSX sheet's look: widths fit the columns, long prompts and answers wrap.
SHEET_LAYOUT = {
    "widths": dict(zip(SHEET_COLUMNS, (8, 18, 18, 6, 18, 6, 24, 60, 80), strict=True)),
    "wrap": ["prompt", "answer"],
}


def sheet_csv(run):
    """The collection sheet as CSV bytes (with a BOM: spreadsheet programs then read it as UTF-8)."""
    return table_text(SHEET_COLUMNS, sheet_rows(run), bom=True).encode("utf-8")


def sheet_xlsx(run):
    return xlsx_bytes([("answers", SHEET_COLUMNS, sheet_rows(run), SHEET_LAYOUT)])


def sheet_download(run, fmt):
    """The collection sheet as a download response (csv or xlsx)."""
    return table_download(
        SHEET_COLUMNS,
        sheet_rows(run),
        f"collection-run{run.pk}.{fmt}",
        fmt=fmt,
        sheet="answers",
        bom=True,
        layout=SHEET_LAYOUT,
    )


@dataclass
class Answer:
    row: int
    output: Output
    text: str


def _answer_fields(values, skip_empty):
    """A sheet row's unit and answer as the answers schema reads them: a blank unit dropped (the schema names it), a
    blank answer dropped where `skip_empty` leaves its unit pending."""
    row = {}
    if not _blank(values.get("unit")):
        row["unit"] = values["unit"]
    _, answer = _pick(values, "answer", "text")
    if answer is not None and not (skip_empty and _blank(answer)):
        row["answer"] = normalize_text(answer) if isinstance(answer, str) else answer
    return row


def validate_answers(run, records, *, skip_empty=False):
    """[Answer] for (row, {unit, answer}) records, or ImportProblems listing every bad row. Each row is checked
    against the answers schema; code then checks the units against the run."""
    units = {o.pk: o for o in manual_outputs(run)}
    problems, answers, seen = [], [], {}
    if records:
        columns = set().union(*(values.keys() for _, values in records))
        if "unit" not in columns:
            raise ImportProblems(["The file has no 'unit' column: use the run's collection sheet."])
        if not columns & {"answer", "text"}:
            raise ImportProblems(["The file has no 'answer' column."])
    fields = [_answer_fields(values, skip_empty) for _, values in records]
    refused = _schema_problems(fields, ANSWERS_SCHEMA)
    for index, ((row, _), f) in enumerate(zip(records, fields, strict=True)):
        where = f"Row {row}" if isinstance(row, int) else str(row)
        if index in refused:
            problems.extend(f"{where}: {message}" for message in refused[index])
            continue
        unit = _whole(f["unit"])
        output = units.get(unit)
        if output is None:
            problems.append(f"{where}: unknown unit {unit} (not a manual unit of run “{run.name}”).")
            continue
        if unit in seen:
            problems.append(f"{where}: unit {unit} appears twice (also in row {seen[unit]}).")
            continue
        seen[unit] = row
        if "answer" not in f:
            if not skip_empty:
                problems.append(f"{where}: the answer is missing.")
            continue
        if output.status == OutputStatus.DONE:
            if f["answer"] != output.text:  # else the sheet repeats an answer already stored
                problems.append(f"{where}: unit {unit} already has an answer.")
            continue
        answers.append(Answer(row, output, f["answer"]))
    if problems:
        raise ImportProblems(problems)
    if not answers:
        raise ImportProblems(["No answers to save: every answer is empty or already stored."])
    return answers


@transaction.atomic
def save_answers(run, answers, *, actor=None, source="form"):
    """Store validated answers (one transaction) and a provenance record per answer; finish the run when complete."""
    now = timezone.now()
    who = getattr(actor, "username", "") or ""
    calls = []
    for answer in answers:
        out = answer.output
        updated = Output.objects.filter(pk=out.pk, status__in=[OutputStatus.PENDING, OutputStatus.FAILED]).update(
            text=answer.text,
            status=OutputStatus.DONE,
            error="",
            finish_reason="manual",
            completed_at=now,
            provenance={
                "source": "manual",
                "entered_by": who,
                "via": source,
                "row": answer.row,
                "messages": messages_for(run, out.prompt_text, out.context_key),
                "model": out.model_name,
            },
        )
        if not updated:
            raise ImportProblems([f"Row {answer.row}: unit {out.pk} was answered meanwhile; nothing was saved."])
        calls.append(
            ProviderCall(
                study_id=run.study_id,
                endpoint=out.endpoint,
                purpose="generation",
                unit_ref=f"output:{out.pk}",
                output_id=out.pk,
                provider=Provider.MANUAL,
                model=out.model_name,
                params={},
                messages=messages_for(run, out.prompt_text, out.context_key),
                attempt=1,
                ok=True,
                outcome="ok",
                response_text=answer.text,
                finish_reason="manual",
                raw_response={"entered_by": who, "via": source},
                started_at=now,
            )
        )
    ProviderCall.objects.bulk_create(calls)
    record_activity(run.study, actor, f"entered {len(answers)} manual answers for", run.name)
    if run.status != RunStatus.DRAFT and not run.lease_token:
        finish(run.pk)
    return len(answers)


def import_answers(run, filename, content, *, fmt=None, actor=None, skip_empty=False):
    records = read_records(filename, content, fmt)
    answers = validate_answers(run, records, skip_empty=skip_empty)
    return save_answers(run, answers, actor=actor, source=f"file {os.path.basename(filename or '')}".strip())


def form_answers(run, data, *, actor=None):
    """Answers pasted in the browser form: fields named answer-<unit>; blank fields leave the unit pending."""
    records = [
        (f"Unit {key.removeprefix('answer-')}", {"unit": key.removeprefix("answer-"), "answer": value})
        for key, value in data.items()
        if key.startswith("answer-")
    ]
    if not records:
        raise ImportProblems(["No answers were sent."])
    answers = validate_answers(run, records, skip_empty=True)
    return save_answers(run, answers, actor=actor, source="form")


# --- import of outputs made elsewhere --------------------------------------------------------------------------

IMPORT_ALIASES = {
    "model": ("model", "model_name", "model_id"),
    "item": ("item", "item_number", "item_no", "prompt_number"),
    "prompt": ("prompt", "prompt_text"),
    "trial": ("trial", "repetition", "rep"),
    "text": ("text", "output", "story", "response", "answer", "completion"),
    "external_id": ("external_id", "id", "output_id"),
    "slot_values": ("slot_values", "slots"),
}
KNOWN_IMPORT_COLUMNS = {alias for aliases in IMPORT_ALIASES.values() for alias in aliases}


@dataclass
class ImportedRow:
    row: int
    model: str
    item: object
    prompt: str
    slot_values: dict
    variant_key: str
    trial: int
    text: str
    external_id: str
    extra: dict


def _slot_values(row, values, where, problems):
    """The row's slot values: its slot_values object (or JSON text of one) and its slot:<name> columns; None after
    adding a problem."""
    slot_values = {}
    raw = row.get("slot_values")
    if isinstance(raw, str):
        try:
            raw = loads_json(raw)
        except ValueError:
            raw = None
        if not isinstance(raw, dict):
            problems.append(f'{where}: slot_values must be a JSON object, e.g. {{"name": "Kelly"}}.')
            return None
    if raw:
        slot_values.update({str(k): str(v) for k, v in raw.items()})
    for key, value in values.items():
        if key.startswith("slot:") and not _blank(value):
            slot_values[key.removeprefix("slot:").strip()] = str(value).strip()
    return slot_values


def _import_fields(records):
    """Each row's fields under their own names (the first of a field's aliases the row has), as the schema reads
    them: blank cells dropped, except a blank model or text (which the schema names), and the text's line ends made
    \\n. Which alias names a field is worked out once per set of columns (a CSV has one)."""
    aliases_of = {}
    rows = []
    for _, values in records:
        columns = tuple(values)
        if columns not in aliases_of:
            aliases_of[columns] = [
                (field, next(alias for alias in aliases if alias in values))
                for field, aliases in IMPORT_ALIASES.items()
                if any(alias in values for alias in aliases)
            ]
        row = {}
        for field, alias in aliases_of[columns]:
            value = values[alias]
            if value is not None and (field in ("model", "text") or not _blank(value)):
                row[field] = normalize_text(value) if field == "text" and isinstance(value, str) else value
        rows.append(row)
    return rows


def _whole(value):
    """A whole number the schema has accepted: an int, an integral float or digits between spaces."""
    return int(value.strip()) if isinstance(value, str) else int(value)


def _schema_problems(rows, schema):
    """{row index: [messages]} for the rows a row schema refuses; ImportProblems for the file as a whole."""
    found = defaultdict(list)
    for problem in schemas.problems(rows, schema, reporter=_row_reporter):
        found[int(problem.path[1:-1]) if problem.path else ""].append(problem.message)
    if "" in found:
        raise ImportProblems(found[""])
    return found


def _row_reporter(error):
    return schemas.format_path(list(error.absolute_path)[:1]), schemas.message(error)


class _Toolkit:
    """A toolkit's rendered units, by item number and variant and by prompt text."""

    def __init__(self, toolkit):
        self.toolkit, self.by_item, self.by_prompt, self.items = toolkit, {}, {}, {}
        if toolkit is None:
            return
        try:
            for unit in expand_units(toolkit):
                self.items[unit.item.number] = unit.item
                self.by_item.setdefault(unit.item.number, {})[unit.variant_key] = unit
                self.by_prompt.setdefault(unit.prompt.strip(), unit)
        except SlotError as exc:
            raise ImportProblems([f"The toolkit cannot be expanded: {exc}"]) from None

    def match_item(self, number, slot_values, key, prompt):
        """(unit, problem) for an item number and the row's slot values."""
        if self.toolkit is None:
            return None, "item numbers need a toolkit to match against; choose one (or give the prompt text)."
        if number not in self.items:
            return None, f"toolkit “{self.toolkit}” has no item {number}."
        unit = self.by_item[number].get(key)
        if unit is None and not slot_values and len(self.by_item[number]) > 1:
            unit = self.by_prompt.get(prompt.strip())
        if unit is None:
            return None, f"item {number} has no variant with slot values {slot_values or '{}'}."
        return unit, None

    def match_prompt(self, prompt):
        unit = self.by_prompt.get(prompt.strip())
        return unit, None if unit else f"the prompt matches no rendered prompt of toolkit “{self.toolkit}”."


def validate_import(records, toolkit=None):
    """[ImportedRow] or ImportProblems. Each row is checked against the output-import schema (its fields); code then
    matches items by number (or by their rendered prompt) in `toolkit` and refuses duplicate rows and external ids."""
    units = _Toolkit(toolkit)
    columns = set().union(*(values.keys() for _, values in records)) if records else set()
    if not columns & set(IMPORT_ALIASES["model"]):
        raise ImportProblems(["The file has no 'model' column."])
    if not columns & set(IMPORT_ALIASES["text"]):
        raise ImportProblems(["The file has no 'text' column."])
    fields = _import_fields(records)
    refused = _schema_problems(fields, OUTPUT_IMPORT_SCHEMA)
    problems, rows, keys, external = [], [], {}, {}
    variant_keys = {}

    def cached_variant_key(values):  # a file repeats the same few slot values on every row
        frozen = tuple(sorted(values.items()))
        if frozen not in variant_keys:
            variant_keys[frozen] = variant_key(values)
        return variant_keys[frozen]

    for index, ((row, values), f) in enumerate(zip(records, fields, strict=True)):
        where = f"Row {row}"
        if index in refused:
            problems.extend(f"{where}: {message}" for message in refused[index])
            continue
        slot_values = _slot_values(f, values, where, problems)
        if slot_values is None:
            continue
        prompt = normalize_text(str(f.get("prompt", "")))
        item, key, problem = None, cached_variant_key(slot_values), None
        if "item" in f:
            number = _whole(f["item"])
            unit, problem = units.match_item(number, slot_values, key, prompt)
            if unit is not None:
                item, key, slot_values, prompt = unit.item, unit.variant_key, unit.slot_values, prompt or unit.prompt
        elif prompt.strip() and toolkit is not None:
            unit, problem = units.match_prompt(prompt)
            if unit is not None:
                item, key, slot_values = unit.item, unit.variant_key, unit.slot_values
        elif not prompt.strip():
            problem = "give an item number or the prompt text."
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        model, trial, ext = str(f["model"]).strip(), _whole(f.get("trial", 1)), str(f.get("external_id", "")).strip()
        identity = (model.lower(), item.pk if item else prompt.strip(), key, trial)
        if identity in keys:
            problems.append(f"{where} duplicates row {keys[identity]} (same model, prompt, slot values and trial).")
            continue
        keys[identity] = row
        if ext:
            if ext in external:
                problems.append(f"{where}: external id {ext!r} appears twice (also in row {external[ext]}).")
                continue
            external[ext] = row
        extra = {
            k: v
            for k, v in values.items()
            if k not in KNOWN_IMPORT_COLUMNS and not k.startswith("slot:") and not _blank(v)
        }
        rows.append(ImportedRow(row, model, item, prompt, slot_values, key, trial, f["text"], ext, extra))
    if problems:
        raise ImportProblems(problems)
    return rows


def _new_import_run(study, n, *, run_name, toolkit, actor, source):
    now = timezone.now()
    who = getattr(actor, "username", "") or ""
    run = GenerationRun.objects.create(
        study=study,
        name=run_name[:200],
        toolkit=toolkit,
        is_import=True,
        status=RunStatus.COMPLETED,
        created_by=actor if who else None,
        started_at=now,
        finished_at=now,
        message=f"Imported {n} outputs from {source or 'a file'}.",
    )
    if toolkit is not None:
        TOOLKITS.lock(toolkit)
    return run, now, who


def _file_provenance(r, source, who):
    return {
        "source": "import",
        "file": source,
        "row": r.row,
        "imported_by": who,
        **({"extra": r.extra} if r.extra else {}),
    }


@transaction.atomic
def save_import(study, rows, *, run_name, toolkit=None, actor=None, source=""):
    """Save validated rows (ImportedRow) as outputs of a new, completed import run. Returns the run."""
    run, now, who = _new_import_run(study, len(rows), run_name=run_name, toolkit=toolkit, actor=actor, source=source)
    bulk_insert(
        Output,
        (  # one prepared INSERT: 100,000 outputs in seconds (benchmarks/import_outputs.py)
            {
                "study_id": study.pk,
                "run_id": run.pk,
                "item_id": r.item.pk if r.item else None,
                "model_name": r.model,
                "trial": r.trial,
                "variant_key": r.variant_key,
                "slot_values": r.slot_values,
                "prompt_text": r.prompt,
                "text": r.text,
                "external_id": r.external_id,
                "status": OutputStatus.DONE.value,
                "created_at": now,
                "completed_at": now,
                "provenance": _file_provenance(r, source, who),
            }
            for r in rows
        ),
    )
    record_activity(study, actor, f"imported {len(rows)} outputs into", run.name)
    return run


@transaction.atomic
def import_texts(study, rows, *, run_name, toolkit=None, actor=None, source="", provenance=None):
    """The one way another app adds texts made elsewhere as outputs: a new, completed import run holding one done
    output per ImportedRow. `provenance(row)` gives each output's provenance (default: the row of an imported
    file). Returns (run, outputs in row order, with primary keys)."""
    run, now, who = _new_import_run(study, len(rows), run_name=run_name, toolkit=toolkit, actor=actor, source=source)
    if provenance is None:

        def provenance(r):
            return _file_provenance(r, source, who)

    outputs = [
        Output(
            study=study,
            run=run,
            item=r.item,
            endpoint=None,
            model_name=r.model,
            trial=r.trial,
            variant_key=r.variant_key,
            slot_values=r.slot_values,
            prompt_text=r.prompt,
            text=r.text,
            external_id=r.external_id,
            status=OutputStatus.DONE,
            completed_at=now,
            provenance=provenance(r),
        )
        for r in rows
    ]
    Output.objects.bulk_create(outputs, batch_size=1000)  # primary keys come back (PostgreSQL, SQLite >= 3.35)
    record_activity(study, actor, f"imported {len(rows)} outputs into", run.name)
    return run, outputs


def import_outputs(study, filename, content, *, fmt=None, run_name="", toolkit=None, actor=None):
    """Read, validate and save outputs made elsewhere as a new import run. Raises ImportProblems; saves nothing then."""

    if toolkit is not None and not toolkits_for(study).filter(pk=toolkit.pk).exists():
        raise ImportProblems(["Choose a toolkit of this study or of the built-in library."])
    records = read_records(filename, content, fmt)
    rows = validate_import(records, toolkit)
    source = os.path.basename(filename or "") or "upload"
    name = (run_name or "").strip() or f"Import of {source} ({timezone.now():%Y-%m-%d %H:%M})"
    return save_import(study, rows, run_name=name, toolkit=toolkit, actor=actor, source=source)
