"""Toolkit import and export as JSON and CSV. Validated in full before anything is saved; round trips exactly.

JSON: {"format": "stereoscope-toolkit", "format_version": 1, "name", "description", "language", "slots",
"combinations", "dimensions": [{"name", "description", "order"}], "items": [{"number", "text", "dimension",
"target_stereotype", "gender_mapping", "reversed_order", "source_reference", "notes", "slots", "combinations",
"counterfactual_of" (an item number)}]}.

CSV: one row per record with a `kind` column (toolkit, dimension, item) and the same fields, slots and
combinations as JSON text. A CSV without a `kind` column is read as a plain item list (a `text` column is
required; `number` defaults to the row order), which is how a spreadsheet of prompts comes in.
"""

import csv
import io
import json
import re
from pathlib import Path

from django.db import transaction

from stereoscope import schemas
from stereoscope.tables import table_text, unescape_formula
from stereoscope.untrusted import MAX_ITEM_TEXT, loads_json, nul_problem

from ..models import Toolkit
from . import item_extras
from .expansion import count_text
from .services import TOOLKITS
from .slots import SlotError, normalize_combinations, normalize_slot_values

FORMAT = "stereoscope-toolkit"
FORMAT_VERSION = 1
ITEM_FIELDS = [
    "number",
    "text",
    "dimension",
    "target_stereotype",
    "gender_mapping",
    "reversed_order",
    "source_reference",
    "notes",
    "slots",
    "combinations",
    "counterfactual_of",
]
TEXT_FIELDS = ["target_stereotype", "gender_mapping", "source_reference", "notes"]
CSV_COLUMNS = [
    "kind",
    "number",
    "name",
    "text",
    "description",
    "language",
    "dimension",
    "order",
    "target_stereotype",
    "gender_mapping",
    "reversed_order",
    "source_reference",
    "notes",
    "slots",
    "combinations",
    "counterfactual_of",
]
IGNORED_KEYS = {"format", "format_version", "version", "id", "builtin_key", "locked", "parent"}
MAX_ERRORS = 50


class ToolkitFormatError(ValueError):
    """Every problem found in an import, one message per problem."""

    def __init__(self, errors):
        self.errors = list(errors)[:MAX_ERRORS]
        super().__init__("; ".join(self.errors))


# --- export ------------------------------------------------------------------------------------------


def toolkit_to_dict(toolkit):
    numbers = {item.pk: item.number for item in toolkit.items.all()}
    extra_fields, extras = item_extras.item_extras(toolkit)
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": toolkit.name,
        "version": toolkit.version,
        "description": toolkit.description,
        "language": toolkit.language,
        "slots": toolkit.slots or {},
        "combinations": toolkit.combinations,
        "dimensions": [
            {"name": d.name, "description": d.description, "order": d.order}
            for d in toolkit.dimensions.order_by("order", "name")
        ],
        "items": [
            {
                "number": item.number,
                "text": item.text,
                "dimension": item.dimension.name if item.dimension_id else "",
                "target_stereotype": item.target_stereotype,
                "gender_mapping": item.gender_mapping,
                "reversed_order": item.reversed_order,
                "source_reference": item.source_reference,
                "notes": item.notes,
                "slots": item.slots or {},
                "combinations": item.combinations,
                "counterfactual_of": numbers.get(item.counterfactual_of_id),
            }
            for item in toolkit.items.select_related("dimension").order_by("number")
        ],
    }
    if extra_fields:  # read-only figures other apps attach (e.g. detection weights); imports ignore them
        items = toolkit.items.order_by("number").values_list("pk", flat=True)
        for row, item_id in zip(data["items"], items, strict=True):
            row.update({field: extras.get(item_id, {}).get(field) for field in extra_fields})
    return data


def export_json(toolkit):
    return json.dumps(toolkit_to_dict(toolkit), ensure_ascii=False, indent=2) + "\n"


def _json_cell(value, empty):
    return "" if value == empty or value is None else json.dumps(value, ensure_ascii=False, sort_keys=False)


