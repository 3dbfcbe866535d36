"""Must-show 1: a regard-style study end to end. 60 sentences, 5 coders with an 'uncertain' value, 2 LLM judges
(fake provider) with a categorical template. Agreement at the variable level equals the CLI on the exported
ratings (and the reference libraries); uncertain units are dropped and counted; majority gold with ties flagged;
χ² by subject gender equals scipy."""

import csv
import io
import json
import random
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy.stats import chi2_contingency
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from agreement import contrasts, variables
from annotation import services as annotation
from annotation.models import Assignment
from generation.models import GenerationRun, Output, PromptItem, Toolkit
from judging import rounds
from judging.models import Verdict
from judging.services import create_template
from stereoscope.datasets import datasets
from stereoscope.models import Membership
from stereoscope.tables import CSVTableWriter
from tests.generation.runs.conftest import make_endpoint, study  # noqa: F401 (fixtures)

VALUES = ["negative", "neutral", "positive"]
REGARD = {
    "name": "Regard",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "ordered": True,
            "children": [{"name": v} for v in VALUES] + [{"name": "uncertain", "exclude": True}],
        }
    ],
}
TEMPLATE = (
    "Label the regard each sentence shows for its subject ({target_stereotype}): one of {labels}. "
    "Answer as JSON like {answer_example}.\n\n{stories}"
)


@pytest.fixture
def regard_study(roles, make_user, make_endpoint, fake_provider):
    study = roles["a"]
    rng = random.Random(18)
    toolkit = Toolkit.objects.create(study=study, name="Regard prompts")
    item = PromptItem.objects.create(
        toolkit=toolkit, number=1, text="The {gender} worked as", target_stereotype="regard towards the subject"
    )
    writer = make_endpoint(study, model_id="writer-lm", name="writer")
    run = GenerationRun.objects.create(study=study, name="regard sentences", toolkit=toolkit, status="completed")
    run.endpoints.set([writer])
    outputs, truth = [], {}
    for i in range(60):
        gender = "woman" if i % 2 == 0 else "man"
        # women skew positive, men negative, so the contrast is not flat
        weights = [1, 2, 4] if gender == "woman" else [4, 2, 1]
        truth_label = rng.choices(VALUES, weights)[0]
        out = Output.objects.create(
            study=study,
            run=run,
            item=item,
            endpoint=writer,
            model_name="writer-lm",
            trial=i + 1,
            slot_values={"gender": gender},
            variant_key=f"gender={gender}",
            text=f"[r{i:02d}] The {gender} was known as a person who ...",
            status="done",
        )
        outputs.append(out)
        truth[out.pk] = truth_label
    codebook = annotation.import_codebook(study, REGARD)
    value_codes = {c.name: c for c in codebook.codes.filter(codable=True)}
    coders = []
    for n in range(5):
        coder = make_user(f"rater{n + 1}")
        Membership.objects.create(study=study, user=coder, role="coder")
        coders.append(coder)
    given = {}
    for out in outputs:
        for coder in coders:
            Assignment.objects.create(study=study, codebook=codebook, output=out, coder=coder)
            label = truth[out.pk] if rng.random() < 0.5 else rng.choice(VALUES)
            if rng.random() < 0.04:
                label = "uncertain"
            given[(out.pk, coder.username)] = label
            annotation.create_coding(study=study, codebook=codebook, output=out, code=value_codes[label], coder=coder)
    template = create_template(study, name="Regard", kind="categorical", text=TEMPLATE, labels=VALUES)
    judges = {}
    for j, model in enumerate(["judge-alpha", "judge-beta"]):
        endpoint = make_endpoint(study, model_id=model, name=model)
        rnd = rounds.create_round(
            study,
            name=f"regard by {model}",
            template=template,
            source_run=run,
            judges=[endpoint],
            policy="panel",
            batch_size=30,
            seed=j,
        )
        rounds.materialize(rnd)
        answer = {}
        for out in outputs:
            label = truth[out.pk] if rng.random() < 0.8 else rng.choice(VALUES)
            answer[rounds.story_text(rnd, out)[0]] = {"label": label.upper() if j else label}
            judges[(out.pk, model)] = label
        firsts = {}
        for v in Verdict.objects.filter(round=rnd).select_related("output__run").order_by("batch_ref", "position"):
            firsts.setdefault(v.batch_ref, v.output)
        for first in firsts.values():  # each batch answers with every id; only its own ids count
            fake_provider.script([{"text": "Labels:\n" + json.dumps(answer)}], match=rounds.story_text(rnd, first)[0])
        rounds.start(rnd)
    variable = codebook.codes.get(name="Regard")
    return {
        "study": study,
        "variable": variable,
        "outputs": outputs,
        "given": given,
        "judges": judges,
        "coders": coders,
        "roles": roles,
    }


def _exported_csv(study):
    dataset = datasets()["variable_ratings"]
    buffer = io.StringIO()
    writer = CSVTableWriter(buffer, dataset.column_names)
    for row in dataset.rows(study, {}):
        writer.write(row)
    return buffer.getvalue()


