"""A PDF of the study report is made by an export job, never inside a web request: WeasyPrint's layout takes seconds
and grows with the study, and a researcher pressing "PDF" again and again must not hold the web workers."""

import re

import pytest

from tests.exports.conftest import export_root  # noqa: F401
from tests.reports.test_pdf import _weasyprint_or_skip, without_weasyprint  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_rendering_here(monkeypatch):
    """Any PDF rendering in this process fails the test: the web request must only queue the job."""
    import reports.render

    def refuse(doc):
        raise AssertionError("the PDF was rendered inside the web request")

    monkeypatch.setattr(reports.render, "pdf", refuse)


def test_the_report_page_queues_a_pdf_export_and_renders_nothing(
    roles, client_for, export_root, no_rendering_here, monkeypatch
):
    from exports import services as exports
    from exports.models import ExportJob

    monkeypatch.setattr(exports.jobs, "launch", lambda kind, job: None)  # queued for a worker that is not there
    study, web = roles["a"], client_for(roles["users"]["researcher"])
    page = web.get(f"/studies/{study.pk}/report/").content.decode()
    assert f'action="/studies/{study.pk}/report/pdf/"' in page and "download.pdf" not in page
    response = web.post(f"/studies/{study.pk}/report/pdf/")
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/exports/"
    job = ExportJob.objects.get(study=study)
    assert job.format == "report" and job.status == "queued" and job.created_by == roles["users"]["researcher"]
    # pressing it again while that PDF is being made adds no work: one PDF job per study at a time
    again = web.post(f"/studies/{study.pk}/report/pdf/", follow=True).content.decode()
    assert f"already being made (export {job.pk})" in again and ExportJob.objects.count() == 1
    # the old download link renders nothing either: it says where PDFs are made
    old = web.get(f"/studies/{study.pk}/report/download.pdf")
    assert old.status_code == 404 and "Make PDF" in old.content.decode()
    assert client_for(roles["users"]["coder"]).post(f"/studies/{study.pk}/report/pdf/").status_code in (403, 404)
    assert ExportJob.objects.count() == 1


def test_the_api_sends_a_pdf_request_to_the_exports_api(roles, api_for, export_root, no_rendering_here):
    study = roles["a"]
    answer = api_for(roles["users"]["researcher"]).get(f"/api/studies/{study.pk}/report/?format=pdf")
    assert answer.status_code == 400
    assert f"/api/studies/{study.pk}/exports/" in answer.json()["detail"] and '"report"' in answer.json()["detail"]


def test_a_report_export_job_writes_the_pdf_and_serves_it(fang_study, roles, client_for, api_for, export_root):
    pypdf = _weasyprint_or_skip()
    from exports.models import ExportJob
    from stereoscope.models import Membership

    researcher = roles["users"]["researcher"]
    Membership.objects.create(study=fang_study, user=researcher, role="researcher")
    api = api_for(researcher)
    created = api.post(f"/api/studies/{fang_study.pk}/exports/", {"format": "report"}, format="json")
    assert created.status_code == 201, created.content
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert job.status == "completed", job.message
    assert job.file_name.endswith(".pdf") and job.manifest["export"]["format"] == "report"
    assert job.manifest["files"][0]["sha256"] == job.sha256 and job.size_bytes > 1000
    for download in (
        api.get(created.json()["download_url"]),
        client_for(researcher).get(f"/studies/{fang_study.pk}/exports/{job.pk}/download/"),
    ):
        assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
        assert download["Content-Disposition"].endswith('.pdf"')
        body = b"".join(download.streaming_content)
        assert body.startswith(b"%PDF")
    import io

    text = " ".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(body)).pages)
    assert "Table 3 of the seed" in re.sub(r"\s+", " ", text)


def test_without_the_extra_no_job_is_made(roles, api_for, export_root, without_weasyprint):
    from exports.models import ExportJob

    study = roles["a"]
    answer = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/exports/", {"format": "report"}, format="json"
    )
    assert answer.status_code == 400 and "the `report` extra" in answer.json()["detail"]
    assert not ExportJob.objects.exists()


def test_export_study_writes_the_report_pdf_from_the_command_line(roles, tmp_path):
    _weasyprint_or_skip()
    from django.core.management import call_command

    out = tmp_path / "report.pdf"
    call_command("export_study", str(roles["a"].pk), "--format", "report", "--out", str(out))
    assert out.read_bytes().startswith(b"%PDF") and not (tmp_path / "report.pdf.part").exists()


def test_the_report_page_shows_its_pdfs_being_made_and_made(roles, client_for, export_root):
    """The Report page lists the study's report PDFs: the one being made, and those made, with their downloads."""
    from exports.models import ExportJob

    study, web = roles["a"], client_for(roles["users"]["researcher"])
    assert "No PDF of the report yet." in web.get(f"/studies/{study.pk}/report/").content.decode()
    made = ExportJob.objects.create(study=study, format="report", status="completed", file_name="r.pdf")
    making = ExportJob.objects.create(study=study, format="report", status="running")
    ExportJob.objects.create(study=study, format="csv", status="completed", file_name="t.zip")  # not a report
    page = web.get(f"/studies/{study.pk}/report/").content.decode()
    assert f'href="/studies/{study.pk}/exports/{made.pk}/download/"' in page
    assert f"PDF {making.pk}: running" in page and "t.zip" not in page
    assert page.count("/download/") == 1


def test_reproducibility_cites_the_latest_data_export_not_a_report_pdf(roles):
    """The report's own PDFs are export jobs too; the reproducibility section names the latest export of the data."""
    from exports.models import ExportJob
    from reports import builder

    study = roles["a"]
    ExportJob.objects.create(study=study, format="csv", status="completed", sha256="c" * 64, manifest={"a": 1})
    ExportJob.objects.create(study=study, format="report", status="completed", sha256="r" * 64, manifest={"b": 2})
    text = str(builder.build(study, ["reproducibility"]).sections[0].blocks)
    assert "The latest export bundle (csv" in text and "c" * 64 in text and "r" * 64 not in text
