"""In Chromium: build a context set from the built-in R.U.Psycho personas, create a permuted ASI run against the
fake provider, start it, watch it complete, read the report, audit an extraction."""
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_questionnaire_run_and_report_pages(page, login, make_user, make_endpoint, fake_provider):
    from psychometrics.models import ContextSet, ExtractionAudit, QuestionnaireRun
    from stereoscope.models import Membership, Study

    from .helpers import load_library

    load_library()
    user = make_user("rita")
    study = Study.objects.create(name="Audit")
    Membership.objects.create(study=study, user=user, role="researcher")
    make_endpoint(study, name="fake-model", model_id="fake-model")
    fake_provider.script([{"text": "I'm sorry, I cannot answer that."}] * 4, match="Women are too easily offended.")
    fake_provider.default = {"text": "4 <img src=x onerror=alert(1)>"}

    login("rita")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Questionnaires')")
    page.wait_for_selector("h1:has-text('Questionnaires')")
    assert "Ambivalent Sexism Inventory" in page.locator("#instruments").inner_text()

    page.click("a:has-text('Personas & contexts')")
    page.fill("#from-personas input[name=name]", "Ten personas")
    page.select_option("#from-personas select[name=persona_set]", label="R.U.Psycho title × surname personas")
    page.fill("#from-personas input[name=n]", "10")
    page.fill("#from-personas input[name=seed]", "4")
    page.click("#from-personas button[type=submit]")
    page.wait_for_selector("text=Context set “Ten personas” with 10 contexts.")
    cs = ContextSet.objects.get(study=study)
    assert cs.contexts.count() == 10

    # exclude one context with a reason (htmx swaps the row)
    first = cs.contexts.order_by("order").first()
    row = page.locator(f"#context-{first.pk}")
    row.locator("input[name=reason]").fill("pilot persona")
    row.locator("button:has-text('Exclude')").click()
    page.wait_for_selector(f"#context-{first.pk} >> text=pilot persona")

    page.click("a:has-text('New run')")
    page.fill("#run-form input[name=name]", "ASI permuted")
    page.select_option("#run-form select[name=instrument]", label="Ambivalent Sexism Inventory v1")
    page.select_option("#run-form select[name=context_set]", label="Ten personas")
    page.check("#run-form input[name=endpoints]")
    page.select_option("#run-form select[name=option_order]", "permuted")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("text=Plan (dry run)")
    assert "198 calls" in page.locator("main").inner_text()  # 22 items × 9 included contexts
    page.click("#start-run")
    page.wait_for_selector("#progress >> text=Completed")
    counts = page.locator("#extraction-counts").inner_text()
    assert "198" in counts and "4" in counts

    page.click("#report-link")
    page.wait_for_selector("#missing-table")
    assert "Missing data:" in page.locator("#missing-policy").inner_text()
    missing_row = page.locator("#missing-table tbody tr").first.inner_text()
    assert "198" in missing_row and "194" in missing_row
    assert page.locator("svg.hist").count() >= 3
    report_text = page.locator("main").inner_text()
    assert "Stratified α" in report_text and "Extraction audit" in report_text and page.dialogs == []
    # R.U.Psycho's persona-attribute comparison: the personas' title and surname group are compared
    attributes = page.locator("#attribute-tests").inner_text()
    assert "Scores by persona attribute" in attributes and "title" in attributes

    run = QuestionnaireRun.objects.get(study=study)
    page.goto(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/responses/")
    assert "<img src=x onerror=alert(1)>" in page.locator("#responses").inner_text()  # shown as text, not markup
    assert page.locator("#responses img").count() == 0 and page.dialogs == []

    page.goto(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/audit/")
    page.locator("#audit tbody tr").first.locator("button:has-text('Right')").click()
    page.wait_for_selector("#audit >> text=right")
    assert ExtractionAudit.objects.filter(user=user, correct=True).count() == 1

    # the bare condition: no context set, each item in a fresh chat with no persona (Fang Phase 1)
    page.goto(f"/studies/{study.pk}/questionnaires/runs/new/")
    page.fill("#run-form input[name=name]", "ASI bare")
    page.select_option("#run-form select[name=instrument]", label="Ambivalent Sexism Inventory v1")
    page.select_option("#run-form select[name=context_set]", label="No context (bare: each item in a fresh chat)")
    page.fill("#run-form input[name=repetitions]", "2")
    page.check("#run-form input[name=endpoints]")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("text=Plan (dry run)")
    main = page.locator("main").inner_text()
    assert "44 calls" in main and "no context (bare)" in main  # 22 items × 2 repetitions
    page.click("#start-run")
    page.wait_for_selector("#progress >> text=Completed")
    bare = QuestionnaireRun.objects.get(study=study, name="ASI bare")
    assert bare.context_set is None
    assert all([m["role"] for m in r.messages] == ["user"] for r in bare.responses.all())
    page.click("#report-link")
    page.wait_for_selector("#missing-table")
    assert "no context (bare)" in page.locator("main").inner_text()
