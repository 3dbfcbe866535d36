"""Manual collection (sheet download, form, file import) and import of outputs made elsewhere: every kind of bad
row is reported with its row number and nothing is saved; good files are applied in one go."""

import csv
import io
import json

import pytest
from openpyxl import Workbook, load_workbook

from generation.models import GenerationRun, Output, ProviderCall
from generation.runs import collect
from generation.runs import services as runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def manual_run(study, make_endpoint, make_toolkit):
    toolkit = make_toolkit(
        study,
        2,
        slots={"name": ["Kelly", "Joseph"]},
        texts=["A story about {name}.", "A story about a nurse and a doctor."],
    )
    endpoint = make_endpoint(study, "manual", model_id="chatgpt-web", name="ChatGPT web")
    run = runs.create_run(
        study, name="manual", toolkit=toolkit, endpoints=[endpoint], trials=2, system_prompt="Be kind."
    )
    runs.start(run)
    run.refresh_from_db()
    return run


def sheet(run):
    return list(csv.DictReader(io.StringIO(collect.sheet_csv(run).decode("utf-8-sig"))))


def to_csv(rows, columns):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def test_manual_run_waits_and_sheet_lists_every_unit(manual_run):
    assert manual_run.status == "running" and "Waiting for 6 manual answers" in manual_run.message
    rows = sheet(manual_run)
    assert len(rows) == 6 and list(rows[0]) == collect.SHEET_COLUMNS
    assert {r["prompt"] for r in rows} == {
        "A story about Kelly.",
        "A story about Joseph.",
        "A story about a nurse and a doctor.",
    }
    assert {r["model"] for r in rows} == {"chatgpt-web"} and all(r["answer"] == "" for r in rows)
    workbook = load_workbook(io.BytesIO(collect.sheet_xlsx(manual_run)))
    values = list(workbook.active.iter_rows(values_only=True))
    assert list(values[0]) == collect.SHEET_COLUMNS and len(values) == 7
    assert {v[0] for v in values[1:]} == {int(r["unit"]) for r in rows}


def test_filled_sheet_import_completes_the_run(manual_run):
    rows = sheet(manual_run)
    for i, row in enumerate(rows):
        row["answer"] = f"Answer {i}\r\nsecond line"
    n = collect.import_answers(manual_run, "sheet.csv", to_csv(rows, collect.SHEET_COLUMNS))
    assert n == 6
    manual_run.refresh_from_db()
    assert manual_run.status == "completed"
    out = Output.objects.get(pk=rows[0]["unit"])
    assert out.status == "done" and out.text == "Answer 0\nsecond line" and out.provenance["source"] == "manual"
    call = ProviderCall.objects.get(output=out)
    assert call.provider == "manual" and call.messages[0] == {"role": "system", "content": "Be kind."}
    assert sheet(manual_run) == []  # nothing left to collect


def test_xlsx_and_jsonl_answers(manual_run):
    rows = sheet(manual_run)
    workbook = Workbook()
    workbook.active.append(["unit", "answer"])
    workbook.active.append([int(rows[0]["unit"]), "From the spreadsheet."])
    buffer = io.BytesIO()
    workbook.save(buffer)
    assert collect.import_answers(manual_run, "answers.xlsx", buffer.getvalue()) == 1
    jsonl = "\n".join(json.dumps({"unit": int(r["unit"]), "answer": f"JSONL {r['unit']}"}) for r in rows[1:3]).encode()
    assert collect.import_answers(manual_run, "answers.jsonl", jsonl) == 2
    assert Output.objects.filter(run=manual_run, status="done").count() == 3


