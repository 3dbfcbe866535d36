"""Guards for files and bodies from users, shared by every import: JSON too deeply nested, NUL characters, and XLSX
workbooks whose XML declares a DOCTYPE or entities. Django-free; each raises or returns a clear message."""

import json
import math
import re
import zipfile
from collections.abc import Iterable
from typing import Any, NoReturn

MB = 1024 * 1024

# Longest texts a study needs, in characters (README, "Limits on input"): a prompt item is a few sentences, a story a
# few KB, a memo a paragraph. Longer texts are refused with a message saying the limit.
MAX_ITEM_TEXT = 20_000  # a toolkit item's prompt text
MAX_ITEM_NOTE = 5_000  # an item's target stereotype and notes
MAX_STORY_TEXT = 200_000  # an imported or manually entered output (a long model answer fits)
MAX_MEMO_TEXT = 20_000  # a memo


def too_long(text: object, limit: int, what: str) -> str | None:
    """A message when `text` is longer than `limit` characters, else None."""
    if isinstance(text, str) and len(text) > limit:
        return f"{what} is {len(text):,} characters long; the limit is {limit:,}."
    return None


# A workbook is refused (a zip bomb) when its parts inflate beyond these, before any part is read: the XML parser
# holds a part's text and its tree, so memory is a few times these figures. A sheet of 200,000 short stories fits.
MAX_XLSX_UNCOMPRESSED = 100 * MB
MAX_XLSX_MEMBER = 64 * MB


def loads_json(text: str | bytes | bytearray) -> Any:
    """json.loads that answers a too deeply nested document, one with a NUL character in a string (\\u0000), or one
    with NaN or ±Infinity (not JSON, and no database stores them; 1e999 overflows to Infinity) with a JSONDecodeError
    (a ValueError) instead of a RecursionError or a database error later, so every caller's "not valid JSON" message
    applies."""
    doc = text if isinstance(text, str) else ""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise json.JSONDecodeError("it is nested too deeply", doc, 0) from None
    except NonFiniteNumber as exc:
        raise json.JSONDecodeError(str(exc), doc, 0) from None
    if nul_problem(value):
        raise json.JSONDecodeError("it contains a NUL character (\\u0000), which cannot be stored", doc, 0)
    if nonfinite_path(value) is not None:
        raise json.JSONDecodeError("it contains a number too large to store (it overflows to Infinity)", doc, 0)
    return value


class NonFiniteNumber(ValueError):
    pass


_WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")


def whole_number(value: object) -> int | None:
    """A non-negative whole number from a form, URL, API or file value (`12`, `" 12 "`), else None.

    ASCII digits only, at most 18 (a bigint): str.isdigit() also passes '²', which int() refuses (a 500 where a
    page or an API call reads an id), and a long run of digits overflows the database's integers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10**18 else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else None


def whole_numbers(values: Iterable[object]) -> list[int]:
    """The whole numbers among `values` (a form's list of ids), others left out."""
    return [number for value in values if (number := whole_number(value)) is not None]


def _refuse_constant(name: str) -> NoReturn:
    raise NonFiniteNumber(f"{name} is not a JSON number; write a finite number")


def _children(level: list[object]) -> list[object]:
    """The values of the dicts and lists in `level` (one level down)."""
    out: list[object] = []
    for item in level:
        if isinstance(item, dict):
            out.extend(item.values())
        elif isinstance(item, (list, tuple)):
            out.extend(item)
    return out


def _any_nonfinite(value: object) -> bool:
    """Whether `value` holds NaN or ±Infinity anywhere: a level at a time, without paths (a 100,000-row file in a
    fraction of the time nonfinite_path's walk takes)."""
    level = [value]
    while level:
        if any(isinstance(item, float) and not math.isfinite(item) for item in level):
            return True
        level = _children(level)
    return False


def nonfinite_path(value: object) -> list[str | int] | None:
    """The path (a list of keys and indexes) of the first NaN or ±Infinity in `value` (numbers, or dicts and lists of
    them), else None. JSON has no such numbers and PostgreSQL refuses them in a JSON column."""
    if not _any_nonfinite(value):
        return None
    stack: list[tuple[object, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return path
        elif isinstance(item, dict):
            stack.extend((v, [*path, k]) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, [*path, i]) for i, v in enumerate(item))
    return None


def nesting_deeper_than(value: object, limit: int) -> bool:
    """Whether `value` (dicts and lists) nests more than `limit` levels, read a level at a time."""
    level, depth = [value], 0
    while level:
        containers: list[object] = [item for item in level if isinstance(item, (dict, list))]
        if not containers:
            return False
        depth += 1
        if depth > limit:
            return True
        level = _children(containers)
    return False


def nonfinite_problem(value: object, where: str = "The value") -> str | None:
    """A message when `value` holds NaN or ±Infinity anywhere, else None."""
    path = nonfinite_path(value)
    if path is None:
        return None
    at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return f"{where}{' at ' + at if at else ''} is NaN or Infinity; write a finite number."


def nul_problem(value: object, where: str = "The file") -> str | None:
    """A message when a text anywhere in `value` (str, or dicts and lists of them) holds a NUL character, else None.
    Databases cannot store NUL (PostgreSQL refuses it)."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return f"{where} contains a NUL character (byte 0), which cannot be stored; remove it and try again."
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def without_nul(value: Any) -> Any:
    """`value` with NUL characters removed from every text in it (str, or dicts and lists of them): for what a model
    answered, which is kept rather than refused (a database cannot store NUL)."""
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(without_nul(v) for v in value)
    return value


def xlsx_problem(content: bytes) -> str | None:
    """A message when an XLSX file's XML parts declare a DOCTYPE or entities (entity expansion, external entities)
    or inflate beyond a sane size, else None. Checked before any XML parser sees the file."""
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None  # not a zip at all: the workbook reader explains that
    problem = archive_problem(members, max_member=MAX_XLSX_MEMBER, max_total=MAX_XLSX_UNCOMPRESSED, what="workbook")
    if problem:
        return problem
    for member in members:
        if not member.filename.lower().endswith((".xml", ".rels", ".vml")):
            continue
        try:
            data = archive.read(member)
        except Exception:  # a damaged member: the workbook reader explains that
            return None
        texts = [data.lower()]
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 XML would hide the markers from a byte search
            texts.append(data.decode("utf-16", errors="ignore").lower().encode())
        if any(b"<!doctype" in t or b"<!entity" in t for t in texts):
            return (
                f"The workbook part {member.filename} declares a DOCTYPE or entities; such files are refused "
                "(save the sheet again from a spreadsheet program)."
            )
    return None


def archive_problem(
    members: Iterable[zipfile.ZipInfo], *, max_member: int, max_total: int, what: str = "archive"
) -> str | None:
    """A message when a ZIP's members (ZipInfo list) declare more than `max_member` bytes for one member or
    `max_total` in all once uncompressed, else None. Checked before reading any member: zipfile never inflates a
    member beyond its declared size (a member that lies fails its CRC check), so the declared sizes bound memory."""
    total = 0
    for member in members:
        if member.file_size > max_member:
            return (
                f"The {what} part {member.filename} is {member.file_size // MB:,} MB once uncompressed; "
                f"the limit is {max_member // MB} MB per part."
            )
        total += member.file_size
    if total > max_total:
        return f"The {what} is {total // MB:,} MB once uncompressed; the limit is {max_total // MB} MB."
    return None