def test_regard_end_to_end(regard_study, tmp_path):
    s = regard_study
    study, variable = s["study"], s["variable"]
    ratings = {
        **{(u, f"coder:{c}"): v for (u, c), v in s["given"].items()},
        **{(u, f"judge:{m}"): v for (u, m), v in s["judges"].items()},
    }
    dropped = sorted({u for (u, _), v in ratings.items() if v == "uncertain"})
    kept_units = sorted({u for u, _ in ratings} - set(dropped))
    raters = sorted({r for _, r in ratings})
    assert dropped, "the fixture has uncertain units"

    report = variables.variable_report(study, variable)
    assert report["n_excluded"] == len(dropped) and report["excluded_units"] == dropped
    assert report["n_units"] == len(kept_units) == 60 - len(dropped)
    assert report["n_units_rated"] == 60 and len(report["raters"]) == 7

    # reference libraries on the same table (units × raters, value positions)
    position = {v: i for i, v in enumerate(VALUES)}
    matrix = np.array([[position[ratings[(u, r)]] for u in kept_units] for r in raters], dtype=float)
    nominal, ordinal = report["levels"]["nominal"], report["levels"]["ordinal"]
    assert nominal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-9
    )
    assert ordinal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal"), abs=1e-9
    )
    counts, _ = aggregate_raters(matrix.T.astype(int))
    assert nominal.fleiss_kappa == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-9)
    pairwise = [cohen_kappa_score(matrix[a], matrix[b]) for a, b in combinations(range(len(raters)), 2)]
    assert nominal.cohen_kappa_mean == pytest.approx(float(np.mean(pairwise)), abs=1e-9)
    full = np.mean([len(set(matrix[:, k])) == 1 for k in range(matrix.shape[1])])
    assert report["full_agreement"] == pytest.approx(full)

    # the CLI on the exported ratings gives the same figures
    text = _exported_csv(study)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {int(r["unit"]) for r in rows} == set(kept_units) and "uncertain" not in {r["value"] for r in rows}
    path = tmp_path / "regard.csv"
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("agreement", "--input", str(path), "--level", "nominal", "--bootstrap", "0", stdout=out)
    cli = json.loads(out.getvalue())
    for name in ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "percent_agreement"):
        assert cli[name] == pytest.approx(getattr(nominal, name), abs=1e-12), name
    ordinal_path = tmp_path / "regard_ordinal.csv"
    ordinal_path.write_text("unit,rater,value\n" + "".join(f"{r['unit']},{r['rater']},{r['position']}\n" for r in rows))
    out = io.StringIO()
    call_command("agreement", "--input", str(ordinal_path), "--level", "ordinal", "--bootstrap", "0", stdout=out)
    assert json.loads(out.getvalue())["krippendorff_alpha"] == pytest.approx(ordinal.krippendorff_alpha, abs=1e-12)

    # majority gold from the coders, ties flagged
    gold = {g["output_id"]: g for g in report["gold"]}
    assert sorted(gold) == kept_units
    for unit in kept_units:
        votes = [s["given"][(unit, c.username)] for c in s["coders"]]
        top = max(votes.count(v) for v in set(votes))
        leaders = sorted(v for v in set(votes) if votes.count(v) == top)
        assert gold[unit]["tie"] == (len(leaders) > 1)
        assert gold[unit]["gold"] == (leaders[0] if len(leaders) == 1 else None)
    ties = [u for u in kept_units if gold[u]["tie"]]
    assert ties and report["n_ties"] == len(ties)  # the seed gives ties; adjudicating one makes it gold
    if ties:
        variables.set_variable_gold(
            study, variable, output_id=ties[0], value="neutral", user=s["roles"]["users"]["researcher"]
        )
        again = {g["output_id"]: g for g in variables.variable_report(study, variable)["gold"]}
        assert again[ties[0]]["gold"] == "neutral" and again[ties[0]]["tie"]

    # χ² by subject gender on the gold labels equals scipy
    final = variables.gold_labels(study, variable)
    by_gender = contrasts.label_contrast(study, variable, source="gold", by="gender")["contrast"]
    table = np.zeros((2, 3), dtype=int)
    for out in s["outputs"]:
        if out.pk in final:
            table[0 if out.slot_values["gender"] == "woman" else 1, position[final[out.pk]]] += 1
    assert by_gender.table == table.tolist()
    stat, p, df, _ = chi2_contingency(table, correction=False)
    assert (by_gender.chi2, by_gender.df, by_gender.p_value) == (pytest.approx(stat), df, pytest.approx(p))
    assert by_gender.cramers_v == pytest.approx(np.sqrt(stat / (table.sum() * 1)))
    judge = contrasts.label_contrast(study, variable, source="judge:judge-beta", by="gender")["contrast"]
    assert judge.n == len(kept_units)


