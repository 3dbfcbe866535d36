import io
import json
import zipfile

from lxml import etree

from annotation import refi_qda as rq
from annotation.models import Code, Coding, Memo
from annotation.refi_services import import_qdpx
from exports.services import write_export
from stereoscope.models import Study
from tests.conftest import REPO_ROOT

PROJECT_XSD = REPO_ROOT / "annotation" / "refi_schemas" / "Project.xsd"  # the project's copy of the REFI-QDA schema

NS = {"q": rq.NS}
XSD = etree.XMLSchema(etree.parse(str(PROJECT_XSD)))


def export_bytes(study, tmp_path, **raw):
    path = tmp_path / "p.qdpx"
    write_export(study, "qdpx", path, options=raw)
    return path.read_bytes()


def signature(study):
    """What must survive a round trip: code path, offsets, quote, coder, memo count per coding."""
    return sorted(
        (
            c.code.path(),
            -1 if c.start is None else c.start,
            -1 if c.end is None else c.end,
            c.quote,
            c.coder.username,
            c.output.text,
            tuple(sorted(m.text for m in c.memos.all())),
        )
        for c in Coding.objects.filter(output__study=study).select_related("code", "coder", "output")
    )


def test_export_is_valid_and_stable(coded_study, tmp_path):
    study = coded_study["study"]
    data = export_bytes(study, tmp_path)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        qde = zf.read("project.qde")
        names = zf.namelist()
        manifest = json.loads(zf.read("manifest.json"))
    root = etree.fromstring(qde)
    assert XSD.validate(root), XSD.error_log
    assert len([n for n in names if n.startswith("Sources/")]) == 6
    users = {u.get("name") for u in root.iterfind("q:Users/q:User", NS)}
    assert {"coder", "second_coder", "researcher", "gpt-4o", "claude-x"} <= users
    dims = root.findall("q:CodeBook/q:Codes/q:Code", NS)
    assert [(d.get("name"), d.get("isCodable")) for d in dims][:2] == [("Leadership", "false"), ("Family", "false")]
    charisma = root.find(".//q:Code[@name='M charisma in leadership']", NS)
    assert charisma.get("guid") == str(coded_study["codes"]["charisma"].guid)
    assert charisma.getparent().get("name") == "Charisma"
    source = root.find("q:Sources/q:TextSource", NS)
    assert source.get("plainTextPath") == f"internal://{source.get('guid')}.txt"
    sel = source.find("q:PlainTextSelection", NS)
    assert sel.find("q:Coding/q:CodeRef", NS).get("targetGUID") == charisma.get("guid")
    assert sel.find("q:Coding", NS).get("creatingUser") == rq.stable_guid("user", coded_study["coders"][0].pk)
    assert source.find("q:Coding", NS) is not None  # document-level coding under the TextSource
    variables = {v.get("guid"): v.get("name") for v in root.iterfind("q:Variables/q:Variable", NS)}
    values = {
        variables[vv.find("q:VariableRef", NS).get("targetGUID")]: vv[1].text
        for vv in source.iterfind("q:VariableValue", NS)
    }
    assert values["model"] == "gpt-4o" and values["item"] == "1" and values["dimension"] == "Leadership"
    assert values["trial"] == "1" and values["gender_attribution"] == "F"
    notes = root.findall("q:Notes/q:Note", NS)
    assert len(notes) == 3
    assert notes[0].find("q:PlainTextContent", NS).text == "Charisma, clearly.\nSecond line & <tag>"
    judge_codings = root.findall(f".//q:Code[@guid='{rq.stable_guid('judge-verdicts')}']", NS)
    assert judge_codings and judge_codings[0].get("isCodable") == "false"
    assert manifest["row_counts"]["sources"] == 6 and manifest["judge_rounds"][0]["name"] == "Round 1"
    # stable: a second export has the same project.qde apart from the creation time
    again = zipfile.ZipFile(io.BytesIO(export_bytes(study, tmp_path))).read("project.qde")

    def strip(b):
        return etree.tostring(etree.fromstring(b)).replace(root.get("creationDateTime").encode(), b"")

    assert strip(again).count(b"guid=") == strip(qde).count(b"guid=")
    assert etree.fromstring(again).find("q:Sources/q:TextSource", NS).get("guid") == source.get("guid")
    assert [e.get("guid") for e in etree.fromstring(again).iter()] == [e.get("guid") for e in root.iter()]


def test_round_trip_into_an_empty_study(coded_study, tmp_path):
    study = coded_study["study"]
    data = export_bytes(study, tmp_path)
    empty = Study.objects.create(name="Empty")
    report = import_qdpx(empty, data, filename="p.qdpx", actor=coded_study["roles"]["users"]["admin"])
    assert report["codings"] == 5 and report["sources"] == 6 and report["judge_codings_skipped"] == 4
    assert report["users_created"] == []
    assert signature(empty) == signature(study)
    imported = {c.path(): c for c in Code.objects.filter(codebook__study=empty)}
    assert set(imported) == {c.path() for c in Code.objects.filter(codebook__study=study)}
    assert imported["Leadership"].codable is False and imported["Leadership/Charisma"].codable is False
    assert imported["Leadership/Charisma/M charisma in leadership"].gender_tag == "M"
    assert imported["Leadership/Charisma/M charisma in leadership"].stereotype == "men lead by charisma"
    assert imported["Leadership/F caring leader"].description == "She leads by caring."
    assert imported["Leadership/F caring leader"].kind == "inductive"
    assert [m.text for m in Memo.objects.filter(study=empty, code__isnull=False)] == ["Watch for care framing."]
    assert Memo.objects.filter(study=empty, output__isnull=False).count() == 1
    outputs = empty.outputs.order_by("pk")
    assert [o.model_name for o in outputs] == [o.model_name for o in study.outputs.order_by("pk")]
    for coding in Coding.objects.filter(output__study=empty, start__isnull=False):
        assert coding.output.text[coding.start : coding.end] == coding.quote


def test_pseudonymised_export_hides_coder_names(coded_study, tmp_path):
    data = export_bytes(coded_study["study"], tmp_path, pseudonymise=True)
    qde = zipfile.ZipFile(io.BytesIO(data)).read("project.qde").decode()
    assert "second_coder" not in qde and 'name="coder"' not in qde and 'name="P-' in qde


def test_export_reads_the_codings_table_twice(coded_study, tmp_path):
    """Once for the codes and coders used (the codebook and users come before the sources), once for the codings
    themselves: each read of the table is a scan of every study's codings on a large install."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        export_bytes(coded_study["study"], tmp_path)
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "annotation_coding"' in q["sql"]]
    assert len(reads) == 2, reads


def test_the_exports_big_reads_go_through_query_batches(coded_study, tmp_path, monkeypatch):
    """Codings, stories and gender answers are read in batches, the next read while this one is written (on
    PostgreSQL outside a transaction from a cursor without hold: the server does not compute the whole result
    before the first row)."""
    from annotation import refi_services

    real, read = refi_services.query_batches, []

    def spy(queryset, size):
        read.append(queryset.model.__name__)
        return real(queryset, size)

    monkeypatch.setattr(refi_services, "query_batches", spy)
    first = export_bytes(coded_study["study"], tmp_path)
    assert {"Coding", "Output", "GenderAttribution"} <= set(read), read
    monkeypatch.setattr(refi_services, "query_batches", real)
    assert zipfile.ZipFile(io.BytesIO(first)).testzip() is None
