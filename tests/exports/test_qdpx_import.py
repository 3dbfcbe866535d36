"""Import of files written the way other tools write them, and rejection of malformed ones."""

import io
import zipfile

import pytest

from annotation import codebook_format as fmt
from annotation import refi_qda as rq
from annotation.models import Code, Codebook, Coding, Memo
from annotation.refi_services import import_file, import_qdc, import_qdpx
from generation.models import GenerationRun, Output
from stereoscope.models import Study

TEXT_A = "Line one.\r\nThe nurse, Maria, cared.\r\nThe doctor, Tom, decided."
TEXT_B = "A leader spoke.\r\n\r\nThe team listened."
U1 = "{A1B2C3D4-0000-4000-8000-000000000001}"
U2 = "a1b2c3d4-0000-4000-8000-000000000002"
DIM = "B0000000-0000-4000-8000-000000000001"
C_NURSE = "B0000000-0000-4000-8000-000000000002"
C_DOCTOR = "B0000000-0000-4000-8000-000000000003"
C_LEAD = "B0000000-0000-4000-8000-000000000004"
S_A = "C0000000-0000-4000-8000-00000000000A"
S_B = "C0000000-0000-4000-8000-00000000000B"
N1 = "D0000000-0000-4000-8000-000000000001"


def span(text, needle):
    start = text.index(needle)
    return start, start + len(needle)


def foreign_qde(codings_a=None, extra_source="", code_ref=C_NURSE, end_override=None, source_path=None):
    ns, ne = span(TEXT_A, "The nurse, Maria")
    ds, de = span(TEXT_A, "The doctor, Tom")
    if end_override is not None:
        ne = end_override
    return f"""<?xml version="1.0" encoding="utf-8"?>
<Project xmlns="urn:QDA-XML:project:1.0" name="MAXQDA seed study" origin="MAXQDA 2024" basePath="C:\\Users\\r\\proj">
  <Users>
    <User guid="{U1}" name="Anna Coder"/>
    <User guid="{U2}" name="Ben Coder"/>
  </Users>
  <CodeBook><Codes>
    <Code guid="{DIM}" name="Family" isCodable="false">
      <Description>Family roles</Description>
      <NoteRef targetGUID="{N1}"/>
      <Code guid="{C_NURSE}" name="F caregiver" isCodable="true" color="#00ff00"/>
      <Code guid="{C_DOCTOR}" name="M decision maker" isCodable="true"/>
    </Code>
    <Code guid="{C_LEAD}" name="Leadership" isCodable="true"/>
  </Codes></CodeBook>
  <Variables><Variable guid="E0000000-0000-4000-8000-000000000001" name="model" typeOfVariable="Text"/></Variables>
  <Sources>
    <TextSource guid="{S_A}" name="Story A" plainTextPath="{source_path or "relative://texts/story_a.txt"}">
      <PlainTextSelection guid="F0000000-0000-4000-8000-000000000001" startPosition="{ns}" endPosition="{ne}" \
creatingUser="{U1}">
        <Coding guid="F1000000-0000-4000-8000-000000000001" creatingUser="{U1}">\
<CodeRef targetGUID="{code_ref}"/></Coding>
      </PlainTextSelection>
      <PlainTextSelection guid="F0000000-0000-4000-8000-000000000002" startPosition="{ds}" endPosition="{de}" \
creatingUser="{U2}">
        <Coding guid="F1000000-0000-4000-8000-000000000002" creatingUser="{U2}">\
<CodeRef targetGUID="{C_DOCTOR}"/></Coding>
        <Coding guid="F1000000-0000-4000-8000-000000000003" creatingUser="{U1}">\
<CodeRef targetGUID="{C_LEAD}"/></Coding>
      </PlainTextSelection>
      <Coding guid="F1000000-0000-4000-8000-000000000004" creatingUser="{U2}"><CodeRef targetGUID="{C_NURSE}"/></Coding>
      {codings_a or ""}
      <VariableValue><VariableRef targetGUID="E0000000-0000-4000-8000-000000000001"/>\
<TextValue>gpt-4o</TextValue></VariableValue>
    </TextSource>
    <TextSource guid="{S_B}" name="Story B" plainTextPath="internal://{S_B.lower()}.txt">
      <PlainTextSelection guid="F0000000-0000-4000-8000-000000000003" \
startPosition="{TEXT_B.index("The team")}" endPosition="{len(TEXT_B)}" creatingUser="{U1}">
        <Coding guid="F1000000-0000-4000-8000-000000000005" creatingUser="{U1}">\
<CodeRef targetGUID="{C_LEAD}"/></Coding>
      </PlainTextSelection>
    </TextSource>
    {extra_source}
  </Sources>
  <Notes>
    <Note guid="{N1}" name="Family memo" creatingUser="{U1}"><PlainTextContent>Family codes
need care.</PlainTextContent></Note>
  </Notes>
</Project>""".replace("\n", "\r\n")


