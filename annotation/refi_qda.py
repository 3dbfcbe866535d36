"""REFI-QDA (QDA-XML 1.0) build and parse of `.qdpx` projects. No Django. (`.qdc` codebooks: codebook_format.)

Export streams: sources are written to `Sources/<guid>.txt` as they come and `project.qde` is written
incrementally, compressed as it comes into a temporary file, then added to the ZIP. Import parses with a hardened
parser (no entities, no DTD, no network), validates against the XSD, then checks references and offsets; any
problem raises RefiError naming the element and its line, before anything is written anywhere.

Offsets are code-point indices into the plain text with line endings normalised to \\n. A source whose file uses
\\r\\n is normalised and its selection offsets are mapped onto the normalised text.
"""

import bisect
import contextlib
import datetime
import io
import re
import tempfile
import time
import uuid
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from lxml import etree

NS = "urn:QDA-XML:project:1.0"
SCHEMA_DIR = Path(__file__).with_name("refi_schemas")
STEREOSCOPE_NS = uuid.UUID("6f1c2a52-8f61-4c5e-9d0e-5c0f3e2b7a11")
# Uncompressed sizes a .qdpx may declare, checked before any member is read (a zip bomb is refused at once): the XML
# parser holds project.qde's text and its tree, a few times its size. A study's project.qde (codes, codings, memos)
# is a few MB, a story a few KB.
MAX_PROJECT_BYTES = 64 * 1024 * 1024
MAX_SOURCE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
GUID_RE = re.compile(r"^\{?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\}?$")


class RefiError(ValueError):
    """A malformed or inconsistent REFI-QDA file. `problems` lists every issue found (the message shows the first)."""

    def __init__(self, problems):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        shown = self.problems[:5]
        more = f" (and {len(self.problems) - 5} more problems)" if len(self.problems) > 5 else ""
        super().__init__("; ".join(shown) + more)


def stable_guid(*parts) -> str:
    """A GUID derived from stable parts (uuid5), for things that have no guid field."""
    return str(uuid.uuid5(STEREOSCOPE_NS, ":".join(str(p) for p in parts)))


def derived_guid(guid: str, salt: int) -> str:
    """A second stable GUID from a GUID (XOR with a salt): cheap, and distinct per salt. A GUID in the usual form
    (hex and hyphens) is read and written as plain hex, not through two uuid.UUID objects (one per span coding)."""
    digits = guid.replace("-", "")
    value = int(digits, 16) if len(digits) == 32 else uuid.UUID(guid).int
    hexed = "%032x" % (value ^ salt)
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def normalise_guid(value) -> str | None:
    match = GUID_RE.match((value or "").strip())
    return match.group(1).lower() if match else None


# --- the in-memory model ------------------------------------------------------------------------------------


@dataclass
class QUser:
    guid: str
    name: str


@dataclass
class QCode:
    guid: str
    name: str
    codable: bool = True
    color: str | None = None
    description: str = ""
    children: list = field(default_factory=list)
    note_guids: list = field(default_factory=list)
    line: int | None = None

    def walk(self, parents=()):
        yield self, parents
        for child in self.children:
            yield from child.walk(parents + (self,))


@dataclass
class QVariable:
    guid: str
    name: str
    type: str = "Text"  # Text, Integer, Float, Boolean, Date, DateTime
    description: str = ""


@dataclass
class QCoding:
    guid: str
    code_guid: str
    user_guid: str | None = None
    created: datetime.datetime | None = None
    note_guids: list = field(default_factory=list)
    line: int | None = None


@dataclass
class QSelection:
    guid: str
    start: int
    end: int
    codings: list = field(default_factory=list)
    user_guid: str | None = None
    created: datetime.datetime | None = None
    name: str = ""
    note_guids: list = field(default_factory=list)
    line: int | None = None


@dataclass
class QSource:
    guid: str
    name: str
    text: str
    selections: list = field(default_factory=list)
    codings: list = field(default_factory=list)  # document-level
    variables: list = field(default_factory=list)  # (variable guid, value)
    note_guids: list = field(default_factory=list)
    user_guid: str | None = None
    created: datetime.datetime | None = None
    line: int | None = None


class RenderedSource(NamedTuple):
    """A TextSource already written as XML (source_xml's bytes, built by the caller from its own rows): what an
    export streams instead of a QSource when it has many codings. `selections` and `codings` are its counts."""

    guid: str
    text: str
    xml: str
    selections: int
    codings: int


