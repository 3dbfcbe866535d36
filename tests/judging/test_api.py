"""REST API: roles, validation (400 with a message, nothing saved), the round lifecycle, reports, weights, checks."""

import json

import pytest

from judging import rounds
from judging.models import JudgeRound, JudgeTemplate, VerificationRequest
from tests.judging.helpers import build_study, script_round, seed_template

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(roles, make_endpoint, fake_provider):
    study = roles["a"]
    data = build_study(study, make_endpoint, trials=1, injection=False)
    return {
        "study": study,
        "data": data,
        "users": roles["users"],
        "template": seed_template(study),
        "base": f"/api/studies/{study.pk}",
    }


def test_roles(setup, api_for):
    base, users = setup["base"], setup["users"]
    assert api_for(users["outsider"]).get(f"{base}/judge-rounds/").status_code == 404
    assert api_for(users["outsider"]).get(f"{base}/verdicts/").status_code == 404
    coder = api_for(users["coder"])
    assert coder.get(f"{base}/judge-rounds/").status_code == 200
    assert coder.get(f"{base}/verdicts/").status_code == 403  # blind verification
    assert coder.get(f"{base}/toolkit-weights/").status_code == 403
    assert coder.post(f"{base}/judge-rounds/", {}, format="json").status_code == 403
    assert coder.post(f"{base}/judge-templates/", {}, format="json").status_code == 403
    assert api_for(users["researcher"]).get(f"{base}/verdicts/").status_code == 200


def test_round_lifecycle_via_api(setup, api_for, fake_provider):
    base, data = setup["base"], setup["data"]
    api = api_for(setup["users"]["researcher"])
    body = {
        "name": "api round",
        "template": setup["template"].pk,
        "source_run": data["run"].pk,
        "judges": [e.pk for e in data["endpoints"].values()],
        "policy": "rotation",
        "batch_size": 5,
        "seed": 9,
    }
    bad = api.post(f"{base}/judge-rounds/", dict(body, policy="k_of_n"), format="json")
    assert bad.status_code == 400 and "k-of-n needs k" in bad.json()["detail"]
    bad = api.post(f"{base}/judge-rounds/", dict(body, judges=[list(data["endpoints"].values())[0].pk]), format="json")
    # one judge only: its own model's outputs have no judge
    assert bad.status_code == 400 and "judge" in bad.json()["detail"]
    bad = api.post(f"{base}/judge-rounds/", dict(body, batch_size=0), format="json")
    assert bad.status_code == 400
    assert not JudgeRound.objects.exists()
    created = api.post(f"{base}/judge-rounds/", body, format="json")
    assert created.status_code == 201, created.content
    rid = created.json()["id"]
    plan = api.get(f"{base}/judge-rounds/{rid}/plan/").json()
    assert plan["verdicts"] == 15 and plan["batches"] == 15  # one trial: one story per model × item
    rnd = JudgeRound.objects.get(pk=rid)
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    launched = api.post(f"{base}/judge-rounds/{rid}/launch/")
    assert launched.status_code == 200 and launched.json()["status"] == "completed"
    assert launched.json()["counts"]["ok"] == 15
    assert api.post(f"{base}/judge-rounds/{rid}/launch/").status_code == 400
    assert api.post(f"{base}/judge-rounds/{rid}/retry-failed/").json()["detail"] == "No failed verdicts to retry."
    verdicts = api.get(f"{base}/verdicts/?round={rid}&status=ok").json()
    assert verdicts["count"] == 15 if isinstance(verdicts, dict) else len(verdicts) == 15
    report = api.get(f"{base}/judge-rounds/{rid}/report/").json()
    assert report["table3"]["dimensions"] == ["Leadership", "Family"] and len(report["items"]) == 3
    assert api.get(f"{base}/judge-rounds/{rid}/report/?method=nope").status_code == 400
    weights = api.get(f"{base}/toolkit-weights/?rounds={rid}").json()
    assert weights["format"] == "stereoscope-toolkit-weights" and len(weights["items"]) == 3
    assert api.get(f"{base}/toolkit-weights/?rounds=abc").status_code == 400
    assert api.get(f"{base}/toolkit-weights/?rounds=99999").status_code == 400
    csv_resp = api.get(f"{base}/toolkit-weights/?rounds={rid}&as=csv")
    assert csv_resp.status_code == 200 and b"item_number" in csv_resp.content
    # import into a new toolkit version
    imported = api.post(
        f"{base}/toolkit-weights/import/",
        {"toolkit": data["toolkit"].pk, "content": json.dumps(weights)},
        format="json",
    )
    assert imported.status_code == 201 and imported.json() == {
        "toolkit": imported.json()["toolkit"],
        "version": 2,
        "weights": 3,
    }
    broken = dict(weights, items=[dict(weights["items"][0], weight=-0.5)])
    bad = api.post(
        f"{base}/toolkit-weights/import/", {"toolkit": data["toolkit"].pk, "content": json.dumps(broken)}, format="json"
    )
    assert bad.status_code == 400 and "below 0" in bad.json()["detail"]
    unknown_item = dict(weights, items=[dict(weights["items"][0], item_number=99)])
    bad = api.post(
        f"{base}/toolkit-weights/import/",
        {"toolkit": data["toolkit"].pk, "content": json.dumps(unknown_item)},
        format="json",
    )
    assert bad.status_code == 400 and "no item(s) 99" in bad.json()["detail"]


