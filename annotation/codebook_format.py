"""Codebook import and export: JSON (our own), REFI-QDA .qdc (Codebook.xsd) and CSV. No Django imports.

Everything is parsed into one normalised tree, validated in full, and only then handed to the service that
creates the codebook, so a bad file changes nothing.

Normalised tree: {"name", "description", "codes": [node]}; node = {"name", "description", "color", "gender_tag",
"kind", "codable", "shortcut", "stereotype", "guid", "item_number", "frequency_reference", "variable", "ordered",
"exclude", "children": [node]}. A group with "variable" ("story" or "span") is one categorical variable whose values
are its codable children ("ordered": values in order); one child may be the "exclude" value (e.g. "uncertain").
A variable may set "gold_rule" ("majority", strict, the default; or "plurality") and "gold_min_raters" (default 2).

.qdc carries what REFI-QDA knows (guid, name, isCodable, color, Description, nesting). Gender tags and the
inductive flag travel as REFI-QDA Sets ("Gender F", "Gender M", "Inductive"); the shortcut, stereotype and item
link ride in a last description line "[stereoscope] key=value; ..." that other tools show as text.
CSV: one row per code: guid, parent (a parent's guid, or its name when unique), name, path (ignored on import),
description, color, gender_tag, kind, codable, shortcut, stereotype, item_number, frequency_reference.
"""

import csv
import io
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lxml import etree

from stereoscope import schemas
from stereoscope.tables import table_text, unescape_formula
from stereoscope.untrusted import nul_problem, whole_number

QDC_NS = "urn:QDA-XML:codebook:1.0"
XSD_PATH = Path(__file__).resolve().parent / "refi_schemas" / "Codebook.xsd"
COLOR_RE = re.compile(r"^#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")
META_PREFIX = "[stereoscope] "
GENDER_SETS = {"F": "Gender F", "M": "Gender M"}
INDUCTIVE_SET = "Inductive"
CSV_COLUMNS = [
    "guid",
    "parent",
    "name",
    "path",
    "description",
    "color",
    "gender_tag",
    "kind",
    "codable",
    "shortcut",
    "stereotype",
    "item_number",
    "frequency_reference",
]
DEFAULT_COLOR = "#4c6ef5"
META_KEYS = (
    "shortcut",
    "stereotype",
    "item_number",
    "frequency_reference",
    "variable",
    "ordered",
    "exclude",
    "gold_rule",
    "gold_min_raters",
)
MAX_ERRORS = 50
MAX_DEPTH = 20
MAX_BYTES = 20 * 1024 * 1024


class CodebookFormatError(ValueError):
    def __init__(self, errors):
        self.errors = list(errors)[:MAX_ERRORS]
        super().__init__("; ".join(self.errors))


# --- validation of the normalised tree -------------------------------------------------------------
# The shape of every field is the schema's (schema/codebook.schema.json, through stereoscope.schemas' reporter);
# code keeps the rules across codes: parent references and cycles, unique guids and shortcuts, the tree's depth and
# the shape of categorical variables. Both are reported together, so one upload lists every problem.

SCHEMA = schemas.register("codebook", Path(__file__).resolve().parent / "schema" / "codebook.schema.json")
TRUE_WORDS = ("1", "true", "yes", "y")
FALSE_WORDS = ("0", "false", "no", "n")
VARIABLE_SCOPES = ("story", "span")


def code_label(data, path):
    """The reader's name of the code a JSON path points into ("Code 1 ('Family') › code 2 ('F caring mother')"; ""
    for the codebook itself), and the rest of the path (the field)."""
    label, node, rest = "", data, list(path)
    while len(rest) >= 2 and rest[0] in ("codes", "children") and isinstance(rest[1], int):
        key, index = rest.pop(0), rest.pop(0)
        children = node.get(key) if isinstance(node, dict) else None
        node = children[index] if isinstance(children, list) and index < len(children) else None
        name = str(node.get("name") or "").strip() if isinstance(node, dict) else ""
        label = f"{label} › code {index + 1}" if label else f"Code {index + 1}"
        label += f" ('{name}')" if name else ""
    return label, rest


