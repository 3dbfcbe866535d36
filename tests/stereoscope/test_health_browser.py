"""In Chromium: a run that waits with no live worker says so on its page; when a worker comes up, the bar returns."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_page_shows_stalled_until_a_worker_is_live(page, login, roles):
    from generation.models import GenerationRun
    from stereoscope.models import WorkerHeartbeat

    study = roles["a"]
    run = GenerationRun.objects.create(study=study, name="waiting run", status="queued")
    login("researcher")
    page.goto(f"/studies/{study.pk}/runs/{run.pk}/")
    notice = page.locator("#run-progress .job-stalled")
    assert notice.inner_text().startswith("Stalled — no live worker.")
    assert page.locator("#run-progress .progress").count() == 0
    WorkerHeartbeat.objects.create(hostname="celery@browser", pid=1)  # a worker starts; the page polls every second
    page.wait_for_selector("#run-progress .progress")
    assert page.locator("#run-progress .job-stalled").count() == 0