@dataclass
class QNote:
    guid: str
    name: str
    text: str
    user_guid: str | None = None
    created: datetime.datetime | None = None
    line: int | None = None


@dataclass
class QSet:
    guid: str
    name: str
    code_guids: list = field(default_factory=list)
    description: str = ""


@dataclass
class QProject:
    name: str
    origin: str = ""
    users: list = field(default_factory=list)
    codes: list = field(default_factory=list)
    variables: list = field(default_factory=list)
    sources: object = field(default_factory=list)  # any iterable of QSource (streamed on export)
    notes: list = field(default_factory=list)
    created: datetime.datetime | None = None
    description: str = ""
    sets: list = field(default_factory=list)  # QSet: named groups of codes (gender tags, inductive codes)

    def all_codes(self):
        for code in self.codes:
            yield from code.walk()


# --- writing ------------------------------------------------------------------------------------------------


def _dt(value):
    if value is None or isinstance(value, str):  # strings come pre-formatted (UTC, xsd:dateTime) from the query
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _attrs(**values):
    return {k: str(v) for k, v in values.items() if v not in (None, "")}


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
)
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})


def xml_text(value):
    """XML 1.0 cannot carry most control characters; drop them."""
    return _XML_ILLEGAL.sub("", value or "")


def _qa(value):
    return '"' + xml_text(str(value)).translate(_ATTR_ESCAPES) + '"'


def _opt(name, value):
    return "" if value in (None, "") else f" {name}={_qa(value)}"


def _safe(name, value):
    """An optional attribute whose value needs no escaping (GUIDs, xsd:dateTime stamps)."""
    return f' {name}="{value}"' if value else ""


def _el(tag, attrs=None, text=None, children=()):
    element = etree.Element(f"{{{NS}}}{tag}", attrs or {}, nsmap={None: NS})
    if text is not None:
        element.text = xml_text(str(text))
    for child in children:
        element.append(child)
    return element


def _code_element(code):
    element = _el(
        "Code",
        _attrs(
            guid=code.guid, name=xml_text(code.name), isCodable="true" if code.codable else "false", color=code.color
        ),
    )
    if code.description:
        element.append(_el("Description", text=code.description))
    for note in code.note_guids:
        element.append(_el("NoteRef", {"targetGUID": note}))
    for child in code.children:
        element.append(_code_element(child))
    return element


VALUE_TAGS = {
    "Text": "TextValue",
    "Integer": "IntegerValue",
    "Float": "FloatValue",
    "Boolean": "BooleanValue",
    "Date": "DateValue",
    "DateTime": "DateTimeValue",
}


def coding_xml(guid, code_guid, user_guid, created, notes=""):
    """One Coding as XML text. `user_guid` and `created` (xsd:dateTime text) may be empty; `notes` is note_refs()."""
    return (
        f'<Coding guid="{guid}"{_safe("creatingUser", user_guid)}{_safe("creationDateTime", created)}>'
        f'<CodeRef targetGUID="{code_guid}"/>{notes}</Coding>'
    )


def span_coding_xml(selection_guid, start, end, guid, code_guid, user_guid, created, notes=""):
    """A PlainTextSelection holding one Coding by the selection's user at its time (an export's span coding)."""
    user = _safe("creatingUser", user_guid)
    when = _safe("creationDateTime", created)
    return (
        f'<PlainTextSelection guid="{selection_guid}" startPosition="{int(start)}" endPosition="{int(end)}"'
        f'{user}{when}><Coding guid="{guid}"{user}{when}><CodeRef targetGUID="{code_guid}"/>{notes}</Coding>'
        "</PlainTextSelection>"
    )


def note_refs(note_guids):
    return "".join(f'<NoteRef targetGUID="{note}"/>' for note in note_guids)


def source_open_xml(guid, name, user_guid=None, created=None):
    """A TextSource's start tag (its text in Sources/<guid>.txt)."""
    return (
        f'<TextSource guid="{guid}" name={_qa(name)} plainTextPath="internal://{guid}.txt"'
        f"{_safe('creatingUser', user_guid)}{_safe('creationDateTime', _dt(created))}>"
    )


