"""The REFI-QDA XML layer on its own (no database)."""

import datetime
import io
import zipfile

import pytest
from lxml import etree

from annotation import refi_qda as rq
from tests.conftest import REPO_ROOT

XSD = str(REPO_ROOT / "annotation" / "refi_schemas" / "Project.xsd")  # the project's copy of the schema


def sample_project():
    dim = rq.QCode(
        guid=rq.stable_guid("dim"),
        name="Leadership",
        codable=False,
        children=[
            rq.QCode(guid=rq.stable_guid("c1"), name="M charisma", color="#ff0000", description="charisma <b>"),
            rq.QCode(guid=rq.stable_guid("c2"), name="F caring"),
        ],
    )
    user = rq.QUser(guid=rq.stable_guid("u"), name="alice")
    var = rq.QVariable(guid=rq.stable_guid("v"), name="model")
    note = rq.QNote(guid=rq.stable_guid("n"), name="memo", text="why & how", user_guid=user.guid)
    text = "She led. \u00e9t\u00e9 \U0001f600 He cared."
    sel = rq.QSelection(
        guid=rq.stable_guid("s"),
        start=0,
        end=8,
        user_guid=user.guid,
        codings=[
            rq.QCoding(
                guid=rq.stable_guid("k1"), code_guid=dim.children[0].guid, user_guid=user.guid, note_guids=[note.guid]
            )
        ],
    )
    source = rq.QSource(
        guid=rq.stable_guid("src"),
        name="Story 1",
        text=text,
        selections=[sel],
        codings=[rq.QCoding(guid=rq.stable_guid("k2"), code_guid=dim.children[1].guid, user_guid=user.guid)],
        variables=[(var.guid, "gpt-4o")],
    )
    return rq.QProject(
        name="P", origin="test", users=[user], codes=[dim], variables=[var], sources=iter([source]), notes=[note]
    )


def test_write_validates_against_the_published_xsd_and_reads_back():
    buffer = io.BytesIO()
    counts = rq.write_qdpx(buffer, sample_project())
    assert counts["sources"] == 1 and counts["codings"] == 2 and counts["codes"] == 3
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zf:
        names = set(zf.namelist())
        qde = zf.read("project.qde")
    assert names == {"project.qde", f"Sources/{rq.stable_guid('src')}.txt"}
    schema = etree.XMLSchema(etree.parse(XSD))
    assert schema.validate(etree.fromstring(qde)), schema.error_log
    project = rq.read_qdpx(buffer.getvalue())
    source = project.sources[0]
    assert source.text.endswith("He cared.") and "\U0001f600" in source.text
    assert (source.selections[0].start, source.selections[0].end) == (0, 8)
    assert source.text[0:8] == "She led."
    assert source.variables == [(rq.stable_guid("v"), "gpt-4o")]
    assert project.codes[0].codable is False and project.codes[0].children[0].description == "charisma <b>"
    assert project.notes[0].text == "why & how"


def test_crlf_offsets_are_mapped_onto_normalised_text():
    raw = "ab\r\ncd\r\nef"
    text, remap = rq.normalise_newlines(raw)
    assert text == "ab\ncd\nef"
    for start, end in [(0, 2), (4, 6), (8, 10), (2, 6)]:
        assert text[remap(start) : remap(end)] == raw[start:end].replace("\r\n", "\n")


def test_guids_in_braces_and_upper_case_are_normalised():
    assert rq.normalise_guid("{ABCDEF01-2345-6789-ABCD-EF0123456789}") == "abcdef01-2345-6789-abcd-ef0123456789"
    assert rq.normalise_guid("nope") is None


def test_entities_are_refused():
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><Project xmlns="urn:QDA-XML:project:1.0" name="&a;"/>'
    )
    with pytest.raises(rq.RefiError, match="DOCTYPE"):
        rq.parse_xml(bomb)