def toolkit_table(toolkit):
    """The toolkit as (columns, rows) of the CSV format: a toolkit row, then dimensions, then items."""
    data = toolkit_to_dict(toolkit)
    extra_fields = [f for f in item_extras.extra_fields() if data["items"] and f in data["items"][0]]
    rows = [
        {
            "kind": "toolkit",
            "name": data["name"],
            "description": data["description"],
            "language": data["language"],
            "slots": _json_cell(data["slots"], {}),
            "combinations": _json_cell(data["combinations"], None),
        }
    ]
    rows += [{"kind": "dimension", **dim} for dim in data["dimensions"]]
    for item in data["items"]:
        row = {"kind": "item", **item}
        row["reversed_order"] = "true" if item["reversed_order"] else "false"
        row["slots"] = _json_cell(item["slots"], {})
        row["combinations"] = _json_cell(item["combinations"], None)
        row["counterfactual_of"] = "" if item["counterfactual_of"] is None else item["counterfactual_of"]
        for field in extra_fields:  # detection weights and other read-only extras
            value = item[field]
            row[field] = "" if value is None else ("; ".join(value) if isinstance(value, list) else value)
        rows.append(row)
    return CSV_COLUMNS + extra_fields, rows


def export_csv(toolkit):
    """The CSV format as text; formulas escaped by the table writer and unescaped again by parse_csv."""
    return table_text(*toolkit_table(toolkit))


# --- parsing -----------------------------------------------------------------------------------------


def _decode(content):
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ToolkitFormatError(
                [f"The file is not UTF-8 text (byte {exc.start + 1}); save it as UTF-8."]
            ) from None
    if nul_problem(content):
        raise ToolkitFormatError([nul_problem(content)])
    return content.lstrip("\ufeff")


