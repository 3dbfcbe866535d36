"""Hostile inputs that cost little to send and much to read (issue 32), and a meter for what reading them cost.

`measure(fn)` runs fn and returns (result or exception, CPU seconds, peak RSS growth in bytes): CPU time of this
process (so other processes on a loaded machine do not count), and the peak RSS (VmHWM), which is reset through
/proc/self/clear_refs first, so a bomb that inflates and is freed again still shows."""

import functools
import io
import time
import zipfile

MB = 1024 * 1024


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(field)


def measure(fn):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    before = _status("VmRSS")
    started = time.process_time()
    try:
        result = fn()
    except Exception as exc:  # the caller asserts on it
        result = exc
    seconds = time.process_time() - started
    return result, seconds, _status("VmHWM") - before


def yaml_alias_bomb(levels=7, width=10):
    """A few hundred bytes that expand to width**levels strings (ten million for 7 x 10), in a context's
    attributes, as in the report."""
    lines = ["format: stereoscope-recipe", "format_version: 1", "study: {name: Bomb}", "a0: &a0 [lol]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    lines.append("context_sets:")
    lines.append("  - {name: ctx, contexts: [{name: c1, text: t, attributes: {bomb: *a%d}}]}" % levels)
    return "\n".join(lines) + "\n"


def deep_yaml(depth):
    """A recipe whose study description nests `depth` flow lists."""
    return "format: stereoscope-recipe\nformat_version: 1\nstudy: {name: Deep, description: %s}\n" % (
        "[" * depth + "]" * depth
    )


def zip_bomb(members, *, inflated=200 * MB):
    """A ZIP whose `members` are {name: bytes}; the member named '*' is replaced by `inflated` bytes of spaces
    (compressing to a few hundred KB)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, content in members.items():
            if content is None:
                with zf.open(name, "w", force_zip64=True) as out:
                    chunk = b" " * MB
                    for _ in range(inflated // MB):
                        out.write(chunk)
            else:
                zf.writestr(name, content)
    return buffer.getvalue()


XLSX_PARTS = {
    "[Content_Types].xml": (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        b'<Default Extension="xml" ContentType="application/xml"/>'
        b'<Override PartName="/xl/workbook.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        b'<Override PartName="/xl/worksheets/sheet1.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        b"</Types>"
    ),
    "_rels/.rels": (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'officeDocument" Target="xl/workbook.xml"/></Relationships>'
    ),
    "xl/workbook.xml": (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        b'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        b'<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
    ),
    "xl/_rels/workbook.xml.rels": (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'worksheet" Target="worksheets/sheet1.xml"/></Relationships>'
    ),
}


def xlsx_with_sheet(sheet_xml):
    return zip_bomb({**XLSX_PARTS, "xl/worksheets/sheet1.xml": sheet_xml})


def xlsx_undefined_entity():
    """A workbook saved by openpyxl (model, item, text columns) whose sheet then gets an entity reference (&bogus;)
    that nothing defines: it opens, and fails while its rows are read."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["model", "item", "text"])
    sheet.append(["m", "1", "MARKER"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"MARKER", b"text&bogus;")
                if b"&bogus;" not in data:  # the text is in the shared strings
                    raise AssertionError("no inline text to change")
            elif info.filename == "xl/sharedStrings.xml" and b"MARKER" in data:
                data = data.replace(b"MARKER", b"text")
            zf.writestr(info, data)
    return out.getvalue()


@functools.lru_cache
def xlsx_bomb(inflated=200 * MB):
    """A valid-looking workbook whose sheet part inflates to `inflated` bytes."""
    return zip_bomb({**XLSX_PARTS, "xl/worksheets/sheet1.xml": None}, inflated=inflated)


@functools.lru_cache
def qdpx_bomb(inflated=100 * MB):
    """A .qdpx whose project.qde inflates to `inflated` bytes."""
    return zip_bomb({"project.qde": None}, inflated=inflated)
