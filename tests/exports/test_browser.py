import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_researcher_exports_from_the_page_and_sees_progress(coded_study, page, login, export_root):
    from exports.models import ExportJob

    study = coded_study["study"]
    login("researcher")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Exports')")
    page.wait_for_selector("h1:has-text('Exports')")
    page.select_option("select[name=format]", "csv")
    page.check("input[name=datasets][value=analysis_wide]")
    page.check("input[name=pseudonymise]")
    page.click("text=Start export")
    page.wait_for_selector("text=is ready")
    job = ExportJob.objects.get(study=study)
    assert job.datasets == ["analysis_wide"] and job.status == "completed"
    with page.expect_download() as download:
        page.click(f"#export-job-{job.pk} >> text=Download")
    assert download.value.suggested_filename == job.file_name

    # a job still running is polled by htmx until it is done
    running = ExportJob.objects.create(
        study=study,
        format="jsonl",
        datasets=["codings"],
        status="running",
        progress={"dataset": "codings", "rows": 3, "total": 10, "percent": 30},
    )
    page.reload()
    page.wait_for_selector(f"#export-job-{running.pk} >> text=3 / 10")
    ExportJob.objects.filter(pk=running.pk).update(status="failed", message="<b>disk full</b>")
    page.wait_for_selector(f"#export-job-{running.pk} >> text=<b>disk full</b>")
