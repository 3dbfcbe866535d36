"""Exports page, REST API and commands: roles, downloads, imports, bad input, escaping."""

import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Code, Coding
from exports.models import ExportJob


@pytest.fixture
def users(coded_study):
    return coded_study["roles"]["users"]


def test_page_roles(coded_study, users, client_for, export_root):
    study = coded_study["study"]
    url = f"/studies/{study.pk}/exports/"
    assert client_for(users["outsider"]).get(url).status_code == 404
    assert client_for(users["coder"]).get(url).status_code == 403
    assert client_for(users["b_admin"]).get(url).status_code == 404
    page = client_for(users["researcher"]).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "analysis_wide" in html and "Fang codes v1 (.qdc)" in html
    assert "Hero &lt;b&gt;bold&lt;/b&gt;" in html and "Hero <b>bold</b>" not in html  # code names escaped
    assert client_for(users["admin"]).get(url).status_code == 200


def test_page_starts_a_job_and_downloads(coded_study, users, client_for, export_root):
    study = coded_study["study"]
    web = client_for(users["researcher"])
    response = web.post(
        f"/studies/{study.pk}/exports/",
        {"format": "csv", "datasets": ["codings", "analysis_wide"], "models": ["gpt-4o"], "pseudonymise": "on"},
    )
    assert response.status_code == 302
    job = ExportJob.objects.get(study=study)
    assert job.status == "completed" and job.options["pseudonymise"] is True and job.options["models"] == ["gpt-4o"]
    download = web.get(f"/studies/{study.pk}/exports/{job.pk}/download/")
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as zf:
        codings = zf.read("codings.csv").decode()
        manifest = json.loads(zf.read("manifest.json"))
    assert "second_coder" not in codings and "P-" in codings
    assert manifest["export"]["options"]["pseudonymise"] is True
    partial = web.get(f"/studies/{study.pk}/exports/jobs/")
    assert f"export-job-{job.pk}" in partial.content.decode()
    assert client_for(users["coder"]).get(f"/studies/{study.pk}/exports/{job.pk}/download/").status_code == 403
    assert client_for(users["b_admin"]).get(f"/studies/{study.pk}/exports/{job.pk}/download/").status_code == 404
    assert (
        client_for(users["b_admin"])
        .get(f"/studies/{coded_study['roles']['b'].pk}/exports/{job.pk}/download/")
        .status_code
        == 404
    )
    assert web.post(f"/studies/{study.pk}/exports/{job.pk}/delete/").status_code == 403
    assert client_for(users["admin"]).post(f"/studies/{study.pk}/exports/{job.pk}/delete/").status_code == 302
    assert not ExportJob.objects.filter(pk=job.pk).exists()