@pytest.mark.parametrize(
    "mutate,messages",
    [
        (lambda rows: rows.append({"unit": "999999", "answer": "x"}), ["unknown unit 999999"]),
        (lambda rows: rows.append(dict(rows[0])), ["appears twice (also in row 2)"]),
        (lambda rows: rows[1].update(answer="   "), ["Row 3: the answer is empty"]),
        (lambda rows: rows[2].update(unit="abc"), ["Row 4: the unit must be a whole number"]),
        (lambda rows: rows[2].update(unit=""), ["Row 4: the unit is empty"]),
        # a superscript digit passed str.isdigit() and int() raised (a 500) before the answers schema
        (lambda rows: rows[2].update(unit="²"), ["Row 4: the unit must be a whole number, got '²'."]),
    ],
)
def test_bad_answer_files_save_nothing(manual_run, mutate, messages):
    rows = sheet(manual_run)
    for row in rows:
        row["answer"] = "A fine answer."
    mutate(rows)
    with pytest.raises(collect.ImportProblems) as info:
        collect.import_answers(manual_run, "sheet.csv", to_csv(rows, collect.SHEET_COLUMNS))
    for message in messages:
        assert message in str(info.value)
    assert not Output.objects.filter(run=manual_run, status="done").exists()
    assert not ProviderCall.objects.exists()


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("a.csv", b"", "empty"),
        ("a.csv", b"\xff\xfe\x00garbage", "not UTF-8"),
        ("a.xlsx", b"PK\x03\x04 not really a zip", "not a valid XLSX"),
        ("a.jsonl", b'{"unit": 1, "answer": "x"}\n{broken', "Line 2 is not valid JSON"),
        ("a.jsonl", b"[1, 2]", "must be a JSON object"),
        ("a.json", b'{"unit": 1}', "list of objects"),
        ("a.txt", b"unit,answer\n1,x", "Unknown file format"),
        ("a.csv", b"answer\nhello", "no 'unit' column"),
        ("a.csv", b"unit,answer,answer\n1,x,y", "appears twice in the header"),
    ],
)
def test_malformed_answer_files(manual_run, name, content, message):
    with pytest.raises(collect.ImportProblems, match=message):
        collect.import_answers(manual_run, name, content)
    assert not Output.objects.filter(run=manual_run, status="done").exists()


def test_jsonl_wrong_types(manual_run):
    unit = int(sheet(manual_run)[0]["unit"])
    content = "\n".join([json.dumps({"unit": unit, "answer": 42}), json.dumps({"unit": [1], "answer": "x"})]).encode()
    with pytest.raises(collect.ImportProblems) as info:
        collect.import_answers(manual_run, "a.jsonl", content)
    assert "the answer must be text, got 42" in str(info.value) and "whole number" in str(info.value)


def test_already_answered_unit_is_rejected(manual_run):
    rows = sheet(manual_run)
    collect.import_answers(
        manual_run, "a.jsonl", json.dumps({"unit": int(rows[0]["unit"]), "answer": "first"}).encode()
    )
    with pytest.raises(collect.ImportProblems, match="already has an answer"):
        collect.import_answers(
            manual_run, "a.jsonl", json.dumps({"unit": int(rows[0]["unit"]), "answer": "second"}).encode()
        )
    assert Output.objects.get(pk=rows[0]["unit"]).text == "first"


def test_units_of_other_runs_are_unknown(manual_run, study, make_endpoint, make_toolkit):
    other = runs.create_run(
        study, name="other", toolkit=make_toolkit(study, 1), endpoints=[make_endpoint(study, "manual", name="m2")]
    )
    runs.start(other)
    foreign = Output.objects.get(run=other).pk
    with pytest.raises(collect.ImportProblems, match=f"unknown unit {foreign}"):
        collect.import_answers(manual_run, "a.jsonl", json.dumps({"unit": foreign, "answer": "x"}).encode())