def schema_errors(data):
    """The schema's problems of a codebook tree, each `Code 1 ('A') › code 2: message` (or the codebook's own)."""

    def reporter(error):
        return code_label(data, error.absolute_path)[0], schemas.message(error)

    return schemas.messages(data, SCHEMA, what="The codebook", reporter=reporter)


def _bool(value, default=True):
    """true/false from a bool, 0/1 or a word (the schema has refused anything else; then `default`)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in TRUE_WORDS else False if text in FALSE_WORDS else default


def normalize_color(value: str | None, where: str, errors: list[str]) -> str:
    value = (value or "").strip()
    if not value:
        return DEFAULT_COLOR
    if not COLOR_RE.match(value):
        errors.append(f"{where}: colour '{value}' is not #rrggbb.")
        return DEFAULT_COLOR
    if len(value) == 4:
        value = "#" + "".join(c * 2 for c in value[1:])
    return value.lower()


def _choice(value, allowed, default=""):
    text = str(value or "").strip().lower().replace("-", "_").replace(" ", "_")
    return text if text in allowed else default


def _count(value):
    return whole_number(str(value if value is not None else ""))


def _guid(value):
    text = str(value or "").strip().strip("{}")
    try:
        return str(uuid.UUID(text)) if text else ""
    except ValueError:
        return ""


def _shortcut(value):
    text = str(value if value is not None else "")
    return text if len(text) == 1 and not text.isspace() else ""


def _clean_node(raw, code_name):
    """One code's own fields, normalised (whatever the schema refused falls back to its default)."""
    gender = str(raw.get("gender_tag") or "").strip().upper()
    scope = _choice(raw.get("variable"), VARIABLE_SCOPES)
    node = {
        "name": code_name,
        "description": str(raw.get("description") or ""),
        "color": normalize_color(str(raw.get("color") or ""), "", []),
        "gender_tag": gender if gender in ("F", "M") else "",
        "kind": _choice(raw.get("kind"), ("a_priori", "inductive"), "a_priori"),
        "codable": _bool(raw.get("codable", True)),
        "shortcut": _shortcut(raw.get("shortcut")),
        "stereotype": str(raw.get("stereotype") or ""),
        "guid": _guid(raw.get("guid")),
        "item_number": _count(raw.get("item_number")),
        "frequency_reference": _count(raw.get("frequency_reference")),
        "variable": scope,
        "ordered": _bool(raw.get("ordered", False), False),
        "exclude": _bool(raw.get("exclude", False), False),
    }
    if scope:  # a variable's gold rule: strict majority (default) or plurality, and the minimum number of raters
        rule = _choice(raw.get("gold_rule"), ("majority", "plurality"), "majority")
        node.update(gold_rule=rule, gold_min_raters=_count(raw.get("gold_min_raters", 2)) or 2)
    return node


class _Tree:
    """Normalises a schema-checked tree and checks the rules across codes, collecting every problem."""

    def __init__(self, errors):
        self.errors, self.guids, self.shortcuts = errors, set(), {}

    def node(self, raw, where, depth):
        if depth > MAX_DEPTH:
            self.errors.append(f"{where}: the tree is deeper than {MAX_DEPTH} levels.")
            return None
        if not isinstance(raw, dict):
            return None  # the schema said so
        code_name = str(raw.get("name") or "").strip()
        label = f"{where} ('{code_name}')" if code_name else where
        result = _clean_node(raw, code_name)
        self.unique(result, label)
        children = raw.get("children") if isinstance(raw.get("children"), list) else []
        result["children"] = [
            c for c in (self.node(child, f"{label} › code {i + 1}", depth + 1) for i, child in enumerate(children)) if c
        ]
        _check_variable(result, label, self.errors)
        return result

    def unique(self, node, label):
        guid, shortcut = node["guid"], node["shortcut"]
        if guid and guid in self.guids:
            self.errors.append(f"{label}: guid {guid} appears twice.")
        self.guids.add(guid)
        if shortcut.lower() in self.shortcuts:
            used_by = self.shortcuts[shortcut.lower()]
            self.errors.append(f"{label}: the shortcut '{shortcut}' is also used by '{used_by}'.")
        if shortcut:
            self.shortcuts[shortcut.lower()] = node["name"]