def variable_value_xml(var_guid, kind, value):
    """A VariableValue ("" for no value)."""
    if value is None or value == "":
        return ""
    tag = VALUE_TAGS[kind]
    text = ("true" if value else "false") if kind == "Boolean" else xml_text(str(value)).translate(_TEXT_ESCAPES)
    return f'<VariableValue><VariableRef targetGUID="{var_guid}"/><{tag}>{text}</{tag}></VariableValue>'


def _coding_xml(coding, parts):
    parts.append(
        coding_xml(coding.guid, coding.code_guid, coding.user_guid, _dt(coding.created), note_refs(coding.note_guids))
    )


def source_xml(source, variable_types):
    """One TextSource as XML text. Hand-built: this is the hot path of large exports (GUIDs and integers need no
    escaping; names and values are escaped)."""
    parts = [source_open_xml(source.guid, source.name, source.user_guid, source.created)]
    for sel in source.selections:
        parts.append(
            f'<PlainTextSelection guid="{sel.guid}"{_opt("name", sel.name)} startPosition="{int(sel.start)}" '
            f'endPosition="{int(sel.end)}"{_safe("creatingUser", sel.user_guid)}'
            f"{_safe('creationDateTime', _dt(sel.created))}>"
        )
        for coding in sel.codings:
            _coding_xml(coding, parts)
        for note in sel.note_guids:
            parts.append(f'<NoteRef targetGUID="{note}"/>')
        parts.append("</PlainTextSelection>")
    for coding in source.codings:
        _coding_xml(coding, parts)
    for note in source.note_guids:
        parts.append(f'<NoteRef targetGUID="{note}"/>')
    for var_guid, value in source.variables:
        parts.append(variable_value_xml(var_guid, variable_types.get(var_guid, "Text"), value))
    parts.append("</TextSource>\n")
    return "".join(parts)


def add_deflated(zf, name, data: bytes, date_time):
    """Add a member to a ZipFile open for writing, compressed here in one call (level 1, as the archive's own
    members): ZipFile.writestr writes a header, seeks back to patch it with the sizes and CRC, and seeks forward
    again, three seeks (each a flush of the file's buffer) per member, which an export of 10,000 stories pays
    10,000 times. The local header is written once, with the sizes known."""
    zinfo = zipfile.ZipInfo(name, date_time)
    zinfo.compress_type = zipfile.ZIP_DEFLATED
    zinfo.external_attr = 0o600 << 16  # ?rw-------, as writestr
    payload = zlib.compress(data, 1, -15)
    zinfo.file_size, zinfo.compress_size, zinfo.CRC = len(data), len(payload), zlib.crc32(data)
    header = zinfo.FileHeader(None)
    zinfo.header_offset = zf.start_dir
    zf.fp.write(header)
    zf.fp.write(payload)
    zf.start_dir += len(header) + len(payload)
    zf.filelist.append(zinfo)
    zf.NameToInfo[name] = zinfo


class _DeflatedMember:
    """A member written in pieces and compressed as they come (level 1) into a temporary file of compressed bytes,
    its CRC and sizes kept: added to the archive at the end (`add_to`) without writing and reading back its
    uncompressed text (project.qde of 10,000 stories is some 40 MB of XML and 5 MB compressed)."""

    CHUNK = 1 << 20

    def __init__(self, name):
        self.name, self.pending, self.pending_size = name, [], 0
        self.crc = self.size = 0
        self.compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
        self.spool = tempfile.TemporaryFile()

    def write(self, data: bytes):
        self.pending.append(data)
        self.pending_size += len(data)
        if self.pending_size >= self.CHUNK:
            self._compress()

    def _compress(self):
        data = b"".join(self.pending)
        self.pending, self.pending_size = [], 0
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        self.spool.write(self.compressor.compress(data))

    def add_to(self, zf, date_time):
        self._compress()
        self.spool.write(self.compressor.flush())
        zinfo = zipfile.ZipInfo(self.name, date_time)
        zinfo.compress_type = zipfile.ZIP_DEFLATED
        zinfo.external_attr = 0o600 << 16
        zinfo.file_size, zinfo.compress_size, zinfo.CRC = self.size, self.spool.tell(), self.crc
        header = zinfo.FileHeader(True)  # zip64 sizes, as zf.open(..., force_zip64=True) wrote them
        zinfo.header_offset = zf.start_dir
        zf.fp.write(header)
        self.spool.seek(0)
        for chunk in iter(lambda: self.spool.read(self.CHUNK), b""):
            zf.fp.write(chunk)
        zf.start_dir += len(header) + zinfo.compress_size
        zf.filelist.append(zinfo)
        zf.NameToInfo[self.name] = zinfo

    def close(self):
        self.spool.close()


