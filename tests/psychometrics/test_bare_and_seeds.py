"""The bare condition (no context: each item in a fresh chat, no persona) and seeds as a grid dimension."""

import pytest

from psychometrics import reports, runs
from psychometrics.datasets import response_rows
from psychometrics.models import QuestionnaireRun
from psychometrics.services import PsychError

from .helpers import load_library

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(study, make_endpoint, fake_provider):
    asi, personas = load_library()
    endpoint = make_endpoint(study, name="fake-gpt", model_id="fake-gpt", default_params={"temperature": 0})
    return {"asi": asi, "endpoint": endpoint, "study": study, "fake": fake_provider, "personas": personas}


def test_bare_run_has_one_implicit_empty_context(setup):
    asi, endpoint, study, fake = setup["asi"], setup["endpoint"], setup["study"], setup["fake"]
    fake.default = {"text": "2"}
    run = runs.create_run(study, name="Bare", instrument=asi, context_set=None, endpoints=[endpoint], repetitions=2)
    assert run.context_set is None
    plan = runs.plan(run)
    assert plan["calls"] == 22 * 2 and plan["examples"][0]["context"] == "none"
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    responses = list(run.responses.all())
    assert len(responses) == 44
    # a fresh chat: the item is the only message, no system persona
    assert all([m["role"] for m in r.messages] == ["user"] for r in responses)
    runs.materialize(run)  # idempotent without a context row
    assert run.responses.count() == 44
    rows = list(response_rows(study))
    assert {r["context"] for r in rows} == {"none"} and {r["persona"] for r in rows} == {""}
    report = reports.run_report(run)
    assert report["models"][0]["analysis"]["descriptives"]["total"]["n"] == 2
    scores = reports.scores_table(run)
    assert {s["context"] for s in scores} == {"none"}


def test_bare_run_file_round_trip_and_persona_templates_refused(setup):
    asi, endpoint, study = setup["asi"], setup["endpoint"], setup["study"]
    run = runs.create_run(study, name="Bare", instrument=asi, context_set=None, endpoints=[endpoint])
    data = runs.export_run_file(run)
    assert data["context_set"] is None
    again = runs.create_run_from_file(study, data, name="Bare again")
    assert again.context_set is None and runs.export_run_file(again) == {**data, "name": "Bare again"}
    with pytest.raises(PsychError, match="needs a persona"):
        runs.create_run(study, name="x", instrument=asi, context_set=None, endpoints=[endpoint],
                        template_key="rupsycho_json")
    assert QuestionnaireRun.objects.count() == 2


def test_bare_run_through_form_and_api(roles, client_for, api_for, make_endpoint, fake_provider):
    study = roles["a"]
    asi, _ = load_library()
    ep = make_endpoint(study, name="ep")
    web = client_for(roles["users"]["researcher"])
    page = web.get(f"/studies/{study.pk}/questionnaires/runs/new/").content.decode()
    assert "No context" in page
    r = web.post(f"/studies/{study.pk}/questionnaires/runs/new/", {
        "name": "bare form", "instrument": asi.pk, "context_set": "", "endpoints": [ep.pk], "repetitions": 1,
        "template_key": "jung2025", "option_format": "lines", "option_order": "fixed", "option_numbering": "position",
        "order_seed": 0, "extractors": "number", "refusal_policy": "fallback", "json_field": "answer",
        "param_overrides": "", "audit_per_model": 10, "seeds": "3, 4"})
    assert r.status_code == 302, r.content.decode()[:2000]
    made = QuestionnaireRun.objects.get(name="bare form")
    assert made.context_set is None and made.seeds == [3, 4] and made.repetitions == 2
    r = web.post(f"/studies/{study.pk}/questionnaires/runs/new/", {
        "name": "bad seeds", "instrument": asi.pk, "context_set": "", "endpoints": [ep.pk], "repetitions": 1,
        "template_key": "jung2025", "option_format": "lines", "option_order": "fixed", "option_numbering": "position",
        "order_seed": 0, "extractors": "number", "refusal_policy": "fallback", "json_field": "answer",
        "param_overrides": "", "audit_per_model": 10, "seeds": "3, x"})
    assert r.status_code == 200 and "Seeds must be a list of whole numbers" in r.content.decode()
    assert not QuestionnaireRun.objects.filter(name="bad seeds").exists()
    api = api_for(roles["users"]["researcher"])
    r = api.post(f"/api/studies/{study.pk}/questionnaire-runs/", {
        "name": "bare api", "instrument": asi.pk, "context_set": None, "endpoints": [ep.pk]}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["context_set"] is None
    run_id = r.json()["id"]
    fake_provider.default = {"text": "1"}
    assert api.post(f"/api/studies/{study.pk}/questionnaire-runs/{run_id}/start/").status_code == 200
    rows = api.get(f"/api/studies/{study.pk}/questionnaire-responses/?run={run_id}").json()["results"]
    assert rows and {row["context"] for row in rows} == {"none"}
    assert web.get(f"/studies/{study.pk}/questionnaires/runs/{run_id}/report/").status_code == 200
    assert "no context" in web.get(f"/studies/{study.pk}/questionnaires/").content.decode()


def test_seeds_are_a_grid_dimension(setup):
    """R.U.Psycho: each repetition uses its own seed, sent as the provider's seed parameter and kept per response."""
    asi, endpoint, study, fake = setup["asi"], setup["endpoint"], setup["study"], setup["fake"]
    fake.default = {"text": "4"}
    run = runs.create_run(study, name="Seeds", instrument=asi, context_set=None, endpoints=[endpoint],
                          seeds=[11, 22, 33])
    assert run.repetitions == 3 and run.seeds == [11, 22, 33]
    runs.start(run)
    by_rep = {rep: set(run.responses.filter(repetition=rep).values_list("seed", flat=True)) for rep in (1, 2, 3)}
    assert by_rep == {1: {11}, 2: {22}, 3: {33}}
    sent = {}
    for request in fake.requests:
        sent.setdefault(request["body"].get("seed"), 0)
        sent[request["body"].get("seed")] += 1
    assert sent == {11: 22, 22: 22, 33: 22}
    rows = list(response_rows(study))
    assert {(r["repetition"], r["seed"]) for r in rows} == {(1, 11), (2, 22), (3, 33)}
    data = runs.export_run_file(run)
    assert data["seeds"] == [11, 22, 33]
    assert runs.create_run_from_file(study, data, name="Seeds again").seeds == [11, 22, 33]
    with pytest.raises(PsychError, match="one seed per repetition"):
        runs.create_run(study, name="x", instrument=asi, context_set=None, endpoints=[endpoint], repetitions=2,
                        seeds=[1, 2, 3])
    with pytest.raises(PsychError, match="whole numbers"):
        runs.create_run(study, name="x", instrument=asi, context_set=None, endpoints=[endpoint], seeds=["a"])
    with pytest.raises(PsychError, match="different"):
        runs.create_run(study, name="x", instrument=asi, context_set=None, endpoints=[endpoint], seeds=[1, 1])


def test_without_seeds_the_endpoint_seed_applies(setup):
    asi, endpoint, study, fake = setup["asi"], setup["endpoint"], setup["study"], setup["fake"]
    fake.default = {"text": "4"}
    run = runs.create_run(study, name="One seed", instrument=asi, context_set=None, endpoints=[endpoint],
                          repetitions=2, param_overrides={"seed": 5})
    runs.start(run)
    assert {r["body"].get("seed") for r in fake.requests} == {5}
    assert set(run.responses.values_list("seed", flat=True)) == {5}