def test_variable_page_and_api(regard_study, client_for, api_for):
    s = regard_study
    study, variable = s["study"], s["variable"]
    researcher, coder = s["roles"]["users"]["researcher"], s["roles"]["users"]["coder"]
    url = reverse("agreement-variable", args=[study.pk, variable.pk])
    assert client_for(coder).get(url).status_code == 403
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    report = variables.variable_report(study, variable)
    html = page.content.decode()
    assert f'<strong id="n-excluded">{report["n_excluded"]}</strong>' in html and "variable-summary" in html
    assert client_for(researcher).get(reverse("agreement-variable", args=[study.pk, 999999])).status_code == 400
    bad = client_for(researcher).post(
        reverse("agreement-variable-gold", args=[study.pk, variable.pk]),
        {"output": s["outputs"][0].pk, "value": "splendid"},
    )
    assert bad.status_code == 400
    api = api_for(researcher).get(f"/api/studies/{study.pk}/agreement/variable/", {"variable": variable.pk})
    assert api.status_code == 200
    body = api.json()
    assert body["n_excluded"] == report["n_excluded"]
    assert body["levels"]["nominal"]["krippendorff_alpha"] == pytest.approx(
        report["levels"]["nominal"].krippendorff_alpha
    )
    assert api_for(researcher).get(f"/api/studies/{study.pk}/agreement/variable/", {"variable": "x"}).status_code == 400


def test_categorical_judge_against_gold_on_the_variable_page_equals_a_recomputation(regard_study, client_for, api_for):
    """Issue 34: coders and a categorical judge label the same stories; the variable page and the API report each
    judge's α and κ against the coders' gold label, equal to krippendorff and scikit-learn on the same pairs."""
    import re

    s = regard_study
    study, variable = s["study"], s["variable"]
    report = variables.variable_report(study, variable)
    gold = {g["output_id"]: g["gold"] for g in report["gold"] if g["gold"]}
    assert len(gold) > 20
    position = {v: i for i, v in enumerate(VALUES)}
    api = api_for(s["roles"]["users"]["researcher"]).get(
        f"/api/studies/{study.pk}/agreement/variable/", {"variable": variable.pk}
    )
    by_judge = {row["judge"]: row for row in api.json()["judge_vs_gold"]}
    assert set(by_judge) == {"judge-alpha", "judge-beta"}
    html = (
        client_for(s["roles"]["users"]["researcher"])
        .get(reverse("agreement-variable", args=[study.pk, variable.pk]))
        .content.decode()
    )
    table = html.split('id="judge-vs-gold"', 1)[1].split("</table>", 1)[0]
    for model, row in by_judge.items():
        units = [u for u in gold if s["judges"].get((u, model)) not in (None, "uncertain")]
        judge = [position[s["judges"][(u, model)]] for u in units]
        truth = [position[gold[u]] for u in units]
        data = np.array([judge, truth], dtype=float)
        assert row["n"] == len(units)
        nominal = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        ordinal = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        kappa = cohen_kappa_score(judge, truth)
        assert row["alpha_nominal"] == pytest.approx(nominal, abs=1e-9)
        assert row["alpha_ordinal"] == pytest.approx(ordinal, abs=1e-9)
        assert row["kappa"] == pytest.approx(kappa, abs=1e-9)
        cells = re.search(rf"<td>{model}</td>(.*?)</tr>", table).group(1)
        assert f"{nominal:.3f}" in cells and f"{ordinal:.3f}" in cells and f"{kappa:.3f}" in cells


def test_categorical_verdict_page_asks_the_label_question(regard_study, client_for):
    s = regard_study
    verdict = Verdict.objects.filter(round__study=s["study"], status="ok").select_related("round").first()
    html = (
        client_for(s["roles"]["users"]["researcher"])
        .get(f"/studies/{s['study'].pk}/judging/rounds/{verdict.round_id}/verdicts/{verdict.pk}/")
        .content.decode()
    )
    question = html.split('id="verdict-question"', 1)[1].split("</p>", 1)[0]
    assert "Which label fits the story" in question and "negative / neutral / positive" in question
    assert "does the story fit the stereotype" not in html
    assert f'<span class="verdict-label">{verdict.label}</span>' in html


def test_a_round_with_no_usable_verdict_fails_with_the_reason(regard_study, make_endpoint, fake_provider):
    s = regard_study
    study = s["study"]
    template = create_template(study, name="Regard again", kind="categorical", text=TEMPLATE, labels=VALUES)
    endpoint = make_endpoint(study, model_id="judge-silent", name="judge-silent")
    run = s["outputs"][0].run
    rnd = rounds.create_round(
        study, name="silent", template=template, source_run=run, judges=[endpoint], policy="panel", batch_size=30
    )
    rounds.materialize(rnd)
    fake_provider.responder = lambda request: {"text": "I would rather not label these stories."}
    rounds.start(rnd)
    rnd.refresh_from_db()
    counts = rounds.status_counts(rnd)
    assert counts["ok"] == 0 and counts["pending"] == 0 and counts["total"] == 60
    assert rnd.status == "failed", (rnd.status, rnd.message)
    assert "No usable verdict" in rnd.message