def write_qdpx(target, project: QProject, progress=None, finish=None):
    """Write a .qdpx ZIP to `target` (path or binary file object). `project.sources` may be a generator: each
    source's text goes to Sources/<guid>.txt at once and its XML to a temporary project.qde, so memory stays
    flat. `finish(counts)` may return {member name: bytes} added after project.qde (e.g. a manifest that needs the
    counts), in the same pass. Returns counts."""
    counts = {
        "sources": 0,
        "selections": 0,
        "codings": 0,
        "notes": len(project.notes),
        "codes": sum(1 for _ in project.all_codes()),
        "users": len(project.users),
    }
    variable_types = {v.guid: v.type for v in project.variables}

    def put(element):
        qde.write(etree.tostring(element, encoding="utf-8"))
        qde.write(b"\n")

    with (
        contextlib.closing(_DeflatedMember("project.qde")) as qde,
        zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True) as zf,
    ):
        written_at = time.localtime()[:6]
        qde.write(b'<?xml version="1.0" encoding="utf-8"?>\n')
        qde.write(
            f'<Project xmlns="{NS}" name={_qa(project.name)}{_opt("origin", project.origin)}'
            f"{_opt('creationDateTime', _dt(project.created))}>\n".encode("utf-8")
        )
        if project.users:
            put(_el("Users", children=[_el("User", _attrs(guid=u.guid, name=xml_text(u.name))) for u in project.users]))
        if project.codes:
            put(_el("CodeBook", children=[_el("Codes", children=[_code_element(c) for c in project.codes])]))
        if project.variables:
            put(
                _el(
                    "Variables",
                    children=[
                        _el(
                            "Variable",
                            _attrs(guid=v.guid, name=v.name, typeOfVariable=v.type),
                            children=[_el("Description", text=v.description)] if v.description else [],
                        )
                        for v in project.variables
                    ],
                )
            )
        opened = False
        for source in project.sources:
            if not opened:
                qde.write(b"<Sources>\n")
                opened = True
            add_deflated(zf, f"Sources/{source.guid}.txt", source.text.encode("utf-8"), written_at)
            counts["sources"] += 1
            if isinstance(source, RenderedSource):
                qde.write(source.xml.encode("utf-8"))
                counts["selections"] += source.selections
                counts["codings"] += source.codings
            else:
                qde.write(source_xml(source, variable_types).encode("utf-8"))
                counts["selections"] += len(source.selections)
                counts["codings"] += len(source.codings) + sum(len(s.codings) for s in source.selections)
            if progress and counts["sources"] % 500 == 0:
                progress(counts)
        if opened:
            qde.write(b"</Sources>\n")
        if project.notes:
            put(
                _el(
                    "Notes",
                    children=[
                        _el(
                            "Note",
                            _attrs(
                                guid=n.guid,
                                name=xml_text(n.name),
                                creatingUser=n.user_guid,
                                creationDateTime=_dt(n.created),
                            ),
                            children=[_el("PlainTextContent", text=n.text)],
                        )
                        for n in project.notes
                    ],
                )
            )
        if project.sets:
            put(
                _el(
                    "Sets",
                    children=[
                        _el(
                            "Set",
                            _attrs(guid=q.guid, name=xml_text(q.name)),
                            children=([_el("Description", text=q.description)] if q.description else [])
                            + [_el("MemberCode", {"targetGUID": g}) for g in q.code_guids],
                        )
                        for q in project.sets
                    ],
                )
            )
        if project.description:
            put(_el("Description", text=project.description))
        qde.write(b"</Project>\n")
        qde.add_to(zf, written_at)
        for name, data in (finish(counts) if finish else {}).items():
            zf.writestr(name, data)
    return counts


# --- reading ------------------------------------------------------------------------------------------------

_schemas = {}


def schema(name="Project.xsd"):
    if name not in _schemas:
        _schemas[name] = etree.XMLSchema(etree.parse(str(SCHEMA_DIR / name), parser=safe_parser()))
    return _schemas[name]