def test_derived_guid_is_the_xor_of_the_uuid_in_canonical_form():
    import random
    import uuid

    rng = random.Random(11)
    for _ in range(500):
        value = uuid.UUID(int=rng.getrandbits(128))
        expected = str(uuid.UUID(int=value.int ^ 0x5E1EC7))
        for form in (str(value), str(value).upper(), "{" + str(value) + "}", value.urn, value.hex):
            assert rq.derived_guid(form, 0x5E1EC7) == expected


def test_rendered_sources_match_the_object_writer():
    """An export's RenderedSource (XML built from its rows with the span/coding helpers) writes the same bytes as
    the same source given as a QSource (selections with one coding each, document codings, notes, variables)."""
    when = "2026-01-02T03:04:05Z"
    user, code, note = rq.stable_guid("u"), rq.stable_guid("c"), rq.stable_guid("n")
    variables = [rq.QVariable(guid=rq.stable_guid("v", kind), name=kind, type=kind) for kind in ("Text", "Integer")]
    types = {v.guid: v.type for v in variables}
    values = [(variables[0].guid, 'a & <b> "c"\x01'), (variables[1].guid, 3)]
    span = rq.QCoding(guid=rq.stable_guid("k1"), code_guid=code, user_guid=user, created=when, note_guids=[note])
    document = rq.QCoding(guid=rq.stable_guid("k2"), code_guid=code, user_guid=user, created=when)
    source = rq.QSource(
        guid=rq.stable_guid("src"),
        name="Story <1> & \u00e9t\u00e9",
        text="She led.",
        selections=[
            rq.QSelection(guid=rq.stable_guid("s"), start=0, end=3, user_guid=user, created=when, codings=[span])
        ],
        codings=[document],
        variables=values,
        note_guids=[note],
        created=when,
    )
    rendered = "".join(
        [
            rq.source_open_xml(source.guid, source.name, None, when),
            rq.span_coding_xml(rq.stable_guid("s"), 0, 3, span.guid, code, user, when, rq.note_refs([note])),
            rq.coding_xml(document.guid, code, user, when),
            rq.note_refs([note]),
            "".join(rq.variable_value_xml(guid, types[guid], value) for guid, value in values),
            "</TextSource>\n",
        ]
    )
    assert rendered == rq.source_xml(source, types)

    def qde(item):
        out = io.BytesIO()
        project = rq.QProject(name="P", variables=variables, sources=iter([item]), users=[rq.QUser(user, "u")])
        project.created = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        project.codes, project.notes = [rq.QCode(guid=code, name="c")], [rq.QNote(guid=note, name="n", text="t")]
        counts = rq.write_qdpx(out, project)
        with zipfile.ZipFile(out) as zf:
            assert zf.testzip() is None
            assert rq.read_qdpx(out.getvalue()).sources[0].text == "She led."
            return counts, {name: zf.read(name) for name in zf.namelist()}

    as_object = qde(source)
    assert qde(rq.RenderedSource(source.guid, source.text, rendered, 1, 2)) == as_object
    assert as_object[0]["codings"] == 2 and as_object[0]["selections"] == 1


def test_a_project_qde_of_several_compressed_pieces_reads_back():
    """project.qde is compressed a piece (about 1 MB) at a time as it is written: a file of several pieces keeps
    its CRC and sizes right and reads back whole."""
    user, code = rq.QUser(rq.stable_guid("u"), "u"), rq.QCode(guid=rq.stable_guid("c"), name="c")
    sources = [
        rq.QSource(guid=rq.stable_guid("src", n), name=f"story {n} " + "é" * 400_000, text=f"text {n}")
        for n in range(4)
    ]
    out = io.BytesIO()
    rq.write_qdpx(out, rq.QProject(name="P", users=[user], codes=[code], sources=iter(sources)))
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        assert zf.getinfo("project.qde").file_size > 3 * rq._DeflatedMember.CHUNK
    assert [s.name for s in rq.read_qdpx(out.getvalue()).sources] == [s.name for s in sources]
