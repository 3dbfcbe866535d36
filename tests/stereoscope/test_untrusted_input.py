"""No 500 on input: deeply nested JSON, NUL characters, XLSX with a DOCTYPE or entities, bodies over the size limit.
Each answers 400 with a clear message (JSON `detail` or `problems` from the API, a form error on pages) and writes
nothing."""

import io
import json
import zipfile

import pytest
from openpyxl import Workbook

from generation.models import GenerationRun, Output, Toolkit
from stereoscope.untrusted import loads_json, nul_problem, xlsx_problem

pytestmark = pytest.mark.django_db
DEEP = "[" * 100_000 + "]" * 100_000


def upload(name, content):
    buffer = io.BytesIO(content if isinstance(content, bytes) else content.encode())
    buffer.name = name
    return buffer


def test_pure_guards():
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        loads_json(DEEP)
    assert loads_json('{"a": [1]}') == {"a": [1]}
    assert "NUL" in nul_problem({"text": ["fine", "bad\x00"]}, "Row 2") and nul_problem({"a": "fine"}) is None
    assert xlsx_problem(b"not a zip") is None


def test_toolkit_import_of_deep_json_is_refused_on_page_and_api(roles, client_for, api_for):
    study = roles["a"]
    before = Toolkit.objects.count()
    api = api_for(roles["users"]["researcher"])
    for body, fmt in (
        ({"content": DEEP, "format": "json"}, "json"),
        ({"file": upload("deep.json", DEEP)}, "multipart"),
    ):
        response = api.post(f"/api/studies/{study.pk}/toolkits/import/", body, format=fmt)
        assert response.status_code == 400, response.content[:300]
        assert "nested too deeply" in json.dumps(response.json())
    page = client_for(roles["users"]["researcher"]).post(
        f"/studies/{study.pk}/toolkits/import/", {"file": upload("deep.json", DEEP)}
    )
    assert page.status_code == 400 and "nested too deeply" in page.content.decode()
    assert Toolkit.objects.count() == before


def test_deep_json_request_body_answers_json(roles, api_for):
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{roles['a'].pk}/toolkits/import/", DEEP, content_type="application/json"
    )
    assert response.status_code == 400 and response["Content-Type"].startswith("application/json")
    assert "nested too deeply" in response.json()["detail"]


def test_outputs_csv_with_a_nul_byte_is_refused(roles, client_for, api_for):
    study = roles["a"]
    content = b"model,prompt,text\nm,p,fine\nm,p,bad\x00text\n"
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/runs/import/", {"file": upload("o.csv", content)}, format="multipart"
    )
    assert response.status_code == 400 and "Row 3 contains a NUL character" in json.dumps(response.json())
    page = client_for(roles["users"]["researcher"]).post(
        f"/studies/{study.pk}/runs/import/", {"file": upload("o.csv", content)}
    )
    assert page.status_code == 400 and "NUL character" in page.content.decode()
    jsonl = b'{"model": "m", "prompt": "p", "text": "bad\\u0000"}\n'
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/runs/import/", {"file": upload("o.jsonl", jsonl)}, format="multipart"
    )
    assert response.status_code == 400 and "NUL character" in json.dumps(response.json())
    assert GenerationRun.objects.count() == 0 and Output.objects.count() == 0


def xlsx_with_doctype(doctype):
    workbook = Workbook()
    workbook.active.append(["model", "prompt", "text"])
    workbook.active.append(["m", "p", "&lol9;"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename == "xl/worksheets/sheet1.xml":
                head, _, rest = data.partition(b"<worksheet")
                data = head + doctype + b"<worksheet" + rest
            target.writestr(member, data)
    return out.getvalue()


BOMB = (
    b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    b'<!ENTITY lol9 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
)
EXTERNAL = b'<!DOCTYPE foo [<!ENTITY lol9 SYSTEM "file:///etc/passwd">]>'


@pytest.mark.parametrize("doctype", [BOMB, EXTERNAL], ids=["expansion", "external"])
def test_outputs_xlsx_with_a_doctype_is_refused(roles, client_for, api_for, doctype):
    study = roles["a"]
    content = xlsx_with_doctype(doctype)
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/runs/import/", {"file": upload("o.xlsx", content)}, format="multipart"
    )
    assert response.status_code == 400
    assert "declares a DOCTYPE or entities" in json.dumps(response.json())
    page = client_for(roles["users"]["researcher"]).post(
        f"/studies/{study.pk}/runs/import/", {"file": upload("o.xlsx", content)}
    )
    assert page.status_code == 400 and "declares a DOCTYPE or entities" in page.content.decode()
    assert GenerationRun.objects.count() == 0 and Output.objects.count() == 0


def test_a_body_over_the_size_limit_answers_json(roles, api_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    api = api_for(roles["users"]["researcher"])
    response = api.post(
        f"/api/studies/{roles['a'].pk}/toolkits/import/",
        {"content": "x" * 20_000, "format": "json", "name": "big"},
        format="multipart",
    )
    assert response.status_code == 400 and response["Content-Type"].startswith("application/json")
    assert "larger than the limit" in response.json()["detail"]
    response = api.post(
        f"/api/studies/{roles['a'].pk}/toolkits/import/",
        {"content": "x" * 20_000, "format": "json", "name": "big"},
        format="json",
    )
    assert response.status_code == 400 and response["Content-Type"].startswith("application/json")
    assert "larger than the limit" in response.json()["detail"]
    assert Toolkit.objects.count() == 0


def test_nul_characters_are_refused_by_the_other_imports(roles, api_for):
    from annotation import codebook_format
    from generation.toolkits import file_format as toolkit_format
    from judging.services import JudgingError, parse_weights

    with pytest.raises(toolkit_format.ToolkitFormatError, match="NUL character"):
        toolkit_format.parse_csv(b"number,text\n1,bad\x00text\n")
    with pytest.raises(toolkit_format.ToolkitFormatError, match="NUL character"):
        toolkit_format.parse_json('{"name": "x\\u0000"}')
    with pytest.raises(codebook_format.CodebookFormatError, match="NUL character"):
        codebook_format.parse_csv(b"name\nbad\x00code\n", "cb")
    with pytest.raises(JudgingError, match="NUL character"):
        parse_weights(b"item_number,weight\n1,0.5\x00\n", "w.csv")
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{roles['a'].pk}/toolkits/import/",
        {"content": '{"name": "x\\u0000"}', "format": "json"},
        format="json",
    )
    assert response.status_code == 400 and "NUL character" in json.dumps(response.json())
    assert Toolkit.objects.count() == 0


def test_api_error_handler_turns_input_errors_into_json_400s():
    from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
    from django.db import DataError

    from stereoscope.api_errors import exception_handler

    for exc, message in [
        (DataError("invalid byte sequence for encoding UTF8: 0x00"), "cannot store"),
        (RequestDataTooBig("too big"), "larger than the limit"),
        (TooManyFieldsSent("many"), "too many fields"),
        (RecursionError("deep"), "nested too deeply"),
    ]:
        response = exception_handler(exc, {})
        assert response.status_code == 400 and message in response.data["detail"], exc
    assert exception_handler(RuntimeError("a bug"), {}) is None  # real bugs still surface