def foreign_qdpx(qde=None, files=None):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("project.qde", (qde if qde is not None else foreign_qde()).encode("utf-8"))
        for name, content in (
            files
            if files is not None
            else {
                "Sources/texts/story_a.txt": "\ufeff" + TEXT_A,
                f"Sources/{S_B.lower()}.txt": TEXT_B,
            }
        ).items():
            zf.writestr(name, content.encode("utf-8") if isinstance(content, str) else content)
    return buffer.getvalue()


@pytest.fixture
def target(db):
    return Study.objects.create(name="Target")


def test_a_file_written_by_another_tool_imports(target, django_user_model):
    admin = django_user_model.objects.create_user("importer")
    report = import_qdpx(target, foreign_qdpx(), filename="seed.qdpx", actor=admin)
    assert report["sources"] == 2 and report["codings"] == 5 and report["codes"] == 4
    assert sorted(report["users_created"]) == ["Anna_Coder", "Ben_Coder"]
    story_a = Output.objects.get(study=target, external_id=S_A.lower())
    assert story_a.text == TEXT_A.replace("\r\n", "\n")
    assert story_a.model_name == "gpt-4o"
    codings = {
        (c.code.name, c.coder.username): c
        for c in Coding.objects.filter(output=story_a).select_related("code", "coder")
    }
    assert codings[("F caregiver", "Anna_Coder")].quote == "The nurse, Maria"
    doctor = codings[("M decision maker", "Ben_Coder")]
    assert story_a.text[doctor.start : doctor.end] == "The doctor, Tom"
    assert codings[("Leadership", "Anna_Coder")].start == doctor.start  # two codings in one selection
    assert codings[("F caregiver", "Ben_Coder")].start is None  # document level
    story_b = Output.objects.get(study=target, external_id=S_B.lower())
    coding = Coding.objects.get(output=story_b)
    assert coding.quote == "The team listened." and story_b.text[coding.start : coding.end] == coding.quote
    family = Code.objects.get(codebook__study=target, name="Family")
    assert family.codable is False and family.guid.hex == DIM.replace("-", "").lower()
    assert [c.name for c in family.children.order_by("order")] == ["F caregiver", "M decision maker"]
    assert Memo.objects.get(code=family).text == "Family codes\nneed care."
    assert GenerationRun.objects.get(study=target).is_import


def test_qdc_codebook_imports(target):
    tree = {
        "name": "x",
        "codes": [
            {
                "guid": rq.stable_guid("x"),
                "name": "Dim",
                "codable": False,
                "color": "#123456",
                "children": [
                    {"guid": rq.stable_guid("y"), "name": "Code", "gender_tag": "F", "color": "#123456", "children": []}
                ],
            }
        ],
    }
    data = fmt.tree_to_qdc(fmt.validate_tree(tree))
    report = import_qdc(target, data, filename="book.qdc")
    assert report["codes"] == 2
    code = Code.objects.get(codebook__study=target, name="Code")
    assert code.parent.name == "Dim" and code.gender_tag == "F" and str(code.guid) == rq.stable_guid("y")


def zip_without(name):
    return foreign_qdpx(files={f"Sources/{S_B.lower()}.txt": TEXT_B} if "story_a" in name else {})