def validate_tree(data: Any) -> dict[str, Any]:
    """Check and normalise a tree (as produced by the parsers or given as JSON). Raises CodebookFormatError."""
    errors = schema_errors(data)
    if not isinstance(data, dict):
        raise CodebookFormatError(errors)
    codes_raw = data.get("codes") if isinstance(data.get("codes"), list) else []
    if any(isinstance(raw, dict) and raw.get("parent") not in (None, "") for raw in codes_raw):
        codes_raw = nest_flat_codes(codes_raw, errors)
    tree = _Tree(errors)
    codes = [c for c in (tree.node(raw, f"Code {i + 1}", 1) for i, raw in enumerate(codes_raw)) if c is not None]
    errors += [
        f"'{top['name']}' is an exclude value outside a categorical variable." for top in codes if top["exclude"]
    ]
    if errors:
        raise CodebookFormatError(errors)
    name = str(data.get("name") or "").strip()
    return {"name": name, "description": str(data.get("description") or ""), "codes": codes}


def nest_flat_codes(codes_raw, errors):
    """A flat list of codes whose `parent` names another code (its guid, or its name when unique) → a nested list.
    Unknown or ambiguous parents and cycles of parents are errors: nothing is dropped silently."""

    def key(value):
        return str(value or "").strip().strip("{}").lower()

    errors_before = len(errors)
    by_guid, by_name = {}, {}
    for i, raw in enumerate(codes_raw):
        if isinstance(raw, dict):
            if key(raw.get("guid")):
                by_guid[key(raw.get("guid"))] = i
            by_name.setdefault(str(raw.get("name") or "").strip(), []).append(i)
    parent_of = {}
    for i, raw in enumerate(codes_raw):
        if not isinstance(raw, dict) or raw.get("parent") in (None, ""):
            continue
        ref = str(raw["parent"]).strip()
        found = by_guid.get(key(ref))
        if found is None:
            named = by_name.get(ref, [])
            if len(named) > 1:
                errors.append(f"Code {i + 1}: the parent name '{ref}' is not unique; use its guid.")
                continue
            found = named[0] if named else None
        if found is None:
            errors.append(f"Code {i + 1}: the parent '{ref}' is not a code of this codebook.")
            continue
        parent_of[i] = found
    reported = set()
    for start in parent_of:
        chain, node = [], start
        while node in parent_of and node not in chain:
            chain.append(node)
            node = parent_of[node]
        if node in chain and not reported & set(chain):
            loop = chain[chain.index(node) :] + [node]
            names = " → ".join(str(codes_raw[n].get("name") or f"code {n + 1}") for n in loop)
            errors.append(f"The parents of codes form a cycle ({names}); a code cannot sit inside itself.")
            reported |= set(loop)
    if len(errors) > errors_before:
        return [raw for i, raw in enumerate(codes_raw) if i not in parent_of]  # refused anyway: check the rest
    nodes = [dict(raw, children=list(raw.get("children") or [])) if isinstance(raw, dict) else raw for raw in codes_raw]
    roots = []
    for i, node in enumerate(nodes):
        if i in parent_of:
            nodes[parent_of[i]]["children"].append(node)
        else:
            roots.append(node)
    return roots


def _check_variable(node, label, errors):
    """A variable is a non-codable group of at least two codable values, one of them at most the exclude value."""
    children = node["children"]
    if node["variable"]:
        if node["codable"]:
            errors.append(f"{label}: a categorical variable is a group; set codable to false.")
        values = [c for c in children if c["codable"]]
        if len(values) < 2 or len(values) != len(children):
            errors.append(
                f"{label}: a categorical variable needs at least two values, all codable codes without children."
            )
        if sum(1 for c in children if c["exclude"]) > 1:
            errors.append(f"{label}: a categorical variable has at most one exclude value.")
        for child in children:
            if child["children"]:
                errors.append(f"{label}: the value '{child['name']}' must not have codes below it.")
    elif node["ordered"]:
        errors.append(f"{label}: only a categorical variable can be ordered.")
    for child in children:
        if child["exclude"] and not node["variable"]:
            errors.append(f"{label}: '{child['name']}' is an exclude value but '{node['name']}' is not a variable.")


def walk(
    codes: Iterable[dict[str, Any]], parent: dict[str, Any] | None = None, depth: int = 0
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None, int]]:
    """(node, parent node, depth) in document order."""
    for node in codes:
        yield node, parent, depth
        yield from walk(node["children"], node, depth + 1)