def test_collect_page_form_and_upload(roles, client_for, make_endpoint, make_toolkit):
    study = roles["a"]
    run = runs.create_run(
        study,
        name="m",
        toolkit=make_toolkit(study, 2),
        endpoints=[make_endpoint(study, "manual", name="Gemini web", model_id="gemini")],
    )
    runs.start(run)
    c = client_for(roles["users"]["researcher"])
    page = c.get(f"/studies/{study.pk}/runs/{run.pk}/collect/").content.decode()
    units = list(Output.objects.filter(run=run).order_by("item__number").values_list("pk", flat=True))
    assert f'name="answer-{units[0]}"' in page and "Write a short story about item 2." in page
    assert client_for(roles["users"]["coder"]).get(f"/studies/{study.pk}/runs/{run.pk}/collect/").status_code == 403
    response = c.post(
        f"/studies/{study.pk}/runs/{run.pk}/collect/",
        {f"answer-{units[0]}": "<script>alert(1)</script>", f"answer-{units[1]}": ""},
    )
    assert response.status_code == 302
    assert Output.objects.get(pk=units[0]).text == "<script>alert(1)</script>"
    assert Output.objects.get(pk=units[1]).status == "pending"  # a blank field leaves the unit waiting
    bad = c.post(f"/studies/{study.pk}/runs/{run.pk}/collect/", {"answer-999999": "x"})
    assert bad.status_code == 400 and "unknown unit 999999" in bad.content.decode()
    csv_response = c.get(f"/studies/{study.pk}/runs/{run.pk}/collect.csv")
    assert csv_response.status_code == 200 and csv_response["Content-Type"].startswith("text/csv")
    assert c.get(f"/studies/{study.pk}/runs/{run.pk}/collect.xlsx").status_code == 200
    assert c.get(f"/studies/{study.pk}/runs/{run.pk}/collect.pdf").status_code == 404
    upload = io.BytesIO(to_csv([{"unit": units[1], "answer": "Uploaded."}], ["unit", "answer"]))
    upload.name = "filled.csv"
    response = c.post(f"/studies/{study.pk}/runs/{run.pk}/collect/", {"file": upload})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "completed"


# --- import of outputs made elsewhere ----------------------------------------------------------------------------


def test_import_outputs_by_item_number_and_prompt(study, make_toolkit):
    toolkit = make_toolkit(
        study, 2, slots={"name": ["Kelly", "Joseph"]}, texts=["Letter for {name}.", "A plain story."]
    )
    rows = [
        {"model": "gpt-4o", "item": "1", "slot:name": "Kelly", "trial": "1", "text": "Dear Kelly", "external_id": "a1"},
        {
            "model": "gpt-4o",
            "item": "1",
            "slot:name": "Joseph",
            "trial": "1",
            "text": "Dear Joseph",
            "external_id": "a2",
        },
        {"model": "gpt-4o", "item": "", "prompt": "A plain story.", "trial": "2", "text": "Once", "external_id": "a3"},
    ]
    content = to_csv(rows, ["model", "item", "prompt", "slot:name", "trial", "text", "external_id"])
    run = collect.import_outputs(study, "stories.csv", content, toolkit=toolkit, run_name="Earlier study")
    assert run.is_import and run.status == "completed" and run.name == "Earlier study"
    outputs = Output.objects.filter(run=run).order_by("external_id")
    assert outputs.count() == 3 and all(o.status == "done" and o.endpoint_id is None for o in outputs)
    kelly = outputs.get(external_id="a1")
    assert (
        kelly.item.number == 1 and kelly.slot_values == {"name": "Kelly"} and kelly.prompt_text == "Letter for Kelly."
    )
    plain = outputs.get(external_id="a3")
    assert plain.item.number == 2 and plain.trial == 2 and plain.provenance["source"] == "import"
    toolkit.refresh_from_db()
    assert toolkit.locked
    with pytest.raises(runs.RunError, match="nothing to start"):
        runs.start(run)


def test_import_json_without_toolkit_keeps_prompt(study):
    content = json.dumps(
        [
            {"model": "claude", "prompt": "Tell a story.", "text": "Once upon a time", "seed": 7},
            {"model": "claude", "prompt": "Tell a story.", "trial": 2, "text": "Again"},
        ]
    ).encode()
    run = collect.import_outputs(study, "x.json", content)
    first = Output.objects.get(run=run, trial=1)
    assert first.item is None and first.prompt_text == "Tell a story." and first.provenance["extra"] == {"seed": 7}