BAD_PROJECT = (
    "<Project xmlns='urn:QDA-XML:project:1.0' name='x'><Sources><TextSource guid='{g}' name='t'>"
    "<PlainTextContent>hi</PlainTextContent><PlainTextSelection guid='{g}' startPosition='0' endPosition='1'/>"
    "</TextSource></Sources></Project>"
)

MALFORMED = [
    ("not a zip", b"just some text", "not a ZIP archive"),
    ("no project.qde", foreign_qdpx(files={}).replace(b"project.qde", b"project.xyz"), "no project.qde"),
    ("bad XML", foreign_qdpx(qde="<Project xmlns='urn:QDA-XML:project:1.0' name='x'><Sources>"), "not well-formed XML"),
    ("wrong root", foreign_qdpx(qde="<Foo/>"), "expected Project"),
    (
        "unknown CodeRef",
        foreign_qdpx(qde=foreign_qde(code_ref="B0000000-0000-4000-8000-0000000000FF")),
        "CodeRef b0000000-0000-4000-8000-0000000000ff names no Code",
    ),
    ("offset past the end", foreign_qdpx(qde=foreign_qde(end_override=500)), "endPosition 500 is past the end"),
    ("missing source file", zip_without("story_a"), "the source file relative://texts/story_a.txt is missing"),
    (
        "XSD violation",
        foreign_qdpx(qde=foreign_qde().replace('isCodable="true" color="#00ff00"', 'color="#00ff00"')),
        "isCodable",
    ),
    ("coding a dimension", foreign_qdpx(qde=foreign_qde(code_ref=DIM)), "not codable"),
    (
        "unknown user",
        foreign_qdpx(
            qde=foreign_qde(
                codings_a='<Coding guid="F2000000-0000-4000-8000-000000000001" '
                'creatingUser="99999999-0000-4000-8000-000000000009"><CodeRef '
                f'targetGUID="{C_LEAD}"/></Coding>'
            )
        ),
        "is not in Users",
    ),
    (
        "entity expansion",
        foreign_qdpx(
            qde='<?xml version="1.0"?><!DOCTYPE p [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            '<Project xmlns="urn:QDA-XML:project:1.0" name="&e;"/>'
        ),
        "DOCTYPE",
    ),
    ("duplicate GUID", foreign_qdpx(qde=BAD_PROJECT.format(g="01234567-0000-4000-8000-000000000000")), "used twice"),
    ("absolute path", foreign_qdpx(qde=foreign_qde(source_path="absolute://C:/story.txt")), "points outside"),
    (
        "not UTF-8",
        foreign_qdpx(
            files={
                "Sources/texts/story_a.txt": "Maria caf\u00e9".encode("latin-1") + b"\xff" * 80,
                f"Sources/{S_B.lower()}.txt": TEXT_B,
            }
        ),
        "not UTF-8",
    ),
    ("bad offsets order", foreign_qdpx(qde=foreign_qde(end_override=1)), "do not make a span"),
    (  # was cut to 300 characters without a word
        "model variable too long",
        foreign_qdpx(qde=foreign_qde().replace("<TextValue>gpt-4o<", f"<TextValue>{'m' * 301}<")),
        "its model variable is longer than 300 characters",
    ),
]


def db_state():
    return (
        Codebook.objects.count(),
        Code.objects.count(),
        Coding.objects.count(),
        Memo.objects.count(),
        Output.objects.count(),
        GenerationRun.objects.count(),
    )


@pytest.mark.parametrize("label,data,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_are_rejected_and_change_nothing(target, label, data, message, django_user_model):
    before = db_state()
    users_before = django_user_model.objects.count()
    with pytest.raises(rq.RefiError) as info:
        import_file(target, data, filename="bad.qdpx")
    assert message in str(info.value), str(info.value)
    assert db_state() == before and django_user_model.objects.count() == users_before


def test_malformed_qdc_is_rejected(target):
    with pytest.raises(rq.RefiError, match="the .qdc codebook"):
        import_file(target, b"<Project xmlns='urn:QDA-XML:project:1.0' name='x'/>", filename="x.qdc")
    assert Codebook.objects.count() == 0