def count_codes(tree):
    return sum(1 for _ in walk(tree["codes"]))


# --- REFI-QDA .qdc ---------------------------------------------------------------------------------


def _schema():
    return etree.XMLSchema(etree.parse(str(XSD_PATH), _safe_parser()))


def _safe_parser():
    # No entity expansion, no DTD or network fetches: XXE and billion-laughs inputs fail instead of resolving.
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
    )


def _meta_line(node):
    parts = []
    for key in META_KEYS:
        value = node.get(key)
        if value is False:
            continue
        if value not in (None, ""):
            parts.append(f"{key}={str(value).replace(';', ',').replace(chr(10), ' ')}")
    return META_PREFIX + "; ".join(parts) if parts else ""


def _split_meta(description):
    lines = description.rstrip("\n").split("\n")
    meta = {}
    if lines and lines[-1].startswith(META_PREFIX):
        for part in lines.pop()[len(META_PREFIX) :].split("; "):
            key, _, value = part.partition("=")
            if key in META_KEYS:
                meta[key] = value
    return "\n".join(lines), meta


def tree_to_qdc(tree, origin="Stereoscope"):
    """bytes of a .qdc document valid against Codebook.xsd. Every node needs a guid."""
    q = f"{{{QDC_NS}}}"
    root = etree.Element(q + "CodeBook", nsmap={None: QDC_NS}, origin=origin)
    codes_el = etree.SubElement(root, q + "Codes")
    sets = {label: [] for label in list(GENDER_SETS.values()) + [INDUCTIVE_SET]}

    def add(parent_el, node):
        el = etree.SubElement(
            parent_el,
            q + "Code",
            guid=node["guid"],
            name=node["name"],
            isCodable="true" if node["codable"] else "false",
            color=node["color"],
        )
        description = node.get("description") or ""
        meta = _meta_line(node)
        if meta:
            description = f"{description}\n{meta}" if description else meta
        if description:
            etree.SubElement(el, q + "Description").text = _xml_text(description)
        if node.get("gender_tag") in GENDER_SETS:
            sets[GENDER_SETS[node["gender_tag"]]].append(node["guid"])
        if node.get("kind") == "inductive":
            sets[INDUCTIVE_SET].append(node["guid"])
        for child in node["children"]:
            add(el, child)

    for node in tree["codes"]:
        add(codes_el, node)
    if any(sets.values()):
        sets_el = etree.SubElement(root, q + "Sets")
        for label, members in sets.items():
            if members:
                set_el = etree.SubElement(
                    sets_el,
                    q + "Set",
                    guid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"stereoscope:{label}:{members[0]}")),
                    name=label,
                )
                for guid in members:
                    etree.SubElement(set_el, q + "MemberCode", guid=guid)
    return etree.tostring(root, xml_declaration=True, encoding="utf-8", pretty_print=True)


def _xml_text(text):
    # XML 1.0 cannot carry most control characters; drop them rather than write an invalid file.
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 0x20)


def validate_qdc(content):
    """[] when `content` is a schema-valid .qdc, else the schema's messages."""
    try:
        doc = etree.fromstring(content, _safe_parser())
    except etree.XMLSyntaxError as exc:
        return [f"Not well-formed XML: {exc}"]
    schema = _schema()
    if schema.validate(doc):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log][:MAX_ERRORS]


