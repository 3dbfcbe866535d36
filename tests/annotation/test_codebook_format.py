from pathlib import Path

import pytest
from lxml import etree

from annotation import codebook_format as fmt
from annotation import services
from annotation.builtin import builtin_specs
from annotation.models import Code, Codebook
from tests.conftest import shared_file

XSD = Path(__file__).resolve().parents[2] / "annotation" / "refi_schemas" / "Codebook.xsd"


def seed_appendix_g():
    lines = shared_file("seeds", "001_8d8d91821ae2a91b.txt").read_text(encoding="utf-8").splitlines()
    start = lines.index("Code System\tFrequency")
    codes = []
    for line in lines[start + 2:]:
        if line.startswith("The codes are color-coded"):
            break
        if line.strip():
            name, freq = line.rsplit("\t", 1)
            codes.append((name, int(freq)))
    total = int(lines[start + 1].rsplit("\t", 1)[1])
    return codes, total


@pytest.mark.django_db
def test_builtin_fang_codebook_matches_appendix_g():
    from stereoscope.builtin import load_builtins

    load_builtins(builtin_specs(), log=lambda *_: None)
    cb = Codebook.objects.get(builtin_key="fang2025-phase2-codes")
    assert cb.locked and cb.study.is_library
    dims = list(cb.codes.filter(parent=None).order_by("order"))
    assert [d.name for d in dims] == ["Leadership", "Relationship", "Sheltered & Challenged", "Family", "Morality", "Personality"]
    assert all(not d.codable for d in dims)
    sums = [sum(c.frequency_reference for c in d.children.all()) for d in dims]
    assert sums == [494, 244, 321, 51, 394, 847]
    seed_codes, seed_total = seed_appendix_g()
    assert seed_total == 2351 == sum(sums)
    leaves = list(Code.objects.filter(codebook=cb, codable=True).order_by("order"))
    assert len(leaves) == 53
    assert [(c.name, c.frequency_reference) for c in leaves] == seed_codes
    colours = {d.name: d.color for d in dims}
    assert all(c.color == colours[c.dimension().name] for c in leaves)
    assert len(set(colours.values())) == 6
    assert Code.objects.get(codebook=cb, name="F protected & sheltered").gender_tag == "F"
    assert Code.objects.get(codebook=cb, name="both win morality awards").gender_tag == ""
    # a second load is a no-op
    assert load_builtins(builtin_specs(), log=lambda *_: None) == []


@pytest.mark.django_db
def test_qdc_export_is_schema_valid_and_round_trips(roles, small_codebook):
    cb, codes = small_codebook(roles["a"])
    services.update_code(codes["care_m"], kind="inductive", stereotype="men as carers", description="Line one\nline two")
    tree = services.codebook_tree(cb)
    data = fmt.tree_to_qdc(tree)
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    assert schema.validate(etree.fromstring(data)), schema.error_log
    back = fmt.parse_qdc(data, name="Copy")
    copy = services.import_codebook(roles["b"], back)
    again = services.codebook_tree(copy)

    def strip(nodes):
        return [{k: v for k, v in n.items() if k not in ("path",)} | {"children": strip(n["children"])} for n in nodes]

    # GUIDs are globally unique: the copy gets new ones, everything else is identical
    def no_guid(nodes):
        return [{k: v for k, v in n.items() if k not in ("guid", "path")} | {"children": no_guid(n["children"])} for n in nodes]

    assert no_guid(again["codes"]) == no_guid(tree["codes"])
    assert [n["guid"] for n in back["codes"]] == [n["guid"] for n in tree["codes"]]
    m = Code.objects.get(codebook=copy, name="M communion")
    assert (m.kind, m.gender_tag, m.shortcut, m.stereotype, m.description) == ("inductive", "M", "4", "men as carers", "Line one\nline two")


