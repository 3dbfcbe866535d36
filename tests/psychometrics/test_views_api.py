"""Pages and API: roles, bad input, escaping, exports."""
import csv
import io
import json

import pytest
from openpyxl import load_workbook

from psychometrics import runs, services
from psychometrics.models import ContextSet, Instrument, PersonaSet, QuestionnaireRun

from .helpers import load_library
from .test_pure import MINIMAL

pytestmark = pytest.mark.django_db
XSS = '<script>alert("x")</script>'


@pytest.fixture
def done_run(roles, make_endpoint, fake_provider):
    study = roles["a"]
    asi, personas = load_library()
    ctx = services.contexts_from_personas(study, "five", personas, n=5, seed=1)
    endpoint = make_endpoint(study, name="ep", model_id="m-1")
    fake_provider.default = {"text": f"3 {XSS}"}
    run = runs.create_run(study, name="Run <b>1</b>", instrument=asi, context_set=ctx, endpoints=[endpoint],
                          option_order="permuted", audit_per_model=10)
    runs.start(run)
    run.refresh_from_db()
    return run


def test_pages_render_for_viewer_roles_and_escape_model_text(done_run, roles, client_for):
    study = roles["a"]
    web = client_for(roles["users"]["coder"])
    base = f"/studies/{study.pk}/questionnaires/"
    for url in ["", "personas/", f"runs/{done_run.pk}/", f"runs/{done_run.pk}/report/", f"runs/{done_run.pk}/responses/",
                f"runs/{done_run.pk}/audit/", f"runs/compare/?a={done_run.pk}&b={done_run.pk}&kind=option_order",
                f"instruments/{done_run.instrument_id}/", f"contexts/{done_run.context_set_id}/",
                f"validation/?run={done_run.pk}&option_order={done_run.pk}", "validation/?run=abc",
                f"personas/{PersonaSet.objects.get(builtin_key='rupsycho-personas').pk}/"]:
        r = web.get(base + url)
        assert r.status_code == 200, url
        body = r.content.decode()
        assert XSS not in body and "<b>1</b>" not in body, url
    body = web.get(base + f"runs/{done_run.pk}/responses/").content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    report = web.get(base + f"runs/{done_run.pk}/report/").content.decode()
    assert "Missing data:" in report and "<svg class=\"hist\"" in report and "Stratified α" in report
    # coders may not launch or export
    assert web.post(base + f"runs/{done_run.pk}/start/").status_code == 403
    assert web.get(base + f"runs/{done_run.pk}/export/responses.csv").status_code == 403
    assert web.get(base + "runs/new/").status_code == 403


def test_outsider_gets_404(done_run, roles, client_for, api_for):
    study = roles["a"]
    web, api = client_for(roles["users"]["outsider"]), api_for(roles["users"]["outsider"])
    assert web.get(f"/studies/{study.pk}/questionnaires/runs/{done_run.pk}/report/").status_code == 404
    assert api.get(f"/api/studies/{study.pk}/questionnaire-runs/").status_code == 404
    other = client_for(roles["users"]["b_admin"])
    assert other.get(f"/studies/{roles['b'].pk}/questionnaires/runs/{done_run.pk}/").status_code == 404


def test_exports_csv_and_xlsx(done_run, roles, client_for):
    web = client_for(roles["users"]["researcher"])
    base = f"/studies/{roles['a'].pk}/questionnaires/runs/{done_run.pk}/export/"
    rows = list(csv.DictReader(io.StringIO(web.get(base + "responses.csv").content.decode())))
    assert len(rows) == 5 * 22
    row = rows[0]
    assert row["raw_text"].startswith("3 <script>") and row["extraction"] == "ok" and row["permutation"].count("|") == 5
    shown = row["permutation"].split("|")
    assert float(row["value"]) == float(shown[3])  # code 3 = the 4th option shown → its original value
    if row["reverse"] == "1":
        assert float(row["recoded"]) == 5 - float(row["value"])
    scores = list(csv.DictReader(io.StringIO(web.get(base + "scores.csv").content.decode())))
    assert {s["score"] for s in scores} == {"HS", "BS", "total"} and len(scores) == 15
    wb = load_workbook(io.BytesIO(web.get(base + "xlsx").content), read_only=True)
    assert {"columns", "responses", "scores", "items", "reliability_validity"} <= set(wb.sheetnames)
    run_file = json.loads(web.get(base + "run.json").content)
    assert run_file["options"] == {"order": "permuted", "numbering": "position", "seed": 0}