def safe_parser():
    """No entity expansion (XXE, billion laughs), no DTD loading, no network."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=True,
        remove_comments=True,
    )


def parse_xml(data: bytes, what="project.qde"):
    if b"<!DOCTYPE" in data[:4096] or b"<!ENTITY" in data[:65536]:
        raise RefiError(f"{what}: a DOCTYPE or ENTITY declaration is not allowed in REFI-QDA files.")
    try:
        return etree.fromstring(data, parser=safe_parser())
    except etree.XMLSyntaxError as exc:
        raise RefiError(f"{what} is not well-formed XML: {exc}") from exc


def validate(root, schema_name, what):
    xsd = schema(schema_name)
    if not xsd.validate(root):
        problems = []
        for error in list(xsd.error_log)[:10]:
            message = error.message.replace(f"{{{NS}}}", "")
            problems.append(f"{what} line {error.line}: {message}")
        raise RefiError(problems)


def _q(tag, ns=NS):
    return f"{{{ns}}}{tag}"


def _parse_dt(value):
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _parse_code(element, ns, notes=True):
    code = QCode(
        guid=normalise_guid(element.get("guid")),
        name=element.get("name", ""),
        codable=element.get("isCodable", "true").strip() in ("true", "1"),
        color=element.get("color"),
        line=element.sourceline,
    )
    description = element.find(_q("Description", ns))
    code.description = (description.text or "") if description is not None else ""
    if notes:
        code.note_guids = [normalise_guid(n.get("targetGUID")) for n in element.findall(_q("NoteRef", ns))]
    code.children = [_parse_code(child, ns, notes) for child in element.findall(_q("Code", ns))]
    return code


def _parse_coding(element):
    ref = element.find(_q("CodeRef"))
    return QCoding(
        guid=normalise_guid(element.get("guid")),
        code_guid=normalise_guid(ref.get("targetGUID")),
        user_guid=normalise_guid(element.get("creatingUser")),
        created=_parse_dt(element.get("creationDateTime")),
        note_guids=[normalise_guid(n.get("targetGUID")) for n in element.findall(_q("NoteRef"))],
        line=element.sourceline,
    )


def normalise_newlines(raw: str):
    """(normalised text, function mapping an offset in the raw text to the normalised one)."""
    removed = [m.start() for m in re.finditer("\r\n", raw)]  # each \r of a \r\n pair disappears
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    if not removed:
        return text, lambda pos: pos
    return text, lambda pos: pos - bisect.bisect_left(removed, pos)


def _source_text(element, zf, names, base_path, problems):
    """The plain text of a TextSource: inline PlainTextContent, or the file its plainTextPath names."""
    label = f"TextSource '{element.get('name', '')}' (line {element.sourceline})"
    content = element.find(_q("PlainTextContent"))
    if content is not None:
        return content.text or ""
    path = (element.get("plainTextPath") or "").strip()
    if not path:
        problems.append(f"{label} has neither PlainTextContent nor a plainTextPath.")
        return None
    if path.startswith("internal://"):
        candidates = [f"Sources/{path[len('internal://') :]}"]
    elif path.startswith("relative://"):
        rel = path[len("relative://") :].lstrip("/").replace("\\", "/")
        candidates = [f"Sources/{rel}", rel, f"Sources/{rel.rsplit('/', 1)[-1]}"]
        if base_path:
            candidates.append(f"{base_path.rstrip('/')}/{rel}")
    elif path.startswith("absolute://"):
        problems.append(
            f"{label}: plainTextPath {path} points outside the project file; include the source "
            f"in the .qdpx (internal://) instead."
        )
        return None
    else:
        candidates = [f"Sources/{path}", path]
    member = next((c for c in candidates if c in names and ".." not in c.split("/")), None)
    if member is None:
        problems.append(f"{label}: the source file {path} is missing from the .qdpx.")
        return None
    info = zf.getinfo(member)
    if info.file_size > MAX_SOURCE_BYTES:
        problems.append(f"{label}: the source file {member} is larger than {MAX_SOURCE_BYTES // 2**20} MB.")
        return None
    data = zf.read(member)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(f"{label}: the source file {member} is not UTF-8 text ({exc.reason} at byte {exc.start}).")
        return None


def read_qdpx(data) -> QProject:
    """Parse and check a .qdpx (bytes or file object). Raises RefiError listing what is wrong."""
    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        zf = zipfile.ZipFile(stream)
    except zipfile.BadZipFile:
        raise RefiError("The file is not a .qdpx: it is not a ZIP archive.") from None
    with zf:
        infos = zf.infolist()
        if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
            raise RefiError(f"The .qdpx unpacks to more than {MAX_TOTAL_BYTES // 2**20} MB; refusing to read it.")
        names = {i.filename for i in infos}
        qde_name = (
            "project.qde"
            if "project.qde" in names
            else next((n for n in names if n.lower().endswith(".qde") and "/" not in n), None)
        )
        if qde_name is None:
            raise RefiError("The .qdpx has no project.qde at its top level.")
        if zf.getinfo(qde_name).file_size > MAX_PROJECT_BYTES:
            raise RefiError(f"project.qde is larger than {MAX_PROJECT_BYTES // 2**20} MB once uncompressed.")
        try:
            raw = zf.read(qde_name)
        except (zipfile.BadZipFile, OSError) as exc:
            raise RefiError(f"project.qde cannot be read from the ZIP: {exc}") from exc
        root = parse_xml(raw)
        if root.tag != _q("Project"):
            raise RefiError(
                f"project.qde: the root element is {etree.QName(root).localname!r} in namespace "
                f"{etree.QName(root).namespace!r}; expected Project in {NS}."
            )
        validate(root, "Project.xsd", "project.qde")
        return _project_from_tree(root, zf, names)


def _project_from_tree(root, zf, names):
    problems = []
    project = QProject(
        name=root.get("name", ""), origin=root.get("origin", ""), created=_parse_dt(root.get("creationDateTime"))
    )
    users = root.find(_q("Users"))
    project.users = [
        QUser(guid=normalise_guid(u.get("guid")), name=u.get("name") or u.get("id") or "")
        for u in (users if users is not None else [])
    ]
    codebook = root.find(_q("CodeBook"))
    if codebook is not None:
        project.codes = [_parse_code(c, NS) for c in codebook.find(_q("Codes")).findall(_q("Code"))]
    variables = root.find(_q("Variables"))
    project.variables = [
        QVariable(guid=normalise_guid(v.get("guid")), name=v.get("name"), type=v.get("typeOfVariable"))
        for v in (variables if variables is not None else [])
    ]
    var_names = {v.guid: v for v in project.variables}
    sources = []
    sources_el = root.find(_q("Sources"))
    base_path = root.get("basePath") or ""
    for element in sources_el if sources_el is not None else []:
        tag = etree.QName(element).localname
        if tag != "TextSource":
            problems.append(
                f"{tag} '{element.get('name', '')}' (line {element.sourceline}): only text sources can be imported."
            )
            continue
        raw = _source_text(element, zf, names, base_path, problems)
        if raw is None:
            continue
        text, remap = normalise_newlines(raw)
        source = QSource(
            guid=normalise_guid(element.get("guid")),
            name=element.get("name") or "",
            text=text,
            user_guid=normalise_guid(element.get("creatingUser")),
            created=_parse_dt(element.get("creationDateTime")),
            line=element.sourceline,
        )
        for sel in element.findall(_q("PlainTextSelection")):
            start, end = int(sel.get("startPosition")), int(sel.get("endPosition"))
            label = f"PlainTextSelection {sel.get('guid')} (line {sel.sourceline}) in source '{source.name}'"
            if start < 0 or end < start:
                problems.append(f"{label}: startPosition {start} and endPosition {end} do not make a span.")
                continue
            if end > len(raw):
                problems.append(f"{label}: endPosition {end} is past the end of the text ({len(raw)} characters).")
                continue
            source.selections.append(
                QSelection(
                    guid=normalise_guid(sel.get("guid")),
                    start=remap(start),
                    end=remap(end),
                    name=sel.get("name") or "",
                    user_guid=normalise_guid(sel.get("creatingUser")),
                    created=_parse_dt(sel.get("creationDateTime")),
                    codings=[_parse_coding(c) for c in sel.findall(_q("Coding"))],
                    note_guids=[normalise_guid(n.get("targetGUID")) for n in sel.findall(_q("NoteRef"))],
                    line=sel.sourceline,
                )
            )
        source.codings = [_parse_coding(c) for c in element.findall(_q("Coding"))]
        source.note_guids = [normalise_guid(n.get("targetGUID")) for n in element.findall(_q("NoteRef"))]
        for vv in element.findall(_q("VariableValue")):
            ref = normalise_guid(vv.find(_q("VariableRef")).get("targetGUID"))
            if ref not in var_names:
                problems.append(
                    f"VariableValue (line {vv.sourceline}) in source '{source.name}': VariableRef {ref} "
                    f"names no Variable."
                )
                continue
            value_el = next((c for c in vv if etree.QName(c).localname != "VariableRef"), None)
            source.variables.append((ref, value_el.text if value_el is not None else None))
        sources.append(source)
    project.sources = sources
    notes = root.find(_q("Notes"))
    for element in notes if notes is not None else []:
        content = element.find(_q("PlainTextContent"))
        text = content.text if content is not None else _source_text(element, zf, names, base_path, problems)
        project.notes.append(
            QNote(
                guid=normalise_guid(element.get("guid")),
                name=element.get("name") or "",
                text=(text or "").replace("\r\n", "\n"),
                user_guid=normalise_guid(element.get("creatingUser")),
                created=_parse_dt(element.get("creationDateTime")),
                line=element.sourceline,
            )
        )
    sets = root.find(_q("Sets"))
    for element in sets if sets is not None else []:
        project.sets.append(
            QSet(
                guid=normalise_guid(element.get("guid")),
                name=element.get("name") or "",
                code_guids=[normalise_guid(m.get("targetGUID")) for m in element.findall(_q("MemberCode"))],
            )
        )
    problems.extend(check_references(project))
    if problems:
        raise RefiError(problems)
    return project


def check_references(project):
    """Every CodeRef, creatingUser and NoteRef names something in the file; GUIDs are unique; codings point at
    codable codes."""
    problems = []
    codes = {}
    seen = {}

    def claim(guid, label):
        if guid in seen:
            problems.append(f"{label}: GUID {guid} is used twice (also by {seen[guid]}).")
        seen[guid] = label

    for code, _ in project.all_codes():
        claim(code.guid, f"Code '{code.name}' (line {code.line})")
        codes[code.guid] = code
    users = {u.guid for u in project.users}
    for user in project.users:
        claim(user.guid, f"User '{user.name}'")
    notes = {n.guid for n in project.notes}
    for note in project.notes:
        claim(note.guid, f"Note '{note.name}' (line {note.line})")

    def check_coding(coding, where):
        label = f"Coding {coding.guid} (line {coding.line}) {where}"
        claim(coding.guid, label)
        code = codes.get(coding.code_guid)
        if code is None:
            problems.append(f"{label}: CodeRef {coding.code_guid} names no Code in the codebook.")
        elif not code.codable:
            problems.append(f"{label}: CodeRef points at '{code.name}', which is not codable (isCodable=false).")
        if coding.user_guid and coding.user_guid not in users:
            problems.append(f"{label}: creatingUser {coding.user_guid} is not in Users.")
        for note in coding.note_guids:
            if note not in notes:
                problems.append(f"{label}: NoteRef {note} names no Note.")

    for q_set in project.sets:
        for guid in q_set.code_guids:
            if guid not in codes:
                problems.append(f"Set '{q_set.name}': MemberCode {guid} names no Code in the codebook.")
    for code, _ in project.all_codes():
        for note in code.note_guids:
            if note not in notes:
                problems.append(f"Code '{code.name}' (line {code.line}): NoteRef {note} names no Note.")
    for source in project.sources:
        claim(source.guid, f"TextSource '{source.name}' (line {source.line})")
        for note in source.note_guids:
            if note not in notes:
                problems.append(f"TextSource '{source.name}' (line {source.line}): NoteRef {note} names no Note.")
        for sel in source.selections:
            claim(sel.guid, f"PlainTextSelection (line {sel.line})")
            if sel.user_guid and sel.user_guid not in users:
                problems.append(
                    f"PlainTextSelection {sel.guid} (line {sel.line}): creatingUser {sel.user_guid} is not in Users."
                )
            for coding in sel.codings:
                check_coding(coding, f"in a selection of source '{source.name}'")
        for coding in source.codings:
            check_coding(coding, f"on source '{source.name}'")
    return problems