MALFORMED = [
    (b"<CodeBook", "well-formed"),
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="a" name="&e;" isCodable="true"/></Codes></CodeBook>', "DOCTYPE"),
    (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code name="x" isCodable="true"/></Codes></CodeBook>', "guid"),
    (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="00000000-0000-0000-0000-00000000000g" name="x" isCodable="true"/></Codes></CodeBook>', "valid REFI-QDA"),
    (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="00000000-0000-0000-0000-000000000001" name="x" isCodable="true" color="red"/></Codes></CodeBook>', "valid REFI-QDA"),
    (b'<Other xmlns="urn:x"/>', "valid REFI-QDA"),
    (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="00000000-0000-0000-0000-000000000001" name="x" isCodable="true"/><Code guid="00000000-0000-0000-0000-000000000001" name="y" isCodable="true"/></Codes></CodeBook>', "appears twice"),
    (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="00000000-0000-0000-0000-000000000001" name="" isCodable="true"/></Codes></CodeBook>', "no name"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("content,message", MALFORMED)
def test_malformed_qdc_is_rejected_and_nothing_saved(roles, content, message):
    before = Codebook.objects.count()
    with pytest.raises(fmt.CodebookFormatError, match=message):
        fmt.parse_qdc(content, name="Bad")
    assert Codebook.objects.count() == before


def test_billion_laughs_is_refused():
    bomb = b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="00000000-0000-0000-0000-000000000001" name="&lol2;" isCodable="true"/></Codes></CodeBook>'
    with pytest.raises(fmt.CodebookFormatError):
        fmt.parse_qdc(bomb)


@pytest.mark.django_db
def test_csv_round_trip_and_errors(roles, small_codebook):
    cb, _ = small_codebook(roles["a"])
    tree = services.codebook_tree(cb)
    text = fmt.tree_to_csv(tree)
    assert text.splitlines()[0] == ",".join(fmt.CSV_COLUMNS)
    assert "Leadership/M charisma" in text
    back = fmt.parse_csv(text, "Copy")
    assert [n["name"] for n, _, _ in fmt.walk(back["codes"])] == [n["name"] for n, _, _ in fmt.walk(tree["codes"])]
    # a hand-written CSV: parents by name
    simple = "name,parent,gender_tag,codable\nFamily,,,false\nF caring mother,Family,F,true\nM absent father,Family,M,\n"
    parsed = fmt.parse_csv(simple.encode("utf-8-sig"), "Hand")
    assert parsed["codes"][0]["codable"] is False and [c["gender_tag"] for c in parsed["codes"][0]["children"]] == ["F", "M"]
    bad = "name,parent,color,gender_tag,shortcut\nA,,#zzz,F,1\nB,Nope,,,\nC,,,X,1\n"
    with pytest.raises(fmt.CodebookFormatError) as exc:
        fmt.parse_csv(bad, "Bad")
    assert any("Nope" in e for e in exc.value.errors)
    with pytest.raises(fmt.CodebookFormatError) as exc:
        fmt.parse_csv("name,color,gender_tag,shortcut\nA,#zzz,F,1\nC,,X,1\n", "Bad")
    joined = " ".join(exc.value.errors)
    assert "#zzz" in joined and "'X'" in joined and "shortcut '1'" in joined
    with pytest.raises(fmt.CodebookFormatError, match="header"):
        fmt.parse_csv("foo\n1\n", "Bad")
    with pytest.raises(fmt.CodebookFormatError, match="UTF-8"):
        fmt.parse_csv(b"name\n\xff\xfe\x00bad", "Bad")


@pytest.mark.django_db
def test_csv_escapes_formulas_and_reads_them_back(roles, small_codebook):
    """Code names and descriptions a spreadsheet would run arrive escaped and come back unchanged on import."""
    cb, codes = small_codebook(roles["a"])
    Code.objects.filter(pk=codes["lead_m"].pk).update(name="=SUM(A1)", description="+1 call")
    Code.objects.filter(pk=codes["care_f"].pk).update(name="@F communion", description="'=already quoted")
    tree = services.codebook_tree(cb)
    text = fmt.tree_to_csv(tree)
    assert "'=SUM(A1)" in text and "'+1 call" in text and "'@F communion" in text and "''=already quoted" in text
    back = fmt.parse_csv(text, "Copy")
    assert ([(n["name"], n["description"]) for n, _, _ in fmt.walk(back["codes"])]
            == [(n["name"], n["description"]) for n, _, _ in fmt.walk(tree["codes"])])