@pytest.mark.parametrize(
    "rows,message",
    [
        ([{"model": "", "item": "1", "text": "x"}], "Row 2: the model is missing"),
        ([{"model": "m", "item": "1", "text": ""}], "Row 2: the text is empty"),
        ([{"model": "m", "item": "77", "text": "x"}], "has no item 77"),
        ([{"model": "m", "item": "one", "text": "x"}], "must be an item number"),
        ([{"model": "m", "item": "1", "trial": "0", "text": "x"}], "at least 1"),
        ([{"model": "m", "item": "1", "trial": "1.5", "text": "x"}], "whole number"),
        ([{"model": "m", "text": "x"}], "give an item number or the prompt text"),
        ([{"model": "m", "prompt": "Not a prompt of the toolkit", "text": "x"}], "matches no rendered prompt"),
        (
            [{"model": "m", "item": "1", "text": "x"}, {"model": "M", "item": "1", "text": "y"}],
            "Row 3 duplicates row 2",
        ),
        (
            [
                {"model": "m", "item": "1", "text": "x", "external_id": "e"},
                {"model": "m", "item": "2", "text": "y", "external_id": "e"},
            ],
            "external id 'e' appears twice",
        ),
        ([{"model": "m", "item": "1", "text": "x", "slot_values": "{bad"}], "slot_values must be a JSON object"),
        ([{"model": "m", "item": "1", "text": "x", "slot_values": '{"name": "Zed"}'}], "no variant with slot values"),
    ],
)
def test_bad_import_rows_save_nothing(study, make_toolkit, rows, message):
    toolkit = make_toolkit(study, 2)
    columns = sorted({k for r in rows for k in r})
    with pytest.raises(collect.ImportProblems, match=message):
        collect.import_outputs(study, "bad.csv", to_csv(rows, columns), toolkit=toolkit)
    assert not GenerationRun.objects.filter(is_import=True).exists() and not Output.objects.exists()


