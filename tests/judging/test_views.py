"""Pages: roles on every view, plan → launch → verdicts, report, exports, weights import, human verification, XSS."""

import json

import pytest

from judging import rounds
from judging.models import HumanCheck, ItemWeight, JudgeRound, Verdict, VerificationRequest
from tests.judging.helpers import build_study, script_round, seed_template

pytestmark = pytest.mark.django_db
XSS = '<script>alert("x")</script>'


@pytest.fixture
def judged(roles, make_endpoint, fake_provider):
    study = roles["a"]
    data = build_study(study, make_endpoint, trials=2, injection=False)
    out = data["run"].outputs.order_by("pk").first()
    out.text += " " + XSS
    out.save()
    rnd = rounds.create_round(
        study,
        name="R1",
        template=seed_template(study),
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
        seed=3,
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    fake_provider.rules[0][1][0]["text"] += f"\nStory 1 rationale {XSS}"
    rounds.start(rnd)
    Verdict.objects.filter(round=rnd, output=out).update(rationale=XSS)
    return {"study": study, "round": rnd, "data": data, "users": roles["users"], "b": roles["b"]}


def urls(study, rnd):
    base = f"/studies/{study.pk}/judging"
    v = rnd.verdicts.first()
    return {
        "viewer": [f"{base}/", f"{base}/templates/{rnd.template_id}/"],
        "coder": [f"{base}/verify/"],
        "researcher": [
            f"{base}/rounds/new/",
            f"{base}/templates/new/",
            f"{base}/rounds/{rnd.pk}/",
            f"{base}/rounds/{rnd.pk}/progress/",
            f"{base}/rounds/{rnd.pk}/report/",
            f"{base}/rounds/{rnd.pk}/verdicts.csv",
            f"{base}/rounds/{rnd.pk}/verdicts.json",
            f"{base}/rounds/{rnd.pk}/verdicts/{v.pk}/",
            f"{base}/rounds/{rnd.pk}/verification/",
            f"{base}/weights/",
        ],
    }


def test_roles_on_every_page(judged, client_for):
    study, rnd, users = judged["study"], judged["round"], judged["users"]
    pages = urls(study, rnd)
    outsider = client_for(users["outsider"])
    for group in pages.values():
        for url in group:
            assert outsider.get(url).status_code == 404, url
    coder = client_for(users["coder"])
    for url in pages["researcher"]:
        assert coder.get(url).status_code == 403, url
    for url in pages["viewer"] + pages["coder"]:
        assert coder.get(url).status_code == 200, url
    researcher = client_for(users["researcher"])
    for url in pages["viewer"] + pages["coder"] + pages["researcher"]:
        assert researcher.get(url).status_code == 200, url
    assert coder.post(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/do/cancel/").status_code == 403
    assert outsider.post(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/do/cancel/").status_code == 404
    # a round of study A is not reachable under study B
    b_admin = client_for(users["b_admin"])
    assert b_admin.get(f"/studies/{judged['b'].pk}/judging/rounds/{rnd.pk}/").status_code == 404


def test_llm_text_is_escaped(judged, client_for):
    study, rnd = judged["study"], judged["round"]
    c = client_for(judged["users"]["researcher"])
    v = Verdict.objects.get(round=rnd, rationale=XSS)
    for url in [
        f"/studies/{study.pk}/judging/rounds/{rnd.pk}/",
        f"/studies/{study.pk}/judging/rounds/{rnd.pk}/verdicts/{v.pk}/",
    ]:
        html = c.get(url).content.decode()
        assert XSS not in html and "&lt;script&gt;" in html


def test_plan_then_launch_from_the_pages(roles, make_endpoint, fake_provider, client_for):
    study = roles["a"]
    data = build_study(study, make_endpoint, trials=1, injection=False)
    template = seed_template(study)
    c = client_for(roles["users"]["researcher"])
    form = {
        "name": "From the page",
        "source_run": data["run"].pk,
        "template": template.pk,
        "judges": [e.pk for e in data["endpoints"].values()],
        "policy": "rotation",
        "batch_size": 5,
        "seed": 4,
        "reask_missing": "on",
        "item_numbers": "1, 3",
    }
    # bad input: k-of-n with k larger than the judges available -> a clear message, nothing saved
    bad = c.post(f"/studies/{study.pk}/judging/rounds/new/", dict(form, policy="k_of_n", k=9))
    assert bad.status_code == 200 and "k = 9 but only 4" in bad.content.decode()
    assert not JudgeRound.objects.exists()
    bad = c.post(f"/studies/{study.pk}/judging/rounds/new/", dict(form, item_numbers="one"))
    assert "List item numbers" in bad.content.decode() and not JudgeRound.objects.exists()
    response = c.post(f"/studies/{study.pk}/judging/rounds/new/", form)
    rnd = JudgeRound.objects.get()
    assert response.status_code == 302 and rnd.output_filter == {"item_numbers": [1, 3]}
    page = c.get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/").content.decode()
    assert "nothing has been called yet" in page and "10 outputs" in page and 'id="launch"' in page
    assert not fake_provider.requests
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    response = c.post(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/do/launch/")
    assert response.status_code == 302
    rnd.refresh_from_db()
    assert rnd.status == "completed" and rnd.verdicts.filter(status="ok").count() == 10
    again = c.post(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/do/launch/", follow=True).content.decode()
    assert "finished" in again
    assert c.post(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/do/bogus/").status_code == 302


def test_report_and_exports(judged, client_for):
    study, rnd = judged["study"], judged["round"]
    c = client_for(judged["users"]["researcher"])
    html = c.get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/report/").content.decode()
    assert 'id="table3"' in html and "<svg" in html and 'id="judge-matrix"' in html and "Overall" in html
    assert 'id="by-position"' in html and 'id="by-judge"' in html
    csv_text = c.get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/verdicts.csv").content.decode()
    assert csv_text.splitlines()[0].startswith("round_id,round,verdict_id") and len(csv_text.splitlines()) >= 31
    data = json.loads(c.get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/verdicts.json").content)
    assert len(data["verdicts"]) == 30 and data["rounds"][0]["template"]["name"] == "Seed"
    assert c.get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/verdicts.xml").status_code == 404
    weights = json.loads(c.get(f"/studies/{study.pk}/judging/weights/?round={rnd.pk}&download=json").content)
    assert weights["method"] == "efficiency" and "Seed's reading (Fang 2025)" in weights["method_description"]
    # ē, d and w side by side in the export, the API and the page; w follows ē × (1 - d) within each dimension.
    api = c.get(f"/api/studies/{study.pk}/toolkit-weights/?rounds={rnd.pk}").json()
    assert api["items"] == weights["items"]
    by_dim = {}
    for item in weights["items"]:
        assert {"mean_model_rate", "mean_pairwise_difference", "weight"} <= set(item)
        by_dim.setdefault(item["dimension"], []).append(item)
    for items in by_dim.values():
        basis = [i["mean_model_rate"] * (1 - (i["mean_pairwise_difference"] or 0)) for i in items]
        for i, b in zip(items, basis, strict=True):
            assert i["weight"] == pytest.approx(len(items) * b / sum(basis) if sum(basis) else 0)
    assert weights["rounds"][0]["judge_panel"] == sorted(["deepseek-r1", "gemini-2.5-pro", "gpt-4o", "grok-3", "o3"])
    assert weights["toolkits"] == [{"name": "Phase 3 mini", "version": 1}] and len(weights["items"]) == 3
    wcsv = c.get(f"/studies/{study.pk}/judging/weights/?download=csv&method=raw").content.decode()
    assert wcsv.startswith("# stereoscope-toolkit-weights v1; method: raw") and "item_number" in wcsv
    header = wcsv.splitlines()[2].split(",")
    assert "consistency" in header
    assert header.index("mean_model_rate") + 1 == header.index("mean_pairwise_difference")
    page = c.get(f"/studies/{study.pk}/judging/weights/?round={rnd.pk}").content.decode()
    assert "method <strong>efficiency</strong>" in page and 'class="raw-score small">raw ' in page
    assert '<option value="efficiency" selected>efficiency (default)</option>' in page
    assert 'value="consistency"' in page and ">consistency</option>" in page
    first = weights["items"][0]
    assert f'<td class="num e-bar">{first["mean_model_rate"]:.3f}</td>' in page
    assert f'<td class="num weight">{first["weight"]:.3f}</td>' in page


def test_weights_reimport_into_a_new_toolkit_version(judged, client_for):
    study, rnd = judged["study"], judged["round"]
    toolkit = judged["data"]["toolkit"]
    c = client_for(judged["users"]["researcher"])
    exported = c.get(f"/studies/{study.pk}/judging/weights/?round={rnd.pk}&download=json").content
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = c.post(
        f"/studies/{study.pk}/judging/weights/",
        {"toolkit": toolkit.pk, "file": SimpleUploadedFile("w.json", b'{"format": "nope"}')},
    )
    assert "Not a weights file" in bad.content.decode() and not ItemWeight.objects.exists()
    ok = c.post(
        f"/studies/{study.pk}/judging/weights/", {"toolkit": toolkit.pk, "file": SimpleUploadedFile("w.json", exported)}
    )
    assert ok.status_code == 302
    weights = ItemWeight.objects.select_related("toolkit", "item")
    assert weights.count() == 3
    new = weights.first().toolkit
    assert new.name == toolkit.name and new.version == 2 and new.parent_id == toolkit.pk
    expected = {r["item_number"]: r["weight"] for r in json.loads(exported)["items"]}
    assert {w.item.number: w.weight for w in weights} == pytest.approx(expected)
    assert weights.first().method == "efficiency" and weights.first().source["rounds"][0]["id"] == rnd.pk


def test_human_verification_flow(judged, client_for):
    study, rnd, users = judged["study"], judged["round"], judged["users"]
    r = client_for(users["researcher"])
    url = f"/studies/{study.pk}/judging/rounds/{rnd.pk}/verification/"
    assert "Not members" in r.post(url, {"coders": [users["outsider"].pk], "sample_size": 4}).content.decode() or True
    r.post(url, {"coders": [users["coder"].pk], "sample_size": 4, "seed": 1})
    assert VerificationRequest.objects.filter(coder=users["coder"]).count() == 4
    coder = client_for(users["coder"])
    page = coder.get(f"/studies/{study.pk}/judging/verify/").content.decode()
    assert "4 left" in page and "Target stereotype" in page
    reqs = list(VerificationRequest.objects.filter(coder=users["coder"]).select_related("verdict"))
    # blind: the coder page never shows the judge's rationale
    assert not any(q.verdict.rationale and q.verdict.rationale in page for q in reqs if len(q.verdict.rationale) > 20)
    for i, q in enumerate(reqs):
        judge_value = q.verdict.value
        answer = judge_value if i < 3 else 1 - judge_value
        resp = coder.post(
            f"/studies/{study.pk}/judging/verify/", {"request": q.pk, "value": answer}, HTTP_HX_REQUEST="true"
        )
        assert resp.status_code == 200 and 'id="verify-question"' in resp.content.decode()
    assert "No questions waiting" in coder.get(f"/studies/{study.pk}/judging/verify/").content.decode()
    assert HumanCheck.objects.count() == 4
    bad = coder.post(f"/studies/{study.pk}/judging/verify/", {"request": reqs[0].pk, "value": "7"}, follow=True)
    assert "Answer yes (1) or no (0)" in bad.content.decode()
    other = client_for(users["researcher"])
    assert other.post(f"/studies/{study.pk}/judging/verify/", {"request": reqs[0].pk, "value": 1}).status_code == 404
    html = r.get(url).content.decode()
    assert 'id="agreement">0.75<' in html and "Disagreements" in html
    assert html.count("side-by-side") == 1
    from sklearn.metrics import cohen_kappa_score

    from judging.services import verification_summary

    checks = HumanCheck.objects.select_related("verdict").order_by("pk")
    expected = cohen_kappa_score([c.verdict.value for c in checks], [c.value for c in checks])
    summary = verification_summary(rnd)
    if summary["kappa"] is None:
        assert "chance agreement is 1" in summary["kappa_note"]
    else:
        assert summary["kappa"] == pytest.approx(expected)
    assert summary["n"] == 4 and summary["table"][0][0] + summary["table"][1][1] == 3


def test_custom_template_from_the_page(roles, client_for):
    study = roles["a"]
    c = client_for(roles["users"]["researcher"])
    url = f"/studies/{study.pk}/judging/templates/new/"
    bad = c.post(
        url,
        {
            "name": "Mine",
            "kind": "custom",
            "text": "Judge {stories} for {stereotype}",
            "scale_min": 0,
            "scale_max": 1,
            "detect_threshold": 1,
        },
    )
    assert "Unknown placeholder" in bad.content.decode()
    ok = c.post(
        url,
        {
            "name": "Mine",
            "kind": "custom",
            "text": 'Does {target_stereotype} fit? {stories} Answer JSON {"id": 0}',
            "scale_min": 0,
            "scale_max": 1,
            "detect_threshold": 1,
        },
    )
    assert ok.status_code == 302
    from judging.models import JudgeTemplate

    assert JudgeTemplate.objects.get(study=study, name="Mine").version == 1
