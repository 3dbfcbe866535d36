"""Issue 34: the Fang Phase 1 tests of a questionnaire run agree across the report API, the report page and
`manage.py analyze_responses` on the same answers: undefined pairs are null + reason (API, CLI) and "—" + reason
(page), and every table keeps the whole Bonferroni family (6 comparisons for 4 models)."""

import json
import random
import re

import pandas as pd
import pytest
from django.core.management import call_command

from psychometrics import runs, services
from psychometrics.reports import wide_by_endpoint

from .helpers import ASI_LABELS, load_library

pytestmark = pytest.mark.django_db

INSTRUMENT = {
    "name": "Four items",
    "version": "1",
    "scale": {"min": 0, "max": 5, "labels": {str(i): label for i, label in enumerate(ASI_LABELS)}},
    "subscales": ["HS", "BS"],
    "items": [
        {"id": "h1", "text": "Hostile one.", "subscale": "HS", "reverse": False},
        {"id": "h2", "text": "Hostile two.", "subscale": "HS", "reverse": True},
        {"id": "b1", "text": "Benevolent one.", "subscale": "BS", "reverse": False},
        {"id": "b2", "text": "Benevolent two.", "subscale": "BS", "reverse": False},
    ],
}


@pytest.fixture
def fang_run(roles, make_endpoint, fake_provider):
    study = roles["a"]
    _, personas = load_library()
    instrument = services.create_instrument(study, INSTRUMENT)
    ctx = services.contexts_from_personas(study, "ten", personas, n=10, seed=1)
    endpoints = [make_endpoint(study, name=m, model_id=m) for m in ("const", "fake-a", "fake-b", "real")]
    rng = random.Random(4)

    def respond(request):
        model = request["body"].get("model")
        if model == "const":
            return {"text": "2"}
        if model in ("fake-a", "fake-b"):  # two models that always answer the same
            return {"text": "4"}
        return {"text": str(rng.randint(0, 5))}

    fake_provider.responder = respond
    run = runs.create_run(study, name="Phase 1", instrument=instrument, context_set=ctx, endpoints=endpoints)
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed"
    return study, run


def _text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_api_page_and_cli_agree(fang_run, roles, api_for, client_for, tmp_path, capsys):
    study, run = fang_run
    api = api_for(roles["users"]["researcher"])
    rep = api.get(f"/api/studies/{study.pk}/questionnaire-runs/{run.pk}/report/").json()
    total = rep["group_tests"]["anova"]["total"]
    assert total["comparisons"] == 6 and len(total["pairwise"]) == 6
    pairs = {(p["a"], p["b"]): p for p in total["pairwise"]}
    undefined = [p for p in pairs.values() if p["t"] is None]
    assert {frozenset((p["a"], p["b"])) for p in undefined} == {
        frozenset(pair) for pair in (("const", "fake-a"), ("const", "fake-b"), ("fake-a", "fake-b"))
    }
    assert all(p["p_bonf"] is None and "variance" in p["note"] for p in undefined)
    defined = [p for p in pairs.values() if p["t"] is not None]
    assert all(p["p_bonf"] == pytest.approx(min(1.0, 6 * p["p_unc"])) for p in defined)

    page = _text(
        client_for(roles["users"]["researcher"])
        .get(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/report/")
        .content.decode()
    )
    page = page.split("One-way ANOVA of total across models", 1)[1].split("Repeated-measures ANOVA", 1)[0]
    assert "Bonferroni family: 6 comparisons" in page
    for p in total["pairwise"]:
        row = re.search(re.escape(f"{p['a']} vs {p['b']}") + r" (.*?)(?= \S+ vs |Bonferroni|$)", page).group(1)
        if p["t"] is None:
            assert row.count("—") >= 3 and p["note"] in row
        else:
            assert f"{p['t']:.3f}" in row and f"{p['p_bonf']:.4f}" in row

    # The same answers through analyze_responses (one row per subject, group = model).
    wides = wide_by_endpoint(run, run.instrument.to_spec())
    frames = [w.reset_index(drop=True).assign(group=name) for name, w in wides.items()]
    pd.concat(frames).to_csv(tmp_path / "resp.csv", index=False)
    (tmp_path / "inst.json").write_text(json.dumps(INSTRUMENT))
    call_command(
        "analyze_responses",
        "--instrument",
        str(tmp_path / "inst.json"),
        "--responses",
        str(tmp_path / "resp.csv"),
        "--no-cfa",
    )
    cli = json.loads(capsys.readouterr().out)["between_groups"]["total"]
    assert cli["comparisons"] == 6
    assert cli["F"] == pytest.approx(total["F"]) and cli["eta2"] == pytest.approx(total["eta2"])
    cli_pairs = {(p["a"], p["b"]): p for p in cli["pairwise"]}
    for key, p in pairs.items():
        q = cli_pairs[key]
        assert (q["t"] is None) == (p["t"] is None) and q["note"] == p["note"]
        if p["t"] is not None:
            assert q["t"] == pytest.approx(p["t"]) and q["p_bonf"] == pytest.approx(p["p_bonf"])