def test_one_bad_row_among_many_saves_nothing(study, make_toolkit):
    toolkit = make_toolkit(study, 3)
    rows = [{"model": "m", "item": str(i % 3 + 1), "trial": str(i // 3 + 1), "text": f"t{i}"} for i in range(300)]
    rows[250]["text"] = ""
    with pytest.raises(collect.ImportProblems, match="Row 252: the text is empty"):
        collect.import_outputs(study, "big.csv", to_csv(rows, ["model", "item", "trial", "text"]), toolkit=toolkit)
    assert not Output.objects.exists() and not GenerationRun.objects.exists()
    rows[250]["text"] = "fixed"
    run = collect.import_outputs(study, "big.csv", to_csv(rows, ["model", "item", "trial", "text"]), toolkit=toolkit)
    assert run.outputs.count() == 300


def test_import_page_and_api(roles, client_for, api_for, make_toolkit):
    study = roles["a"]
    toolkit = make_toolkit(study, 1)
    c = client_for(roles["users"]["researcher"])
    good = io.BytesIO(to_csv([{"model": "m", "item": "1", "text": "hello"}], ["model", "item", "text"]))
    good.name = "good.csv"
    response = c.post(
        f"/studies/{study.pk}/runs/import/", {"file": good, "toolkit": toolkit.pk, "run_name": "Imported"}
    )
    assert response.status_code == 302
    run = GenerationRun.objects.get(is_import=True)
    assert run.name == "Imported" and run.outputs.count() == 1
    bad = io.BytesIO(b"model,item,text\nm,1,\n")
    bad.name = "bad.csv"
    response = c.post(f"/studies/{study.pk}/runs/import/", {"file": bad, "toolkit": toolkit.pk})
    assert response.status_code == 400 and "Row 2: the text is empty" in response.content.decode()
    assert client_for(roles["users"]["coder"]).get(f"/studies/{study.pk}/runs/import/").status_code == 403
    api = api_for(roles["users"]["researcher"])
    upload = io.BytesIO(b'{"model": "x", "prompt": "p", "text": "t"}\n')
    upload.name = "o.jsonl"
    response = api.post(f"/api/studies/{study.pk}/runs/import/", {"file": upload}, format="multipart")
    assert response.status_code == 201 and response.json()["is_import"]
    upload = io.BytesIO(b'{"model": "x", "prompt": "p"}\n')
    upload.name = "o.jsonl"
    response = api.post(f"/api/studies/{study.pk}/runs/import/", {"file": upload}, format="multipart")
    assert response.status_code == 400 and response.json()["problems"] == ["The file has no 'text' column."]
    assert GenerationRun.objects.filter(is_import=True).count() == 2


def test_manual_answers_over_api(roles, api_for, make_endpoint, make_toolkit):
    study = roles["a"]
    run = runs.create_run(
        study, name="m", toolkit=make_toolkit(study, 1), endpoints=[make_endpoint(study, "manual", name="web")]
    )
    runs.start(run)
    unit = Output.objects.get(run=run).pk
    api = api_for(roles["users"]["researcher"])
    sheet_response = api.get(f"/api/studies/{study.pk}/runs/{run.pk}/collection_sheet/", {"kind": "csv"})
    assert sheet_response.status_code == 200 and str(unit).encode() in sheet_response.content
    bad = api.post(
        f"/api/studies/{study.pk}/runs/{run.pk}/answers/", {"answers": [{"unit": unit, "answer": ""}]}, format="json"
    )
    assert bad.status_code == 400 and "empty" in bad.json()["detail"]
    ok = api.post(
        f"/api/studies/{study.pk}/runs/{run.pk}/answers/", {"answers": [{"unit": unit, "answer": "Hi"}]}, format="json"
    )
    assert ok.status_code == 200 and ok.json()["status"] == "completed"


def test_big_import_uses_a_fixed_number_of_queries(study, make_toolkit, django_assert_max_num_queries):
    toolkit = make_toolkit(study, 3, slots={"name": ["Kelly", "Joseph"]}, texts=["About {name}.", "B", "C"])
    rows = [
        {
            "model": f"m{i % 4}",
            "item": str(i % 3 + 1),
            "slot:name": "Kelly" if i % 3 == 0 else "",
            "trial": str(i // 12 + 1),
            "text": f"=story {i}",
            "external_id": f"e{i}",
            "seed": str(i),
        }
        for i in range(6000)
    ]
    content = to_csv(rows, ["model", "item", "slot:name", "trial", "text", "external_id", "seed"])
    with django_assert_max_num_queries(25):  # no per-row or per-47-rows queries, whatever the number of rows
        run = collect.import_outputs(study, "big.csv", content, toolkit=toolkit)
    assert run.outputs.count() == 6000
    last = run.outputs.get(external_id="e5999")
    assert (last.model_name, last.item.number, last.trial, last.text) == ("m3", 3, 500, "=story 5999")
    assert last.status == "done" and last.completed_at is not None and last.created_at is not None
    assert last.provenance == {
        "source": "import",
        "file": "big.csv",
        "row": 6001,
        "imported_by": "",
        "extra": {"seed": "5999"},
    }
    kelly = run.outputs.get(external_id="e0")
    assert kelly.slot_values == {"name": "Kelly"} and kelly.prompt_text == "About Kelly." and kelly.variant_key


def test_a_failure_while_saving_an_import_saves_nothing(study, make_toolkit, monkeypatch):
    toolkit = make_toolkit(study, 3)
    rows = [{"model": "m", "item": str(i % 3 + 1), "trial": str(i // 3 + 1), "text": f"t{i}"} for i in range(3000)]

    def fail(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(collect, "record_activity", fail)  # after every output row is written
    with pytest.raises(RuntimeError):
        collect.import_outputs(study, "big.csv", to_csv(rows, ["model", "item", "trial", "text"]), toolkit=toolkit)
    assert not Output.objects.exists() and not GenerationRun.objects.exists()