def parse_json(content):
    text = _decode(content)
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ToolkitFormatError([f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."]) from None
    if not isinstance(data, dict):
        raise ToolkitFormatError(["The JSON must be an object with name, dimensions and items."])
    return data


def _json_field(raw, label, errors):
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return loads_json(raw)
    except json.JSONDecodeError as exc:
        errors.append(f"{label}: not valid JSON ({exc.msg}).")
        return None


def parse_csv(content):
    text = _decode(content)
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ToolkitFormatError([f"Not a readable CSV file: {exc}."]) from None
    if not rows:
        raise ToolkitFormatError(["The CSV has no rows below its header."])
    header = [h for h in rows[0].keys() if h is not None]
    unknown = [h for h in header if h not in CSV_COLUMNS and h not in item_extras.extra_fields()]
    if unknown:
        raise ToolkitFormatError([f"Unknown CSV column(s): {', '.join(unknown)}. Allowed: {', '.join(CSV_COLUMNS)}."])
    if "text" not in header:
        raise ToolkitFormatError(["The CSV needs a 'text' column with the prompt of each item."])
    errors, data = [], {"dimensions": [], "items": []}
    has_kind = "kind" in header
    for line, row in enumerate(rows, start=2):
        if None in row:
            errors.append(f"Row {line}: more cells than columns.")
            continue
        row = {k: (unescape_formula(v) if v is not None else "") for k, v in row.items()}
        kind = row.get("kind", "").strip() if has_kind else "item"
        label = f"Row {line}"
        if kind == "toolkit":
            data.update({k: row.get(k, "") for k in ("name", "description", "language") if k in row})
            data["slots"] = _json_field(row.get("slots"), f"{label} slots", errors) or {}
            data["combinations"] = _json_field(row.get("combinations"), f"{label} combinations", errors)
        elif kind == "dimension":
            data["dimensions"].append(
                {
                    "name": row.get("name", ""),
                    "description": row.get("description", ""),
                    "order": row.get("order", "") or 0,
                }
            )
        elif kind == "item":
            item = {k: row[k] for k in ITEM_FIELDS if k in row}
            item["slots"] = _json_field(row.get("slots"), f"{label} slots", errors) or {}
            item["combinations"] = _json_field(row.get("combinations"), f"{label} combinations", errors)
            item["counterfactual_of"] = row.get("counterfactual_of", "").strip() or None
            if not str(item.get("number", "")).strip():
                item["number"] = len(data["items"]) + 1
            item["_row"] = line
            data["items"].append(item)
        else:
            errors.append(f"{label}: kind must be toolkit, dimension or item, not {kind!r}.")
    if errors:
        raise ToolkitFormatError(errors)
    return data


# --- validation --------------------------------------------------------------------------------------
# The structure (fields, types, lengths, whole numbers, true/false) is the schema's; code keeps the rules that span
# fields: a name given beside the file, unique dimension names and item numbers, slots each text uses, counterfactual
# links between items.

SCHEMA = schemas.register("toolkit", Path(__file__).resolve().parent.parent / "schema" / "toolkit.schema.json")
NOT_CHECKED = IGNORED_KEYS - {"format", "format_version"}
TRUE_WORDS = ("true", "1", "yes", "y", "*")


def _for_schema(data):
    """`data` without what imports ignore (ids, versions, other apps' extras, CSV row numbers)."""
    drop = NOT_CHECKED | set(item_extras.extra_fields()) | {"_row"}

    def strip(obj):
        return {k: v for k, v in obj.items() if k not in drop} if isinstance(obj, dict) else obj

    out = strip(data)
    for key in ("dimensions", "items"):
        if isinstance(out, dict) and isinstance(out.get(key), list):
            out[key] = [strip(entry) for entry in out[key]]
    return out


def schema_errors(data):
    """The schema's problems, each `path: message`; a CSV item's names its row instead of items[i]."""
    errors = []
    items = data.get("items") if isinstance(data, dict) else None
    for problem in schemas.problems(_for_schema(data), SCHEMA, what="The toolkit"):
        found = re.match(r"items\[(\d+)\]", problem.path)
        entry = items[int(found[1])] if found and isinstance(items, list) else None
        row = entry.get("_row") if isinstance(entry, dict) else None
        if row:  # a CSV line: name the row (and item) as the file's reader sees it, then the column
            number = _whole(entry.get("number"))
            where = f"Row {row}" + (f" (item {number})" if number is not None else "")
            field = problem.path[found.end() :].lstrip(".")
            errors.append(f"{where}, {field}: {problem.message}" if field else f"{where}: {problem.message}")
        else:
            errors.append(str(problem))
    return errors


def _whole(value, default=None):
    """A whole number from a JSON number or CSV text (the schema has refused anything else); default if none."""
    if isinstance(value, bool) or value in (None, ""):
        return default
    if isinstance(value, float):
        return int(value) if value.is_integer() else default
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def _bool(value):
    return value if isinstance(value, bool) else str(value or "").strip().lower() in TRUE_WORDS


def _text(value):
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return str(value).replace("\r\n", "\n").replace("\r", "\n")


def _slots(owner, where, errors):
    """(slots, combinations) of a toolkit or an item, or ({}, None) with the slot error noted."""
    try:
        return (
            normalize_slot_values(owner.get("slots") or {}, f"{where} slots"),
            normalize_combinations(owner.get("combinations"), f"{where} combinations"),
        )
    except SlotError as exc:
        errors.append(str(exc))
        return {}, None


def _clean_dimensions(dimensions, errors):
    clean, names = [], set()
    for index, dim in enumerate(dimensions, start=1):
        if not isinstance(dim, dict):
            continue
        dim_name = _text(dim.get("name")).strip()
        if dim_name and dim_name in names:
            errors.append(f"Dimension {index}: the name {dim_name!r} is used twice.")
        names.add(dim_name)
        order = _whole(dim.get("order", index - 1), 0)
        clean.append({"name": dim_name, "description": _text(dim.get("description")), "order": order})
    return clean


def _clean_item(item, index, toolkit, errors):
    label = f"Row {item['_row']}" if "_row" in item else f"Item {index}"
    number = _whole(item.get("number", index))
    if number is not None:
        label = f"Item {number}" if "_row" not in item else f"{label} (item {number})"
    text = _text(item.get("text"))
    entry = {"number": number, "text": text, "dimension": _text(item.get("dimension")).strip()}
    entry.update({field: _text(item.get(field)) for field in TEXT_FIELDS})
    entry["reversed_order"] = _bool(item.get("reversed_order"))
    entry["counterfactual_of"] = _whole(item.get("counterfactual_of"))
    entry["slots"], entry["combinations"] = _slots(item, label, errors)
    if text.strip() and len(text) <= MAX_ITEM_TEXT:
        combos = entry["combinations"] if entry["combinations"] is not None else toolkit["combinations"]
        try:
            count_text(text, {**toolkit["slots"], **entry["slots"]}, combos, label)
        except SlotError as exc:
            errors.append(str(exc))
            entry["slots"], entry["combinations"] = {}, None
    return label, entry


def _clean_items(items, clean, errors):
    numbers, names = [], {d["name"] for d in clean["dimensions"]}
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            continue
        label, entry = _clean_item(item, index, clean, errors)
        if entry["number"] is not None:
            if entry["number"] in numbers:
                errors.append(f"{label}: the number {entry['number']} is used twice.")
            numbers.append(entry["number"])
        if entry["dimension"] and entry["dimension"] not in names:  # undeclared dimensions come in item order
            names.add(entry["dimension"])
            clean["dimensions"].append(
                {"name": entry["dimension"], "description": "", "order": len(clean["dimensions"])}
            )
        clean["items"].append(entry)
    for entry in clean["items"]:
        original = entry["counterfactual_of"]
        if original is not None and (original not in numbers or original == entry["number"]):
            errors.append(f"Item {entry['number']}: counterfactual_of must name another item's number, not {original}.")


def validate_data(data, name=None):
    """Check a parsed toolkit; return a clean dict or raise ToolkitFormatError listing every problem."""
    errors = schema_errors(data)
    if not isinstance(data, dict):
        raise ToolkitFormatError(errors)
    clean = {
        "name": _text(name if name else data.get("name")).strip(),
        "description": _text(data.get("description")),
        "language": _text(data.get("language") or "en").strip() or "en",
        "items": [],
    }
    if not clean["name"]:
        errors.append("The toolkit needs a name.")
    clean["slots"], clean["combinations"] = _slots(data, "toolkit", errors)
    dimensions, items = data.get("dimensions"), data.get("items")
    clean["dimensions"] = _clean_dimensions(dimensions if isinstance(dimensions, list) else [], errors)
    _clean_items(items if isinstance(items, list) else [], clean, errors)
    if errors:
        raise ToolkitFormatError(errors)
    return clean


# --- saving ------------------------------------------------------------------------------------------


@transaction.atomic
def create_toolkit(study, clean, *, created_by=None, builtin_key="", locked=False):
    """Save validated data as a new toolkit (next version when the name exists in the study)."""

    TOOLKITS.refuse_library(study, builtin=bool(builtin_key))
    version = TOOLKITS.next_version(study, clean["name"])
    parent = Toolkit.objects.filter(study=study, name=clean["name"], version=version - 1).first()
    toolkit = Toolkit.objects.create(
        study=study,
        name=clean["name"],
        version=version,
        parent=parent,
        description=clean["description"],
        language=clean["language"],
        slots=clean["slots"],
        combinations=clean["combinations"],
        created_by=created_by,
        builtin_key=builtin_key,
        locked=locked,
    )
    dims = {d["name"]: toolkit.dimensions.create(**d) for d in clean["dimensions"]}
    items = {}
    for entry in clean["items"]:
        fields = {k: v for k, v in entry.items() if k not in ("dimension", "counterfactual_of")}
        items[entry["number"]] = toolkit.items.create(dimension=dims.get(entry["dimension"]), **fields)
    for entry in clean["items"]:
        if entry["counterfactual_of"] is not None:
            item = items[entry["number"]]
            item.counterfactual_of = items[entry["counterfactual_of"]]
            item.save(update_fields=["counterfactual_of"])
    return toolkit


def import_toolkit(study, content, *, fmt, created_by=None, name=None):
    """Parse, validate and save a JSON or CSV toolkit file. Raises ToolkitFormatError; saves nothing then."""
    if fmt not in ("json", "csv"):
        raise ToolkitFormatError([f"Unknown format {fmt!r}; use json or csv."])
    data = parse_json(content) if fmt == "json" else parse_csv(content)
    clean = validate_data(data, name=name)
    return create_toolkit(study, clean, created_by=created_by)


def guess_format(filename):
    lower = (filename or "").lower()
    if lower.endswith(".json"):
        return "json"
    if lower.endswith(".csv"):
        return "csv"
    raise ToolkitFormatError([f"Cannot tell the format of {filename!r}; upload a .json or .csv file."])