def test_templates_via_api(setup, api_for):
    base = setup["base"]
    api = api_for(setup["users"]["researcher"])
    bad = api.post(
        f"{base}/judge-templates/",
        {"name": "x", "kind": "likert", "text": "{stories}", "scale_min": 0, "scale_max": 4, "detect_threshold": 2},
        format="json",
    )
    assert bad.status_code == 400 and "{target_stereotype}" in bad.json()["detail"]
    bad = api.post(
        f"{base}/judge-templates/",
        {
            "name": "x",
            "kind": "likert",
            "text": "{target_stereotype} {stories}",
            "scale_min": 0,
            "scale_max": 4,
            "detect_threshold": 9,
        },
        format="json",
    )
    assert bad.status_code == 400 and "threshold" in bad.json()["detail"]
    ok = api.post(
        f"{base}/judge-templates/",
        {
            "name": "L",
            "kind": "likert",
            "text": "{target_stereotype} {stories}",
            "scale_min": 0,
            "scale_max": 4,
            "detect_threshold": 2,
        },
        format="json",
    )
    assert ok.status_code == 201
    tid = ok.json()["id"]
    edited = api.patch(f"{base}/judge-templates/{tid}/", {"text": "Rate {target_stereotype}: {stories}"}, format="json")
    assert edited.status_code == 200 and edited.json()["version"] == 1
    JudgeTemplate.objects.filter(pk=tid).update(locked=True)
    versioned = api.patch(
        f"{base}/judge-templates/{tid}/", {"text": "v2 {target_stereotype}: {stories}"}, format="json"
    )
    assert versioned.status_code == 201 and versioned.json()["version"] == 2 and versioned.json()["parent"] == tid
    assert api.delete(f"{base}/judge-templates/{tid}/").status_code == 400
    assert api.delete(f"{base}/judge-templates/{versioned.json()['id']}/").status_code == 204


def test_verification_via_api(setup, api_for, fake_provider):
    data, base, users = setup["data"], setup["base"], setup["users"]
    rnd = rounds.create_round(
        setup["study"],
        name="r",
        template=setup["template"],
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    rounds.start(rnd)
    api = api_for(users["researcher"])
    assert (
        api.post(
            f"{base}/judge-rounds/{rnd.pk}/verification/", {"coders": ["nobody"], "sample_size": 2}, format="json"
        ).status_code
        == 400
    )
    assert (
        api.post(
            f"{base}/judge-rounds/{rnd.pk}/verification/", {"coders": ["outsider"], "sample_size": 2}, format="json"
        ).status_code
        == 400
    )
    sent = api.post(
        f"{base}/judge-rounds/{rnd.pk}/verification/", {"coders": ["coder"], "sample_size": 2}, format="json"
    )
    assert sent.status_code == 200 and sent.json()["requested"] == 2
    coder = api_for(users["coder"])
    reqs = list(VerificationRequest.objects.select_related("verdict"))
    for q in reqs:
        r = coder.post(f"{base}/verdicts/{q.verdict_id}/check/", {"value": q.verdict.value}, format="json")
        assert r.status_code == 200, r.content
    assert coder.post(f"{base}/verdicts/{reqs[0].verdict_id}/check/", {"value": 5}, format="json").status_code == 400
    other = rnd.verdicts.exclude(pk__in=[q.verdict_id for q in reqs]).first()
    assert coder.post(f"{base}/verdicts/{other.pk}/check/", {"value": 1}, format="json").status_code == 403
    summary = api.get(f"{base}/judge-rounds/{rnd.pk}/verification/").json()
    assert summary["n"] == 2 and summary["agreement"] == 1.0


def test_schema_lists_judging_endpoints(admin_client):
    paths = admin_client.get("/api/schema/?format=json").json()["paths"]
    assert "/api/studies/{study_pk}/judge-rounds/{id}/launch/" in paths
    assert "/api/studies/{study_pk}/toolkit-weights/import/" in paths


def test_a_foreign_judge_or_source_run_answers_no_such_thing_in_this_study(setup, make_endpoint, roles):
    foreign = make_endpoint(roles["b"], name="secret-judge")
    with pytest.raises(rounds.RoundError, match=rf"No endpoint {foreign.pk} in this study") as exc:
        rounds.create_round(
            setup["study"], name="r", template=setup["template"], source_run=setup["data"]["run"], judges=[foreign]
        )
    assert "secret-judge" not in str(exc.value) and "another study" not in str(exc.value)
    assert not JudgeRound.objects.filter(name="r").exists()