def test_instrument_import_page_bad_and_good(roles, client_for):
    web = client_for(roles["users"]["researcher"])
    url = f"/studies/{roles['a'].pk}/questionnaires/instruments/import/"
    r = web.post(url, {"text": '{"name": "x", "scale": {"min": 3, "max": 1}}'}, follow=True)
    assert "Nothing imported" in r.content.decode() and "greater than" in r.content.decode()
    assert not Instrument.objects.filter(study=roles["a"]).exists()
    r = web.post(url, {"text": json.dumps(MINIMAL)}, follow=True)
    assert r.status_code == 200 and Instrument.objects.filter(study=roles["a"], name="Mini").count() == 1
    web.post(url, {"text": json.dumps(MINIMAL)})
    assert list(Instrument.objects.filter(study=roles["a"], name="Mini").values_list("version", flat=True)) == [2, 1]


def test_persona_and_context_pages(roles, client_for):
    study = roles["a"]
    web = client_for(roles["users"]["researcher"])
    base = f"/studies/{study.pk}/questionnaires/"
    r = web.post(base + "personas/generate/", {"name": "g", "template": "{title} {surname}",
                                               "attributes": '{"title": ["Mr.", "Ms."], "surname": ["Kim", "Lu"]}'}, follow=True)
    ps = PersonaSet.objects.get(study=study, name="g")
    assert ps.personas.count() == 4
    r = web.post(base + "personas/generate/", {"name": "h", "template": "{title} {name}", "attributes": '{"title": ["Mr."]}'}, follow=True)
    assert "Nothing generated" in r.content.decode() and not PersonaSet.objects.filter(name="h").exists()
    web.post(base + f"personas/{ps.pk}/twins/")
    assert ps.personas.count() == 4  # Mr. Kim ↔ Ms. Kim exist already: linked, not duplicated
    kim = ps.personas.get(text="Mr. Kim")
    assert kim.twin.text == "Ms. Kim" and kim.twin.twin_id == kim.pk
    web.post(base + "personas/import/", {"name": "nurses", "file": _file(b'{"text": "a nurse who loves her job"}\n', "p.jsonl")})
    nurses = PersonaSet.objects.get(name="nurses")
    web.post(base + f"personas/{nurses.pk}/twins/")
    assert sorted(nurses.personas.values_list("text", flat=True)) == ["a nurse who loves her job", "a nurse who loves his job"]
    p = ps.personas.first()
    r = web.post(base + f"include/persona/{p.pk}/", {"included": "0", "reason": ""}, follow=True)
    assert "reason is required" in r.content.decode()
    web.post(base + f"include/persona/{p.pk}/", {"included": "0", "reason": "duplicate"})
    p.refresh_from_db()
    assert not p.included and p.exclude_reason == "duplicate"
    web.post(base + "contexts/from-personas/", {"name": "c", "persona_set": ps.pk, "n": 2, "seed": 3})
    cs = ContextSet.objects.get(study=study, name="c")
    assert cs.contexts.count() == 2 and cs.seed == 3
    bad = io.BytesIO(b'{"turns": [{"role": "wizard", "content": "x"}]}\n')
    bad.name = "ctx.jsonl"
    r = web.post(base + "contexts/import/", {"name": "bad", "file": bad, "seed": 0}, follow=True)
    assert "Nothing imported" in r.content.decode() and not ContextSet.objects.filter(name="bad").exists()


def _file(content, name):
    f = io.BytesIO(content)
    f.name = name
    return f


def test_run_form_errors(roles, client_for, make_endpoint):
    study = roles["a"]
    asi, _ = load_library()
    ctx = services.empty_context_set(study)
    ep = make_endpoint(study)
    web = client_for(roles["users"]["researcher"])
    r = web.post(f"/studies/{study.pk}/questionnaires/runs/new/", {
        "name": "x", "instrument": asi.pk, "context_set": ctx.pk, "endpoints": [ep.pk], "repetitions": 1,
        "template_key": "fang2025", "option_format": "lines", "option_order": "permuted", "option_numbering": "position",
        "order_seed": 0, "extractors": "number, bogus", "refusal_policy": "fallback", "json_field": "answer",
        "param_overrides": "{", "audit_per_model": 10})
    body = r.content.decode()
    assert r.status_code == 200 and "Unknown extractor" in body and "Not valid JSON" in body
    assert not QuestionnaireRun.objects.exists()