def parse_qdc(content, name=None):
    """A .qdc document (bytes or str) → validated tree. Raises CodebookFormatError with every problem."""
    if isinstance(content, str):
        content = content.encode("utf-8")
    if len(content) > MAX_BYTES:
        raise CodebookFormatError([f"The file is larger than {MAX_BYTES // (1024 * 1024)} MB."])
    if b"<!DOCTYPE" in content or b"<!ENTITY" in content:
        raise CodebookFormatError(["The file contains a DOCTYPE or ENTITY declaration; .qdc files must not."])
    try:
        doc = etree.fromstring(content, _safe_parser())
    except etree.XMLSyntaxError as exc:
        raise CodebookFormatError([f"Not well-formed XML: {exc}"]) from None
    schema = _schema()
    if not schema.validate(doc):
        raise CodebookFormatError(
            ["Not a valid REFI-QDA codebook: " + f"line {e.line}: {e.message}" for e in schema.error_log]
        )
    q = f"{{{QDC_NS}}}"
    set_members = {}
    for set_el in doc.iter(q + "Set"):
        for member in set_el.iter(q + "MemberCode"):
            set_members.setdefault(str(uuid.UUID(member.get("guid").strip("{}"))), set()).add(set_el.get("name"))

    def node(el):
        guid = str(uuid.UUID(el.get("guid").strip("{}")))
        desc_el = el.find(q + "Description")
        description, meta = _split_meta(desc_el.text or "" if desc_el is not None else "")
        labels = set_members.get(guid, set())
        gender = next((g for g, label in GENDER_SETS.items() if label in labels), "")
        return {
            "guid": guid,
            "name": el.get("name"),
            "codable": el.get("isCodable") in ("true", "1"),
            "color": el.get("color") or "",
            "description": description,
            "gender_tag": gender,
            "kind": "inductive" if INDUCTIVE_SET in labels else "a_priori",
            **meta,
            "children": [node(child) for child in el.findall(q + "Code")],
        }

    codes = [node(el) for el in doc.find(q + "Codes").findall(q + "Code")]
    return validate_tree({"name": name or doc.get("origin") or "Imported codebook", "codes": codes})


# --- CSV ----------------------------------------------------------------------------------------------


def tree_table(tree):
    """The codebook as (columns, rows) of the CSV format (for the table writer, which escapes formulas;
    parse_csv reads the escaped text back)."""
    rows = []
    for node, parent, _ in walk(tree["codes"]):
        rows.append(
            {
                "guid": node["guid"],
                "parent": parent["guid"] if parent else "",
                "name": node["name"],
                "path": node.get("path") or node["name"],
                "description": node["description"],
                "color": node["color"],
                "gender_tag": node["gender_tag"],
                "kind": node["kind"],
                "codable": "true" if node["codable"] else "false",
                "shortcut": node["shortcut"],
                "stereotype": node["stereotype"],
                "item_number": "" if node.get("item_number") is None else node["item_number"],
                "frequency_reference": "" if node.get("frequency_reference") is None else node["frequency_reference"],
            }
        )
    return CSV_COLUMNS, rows


def tree_to_csv(tree):
    return table_text(*tree_table(tree))


def parse_csv(content, name):
    """CSV text → validated tree. Parents must come before their children."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CodebookFormatError(["The CSV file is not UTF-8 text."]) from None
    content = content.lstrip("\ufeff")
    if nul_problem(content):
        raise CodebookFormatError([nul_problem(content)])
    reader = csv.DictReader(io.StringIO(content))
    if not reader.fieldnames or "name" not in [f.strip() for f in reader.fieldnames]:
        raise CodebookFormatError(["The CSV needs a header row with at least a 'name' column."])
    errors, roots, by_guid, by_name = [], [], {}, {}
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise CodebookFormatError([f"The CSV could not be read: {exc}"]) from None
    for line, row in enumerate(rows, start=2):
        row = {(k or "").strip(): (unescape_formula(v) if isinstance(v, str) else "") for k, v in row.items()}
        node = {key: row.get(key, "") for key in CSV_COLUMNS if key not in ("parent", "path")}
        node["codable"] = row.get("codable") or "true"
        node["children"] = []
        node["_line"] = line
        parent_ref = (row.get("parent") or "").strip()
        if parent_ref:
            parent = by_guid.get(parent_ref.strip("{}").lower())
            if parent is None:
                named = by_name.get(parent_ref, [])
                if len(named) > 1:
                    errors.append(f"Row {line}: the parent name '{parent_ref}' is not unique; use its guid.")
                    continue
                parent = named[0] if named else None
            if parent is None:
                errors.append(f"Row {line}: the parent '{parent_ref}' is not defined in an earlier row.")
                continue
            parent["children"].append(node)
        else:
            roots.append(node)
        guid = (row.get("guid") or "").strip().strip("{}").lower()
        if guid:
            by_guid[guid] = node
        by_name.setdefault((row.get("name") or "").strip(), []).append(node)
    if not rows:
        errors.append("The CSV has no rows.")
    if errors:
        raise CodebookFormatError(errors)
    for node, _, _ in walk(roots):
        node.pop("_line", None)
    return validate_tree({"name": name, "codes": roots})