def test_page_bad_input_is_a_form_error(coded_study, users, client_for, export_root):
    study = coded_study["study"]
    web = client_for(users["researcher"])
    response = web.post(f"/studies/{study.pk}/exports/", {"format": "csv", "item_numbers": "one, two"})
    assert response.status_code == 200 and "is not a whole number" in response.content.decode()
    response = web.post(f"/studies/{study.pk}/exports/", {"format": "pdf"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert ExportJob.objects.count() == 0


def test_xss_in_llm_text_stays_escaped_in_failure_messages_and_pages(coded_study, users, client_for, export_root):
    study = coded_study["study"]
    output = coded_study["outputs"][0]
    output.model_name = "<script>alert(1)</script>"
    output.save()
    ExportJob.objects.create(study=study, format="csv", status="failed", message="<img src=x onerror=alert(1)>")
    html = client_for(users["researcher"]).get(f"/studies/{study.pk}/exports/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_page_import_reports_errors_and_success(coded_study, users, client_for, tmp_path, export_root):
    from annotation.refi_services import export_qdpx
    from exports.services import clean_options, runtime_options
    from stereoscope.models import Study

    study = coded_study["study"]
    path = tmp_path / "p.qdpx"
    export_qdpx(study, path, options=runtime_options(study, clean_options(study, {})))
    target = Study.objects.create(name="Target")
    from stereoscope.models import Membership

    Membership.objects.create(study=target, user=users["researcher"], role="researcher")
    web = client_for(users["researcher"])
    bad = io.BytesIO(b"<not xml")
    bad.name = "bad.qdpx"
    response = web.post(f"/studies/{target.pk}/exports/refi-import/", {"file": bad}, follow=True)
    assert "Nothing was imported from bad.qdpx" in response.content.decode()
    with open(path, "rb") as fh:
        response = web.post(f"/studies/{target.pk}/exports/refi-import/", {"file": fh}, follow=True)
    assert "5 codings" in response.content.decode()
    assert Coding.objects.filter(output__study=target).count() == 5
    assert client_for(users["coder"]).post(f"/studies/{target.pk}/exports/refi-import/", {}).status_code == 404


def test_codebook_qdc_download(coded_study, users, client_for):
    study, book = coded_study["study"], coded_study["codebook"]
    response = client_for(users["researcher"]).get(f"/studies/{study.pk}/exports/codebooks/{book.pk}.qdc")
    assert response.status_code == 200 and b"M charisma in leadership" in response.content
    assert client_for(users["coder"]).get(f"/studies/{study.pk}/exports/codebooks/{book.pk}.qdc").status_code == 403


def test_api(coded_study, users, api_for, export_root):
    study = coded_study["study"]
    base = f"/api/studies/{study.pk}/exports/"
    api = api_for(users["researcher"])
    assert api_for(users["outsider"]).get(base).status_code == 404
    assert api_for(users["coder"]).get(base).status_code == 403
    assert api_for(users["coder"]).post(base, {"format": "csv"}, format="json").status_code == 403
    datasets = {d["key"]: d for d in api.get(base + "datasets/").json()}
    assert {"outputs", "codings", "analysis_wide"} <= set(datasets)
    assert datasets["codings"]["columns"][0]["description"]
    bad = api.post(base, {"format": "csv", "options": {"run_ids": [999]}}, format="json")
    assert bad.status_code == 400 and "No generation run with id 999" in bad.json()["detail"]
    bad = api.post(base, {"format": "csv", "datasets": ["nope"]}, format="json")
    assert bad.status_code == 400 and "Unknown dataset nope" in bad.json()["detail"]
    assert api.post(base, {"format": "pdf"}, format="json").status_code == 400
    created = api.post(
        base,
        {"format": "jsonl", "datasets": ["codings"], "options": {"code_ids": [coded_study["codes"]["family"].pk]}},
        format="json",
    )
    assert created.status_code == 201, created.content
    job = created.json()
    assert job["status"] == "completed" and job["manifest"]["row_counts"] == {"codings": 2}
    assert job["download_url"].endswith(f"/exports/{job['id']}/download/")
    got = api.get(f"{base}{job['id']}/download/")
    assert got.status_code == 200
    lines = zipfile.ZipFile(io.BytesIO(b"".join(got.streaming_content))).read("codings.jsonl").decode().splitlines()
    assert {json.loads(line)["code"] for line in lines} == {"F carer"}
    qdpx = api.post(base, {"format": "qdpx"}, format="json").json()
    assert qdpx["status"] == "completed" and qdpx["file_name"].endswith(".qdpx")
    assert api.delete(f"{base}{job['id']}/").status_code == 403
    assert api_for(users["admin"]).delete(f"{base}{job['id']}/").status_code == 204


def test_api_import(coded_study, users, api_for):
    study = coded_study["study"]
    api = api_for(users["researcher"])
    url = f"/api/studies/{study.pk}/exports/refi-import/"
    bad = io.BytesIO(b"PK\x03\x04broken")
    bad.name = "broken.qdpx"
    response = api.post(url, {"file": bad}, format="multipart")
    assert response.status_code == 400 and "not a ZIP" in response.json()["detail"]
    assert api.post(url, {}, format="multipart").status_code == 400
    book = coded_study["codebook"]
    qdc = api.get(f"/api/studies/{study.pk}/exports/codebooks/{book.pk}/qdc/")
    assert qdc.status_code == 200
    upload = io.BytesIO(qdc.content)
    upload.name = "copy.qdc"
    response = api.post(url, {"file": upload}, format="multipart")
    assert response.status_code == 201 and response.json()["codes"] == 7
    assert Code.objects.filter(codebook__study=study, codebook__name="copy").count() == 7


def test_export_study_command(coded_study, tmp_path, capsys):
    study = coded_study["study"]
    out = tmp_path / "study.zip"
    call_command(
        "export_study", str(study.pk), "--format", "csv", "--out", str(out), "--dataset", "codings", "--model", "gpt-4o"
    )
    assert "codings=4" in capsys.readouterr().out
    assert "codings.csv" in zipfile.ZipFile(out).namelist()
    call_command("export_study", str(study.pk), "--format", "qdpx", "--out", str(tmp_path / "s.qdpx"))
    assert "project.qde" in zipfile.ZipFile(tmp_path / "s.qdpx").namelist()
    with pytest.raises(CommandError, match="No study with id 999"):
        call_command("export_study", "999", "--format", "csv", "--out", str(out))
    with pytest.raises(CommandError, match="No generation run with id 5"):
        call_command("export_study", str(study.pk), "--format", "csv", "--out", str(out), "--run", "5000")


def test_import_refi_command(coded_study, tmp_path):
    path = tmp_path / "bad.qdpx"
    path.write_bytes(b"nope")
    with pytest.raises(CommandError, match="Nothing was imported: The file is not a .qdpx"):
        call_command("import_refi", str(coded_study["study"].pk), str(path))


def test_cancel_resume_retry_from_page_and_api(coded_study, users, api_for, client_for, export_root, monkeypatch):
    """The engine's services on an export: a queued job is cancelled at once, resumed to completion; a failed one
    is retried; an action that does not apply answers 409 (API) or a message (page), never a 500."""
    from exports import services

    study = coded_study["study"]
    base = f"/api/studies/{study.pk}/exports/"
    api = api_for(users["researcher"])
    job = services.create_job(study, fmt="csv", dataset_keys=["codings"], enqueue=False)
    cancelled = api.post(f"{base}{job.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert api.post(f"{base}{job.pk}/cancel/").status_code == 409
    assert api.post(f"{base}{job.pk}/retry/").status_code == 409  # nothing failed
    web = client_for(users["researcher"])
    page = web.get(f"/studies/{study.pk}/exports/jobs/").content.decode()
    assert f"/exports/{job.pk}/resume/" in page
    assert web.post(f"/studies/{study.pk}/exports/{job.pk}/resume/").status_code == 302
    job.refresh_from_db()
    assert job.status == "completed" and services.job_path(job).is_file()
    assert api.post(f"{base}{job.pk}/resume/").status_code == 409
    assert web.post(f"/studies/{study.pk}/exports/{job.pk}/explode/").status_code == 404

    monkeypatch.setattr(services, "write_table_bundle", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    failed = services.create_job(study, fmt="csv", dataset_keys=["codings"])
    assert failed.status == "failed" and "disk full" in failed.message
    assert f"/exports/{failed.pk}/retry/" in web.get(f"/studies/{study.pk}/exports/jobs/").content.decode()
    monkeypatch.undo()
    retried = api.post(f"{base}{failed.pk}/retry/")
    assert retried.status_code == 200 and retried.json()["status"] == "completed"
    assert client_for(users["coder"]).post(f"/studies/{study.pk}/exports/{job.pk}/cancel/").status_code == 403