def test_api_end_to_end(roles, api_for, make_endpoint, fake_provider):
    study = roles["a"]
    asi, personas = load_library()
    ep = make_endpoint(study, name="api-ep")
    api = api_for(roles["users"]["researcher"])
    base = f"/api/studies/{study.pk}/"
    assert api.post(base + "instruments/", {"spec": {"name": "x"}}, format="json").status_code == 400
    r = api.post(base + "instruments/", {"spec": MINIMAL}, format="json")
    assert r.status_code == 201 and r.json()["items"][0]["item_id"] == "1"
    ids = [i["id"] for i in api.get(base + "instruments/").json()["results"]]
    assert asi.pk in ids  # library instruments are visible
    r = api.post(base + "context-sets/", {"name": "ctx", "persona_set": personas.pk, "n": 3, "seed": 9}, format="json")
    assert r.status_code == 201 and len(r.json()["contexts"]) == 3
    cs_id = r.json()["id"]
    fake_provider.default = {"text": '{"answer": "agree somewhat"}'}
    bad = api.post(base + "questionnaire-runs/", {"name": "r", "instrument": asi.pk, "context_set": cs_id, "endpoints": [ep.pk],
                                                  "template_key": "fang2025", "option_order": "reversed"}, format="json")
    assert bad.status_code == 400 and "cannot change" in bad.json()["detail"]
    r = api.post(base + "questionnaire-runs/", {"name": "r", "instrument": asi.pk, "context_set": cs_id, "endpoints": [ep.pk],
                                                "template_key": "rupsycho_json", "option_order": "reversed",
                                                "extractors": ["json", "label"]}, format="json")
    assert r.status_code == 201, r.json()
    run_id = r.json()["id"]
    r = api.post(base + f"questionnaire-runs/{run_id}/start/")
    assert r.status_code == 200 and r.json()["status"] == "completed" and r.json()["counts"]["done"] == 66
    rep = api.get(base + f"questionnaire-runs/{run_id}/report/").json()
    assert rep["models"][0]["extraction"]["ok"] == 66
    responses = api.get(base + f"questionnaire-responses/?run={run_id}&audit=1").json()
    assert responses["count"] == 66  # audit sample of 100 per model caps at all 66 answers
    rid = responses["results"][0]["id"]
    assert responses["results"][0]["value"] == 4.0
    coder = api_for(roles["users"]["coder"])
    assert coder.post(base + f"questionnaire-responses/{rid}/audit/", {"correct": True}, format="json").status_code == 200
    assert coder.post(base + "questionnaire-runs/", {}, format="json").status_code == 403
    assert coder.post(base + f"questionnaire-responses/{rid}/audit/", {"correct": True, "corrected_value": 99}, format="json").status_code == 400
    cmp = api.get(base + f"questionnaire-runs/{run_id}/compare/?other={run_id}&kind=option_order").json()
    assert cmp["rows"][0]["n"] == 3
    assert api.get(base + f"questionnaire-runs/{run_id}/compare/?other=x").status_code == 400


def test_registered_datasets(done_run, roles):
    from stereoscope.datasets import datasets

    found = datasets()
    responses, scores = found["questionnaire_responses"], found["questionnaire_scores"]
    assert responses.app == "psychometrics" and scores.min_role == "researcher"
    rows = list(responses.rows(roles["a"], {"run_ids": [done_run.pk]}))
    assert len(rows) == 110 == responses.count(roles["a"], {"run_ids": [done_run.pk]})
    assert set(rows[0]) == set(responses.column_names)
    assert list(responses.rows(roles["a"], {"models": ["nobody"]})) == []
    assert list(responses.rows(roles["b"], {})) == []  # another study's runs never leak
    srows = list(scores.rows(roles["a"], {}))
    assert len(srows) == 15 and set(srows[0]) == set(scores.column_names)


def test_api_validation_summary(done_run, roles, api_for):
    api = api_for(roles["users"]["coder"])
    base = f"/api/studies/{roles['a'].pk}/questionnaire-runs/{done_run.pk}/validation/"
    out = api.get(base + f"?option_order={done_run.pk}").json()
    row = out["rows"][0]
    assert row["option_order"]["r"] is None or row["option_order"]["rating"] in ("++", "+", "–", "--")
    assert row["gate"] is False and row["convergent"] is None  # no alternate-form run: validity not assessed
    assert api.get(base + "?alternate=999999").status_code == 400
