"""In Chromium: add an endpoint, create a run from the built-in 30-item Phase 3 toolkit with two endpoints × 5
trials, check the dry run, start it, watch the progress poll to completion, open an output."""

import threading

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_from_builtin_toolkit_in_the_browser(page, login, roles, make_endpoint, fake_provider, monkeypatch):
    from django.db import connection

    from generation.builtin import builtin_specs
    from generation.models import GenerationRun, Output
    from generation.runs import services as runs
    from stereoscope.builtin import load_builtins

    load_builtins(builtin_specs(), log=lambda line: None)
    study = roles["a"]
    from tests.generation.runs.conftest import approved_connection

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-browser-test")
    approved_connection("openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider")
    make_endpoint(study, "anthropic", name="Claude (fake)", model_id="claude-fake")
    fake_provider.default_delay = 0.1  # 150 units per endpoint at concurrency 8: at least 2 s
    workers = []

    def run_in_background(run):  # stands in for a Celery worker, so the page sees the run live
        def target():
            try:
                runs.execute(run.pk)
            finally:
                connection.close()

        workers.append(threading.Thread(target=target, daemon=True))
        workers[-1].start()

    monkeypatch.setattr(runs, "_enqueue", run_in_background)

    login("researcher")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Runs')")
    page.click("a:has-text('Model endpoints')")
    page.click("a:has-text('New endpoint')")
    page.fill("input[name=name]", "GPT (fake)")
    page.select_option("select[name=connection]", label="Fake provider")
    page.fill("input[name=model_id]", "gpt-fake")
    page.fill("textarea[name=default_params]", '{"temperature": 0.7, "max_tokens": 500}')
    page.fill("input[name=max_concurrency]", "8")
    page.click("#endpoint-form button[type=submit]")
    page.wait_for_selector("text=Endpoint “GPT (fake)” saved.")
    row = page.locator("#endpoints tr:has-text('GPT (fake)')")
    assert "FAKE_KEY_ENV" in row.inner_text() and row.locator(".badge.ok").inner_text() == "set"
    assert "sk-browser-test" not in page.content()

    page.click("nav.subnav a:has-text('Runs')")
    page.click("a:has-text('New run')")
    page.fill("input[name=name]", "Phase 3 × 2 models")
    label = page.locator("select[name=toolkit] option", has_text="Phase 3").first.inner_text()
    assert "(built-in library)" in label
    page.select_option("select[name=toolkit]", label=label)
    page.check("label:has-text('GPT (fake)') input")
    page.check("label:has-text('Claude (fake)') input")
    page.fill("input[name=trials]", "5")
    page.fill("textarea[name=system_prompt]", "Write about 400 words.")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("h1:has-text('Dry run')")
    totals = page.locator("#plan-totals").inner_text()
    assert "300" in totals and "API calls" in totals
    assert page.locator("#plan-sample li").count() == 20
    assert not Output.objects.exists()

    page.click("#start-run")
    page.wait_for_selector("#run-progress")
    assert page.locator("#run-status").inner_text() in ("Queued", "Running")
    assert page.locator("#run-progress[hx-trigger]").count() == 1  # the page polls while the run is live
    page.wait_for_selector("#run-status:has-text('Completed')", timeout=120_000)  # reached through htmx polling
    assert page.locator("#n-done").inner_text() == "300" and page.locator("#n-failed").inner_text() == "0"
    per_endpoint = page.locator("#per-endpoint tbody").inner_text()
    assert "GPT (fake)" in per_endpoint and "Claude (fake)" in per_endpoint
    for worker in workers:
        worker.join(60)
    run = GenerationRun.objects.get(name="Phase 3 × 2 models")
    assert run.toolkit.study.is_library and run.outputs.filter(status="done").count() == 300

    page.click("main a:has-text('outputs')")
    page.wait_for_selector("#outputs")
    assert "300 outputs" in page.content()
    page.select_option("select[name=model]", "claude-fake")
    page.fill("input[name=item]", "17")
    page.click("#output-filters button[type=submit]")
    page.wait_for_selector("text=5 outputs")
    page.locator("#outputs tbody tr a").first.click()
    page.wait_for_selector("#story")
    output = Output.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    assert output.item.number == 17 and output.model_name == "claude-fake"
    assert page.locator("#story").inner_text().strip() == output.text.strip()
    assert page.locator("#prompt").inner_text().strip() == output.prompt_text.strip()
    assert "Attempts (1)" in page.content()
