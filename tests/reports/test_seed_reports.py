"""For each built-in recipe (besides Fang: test_fang_report.py): applied and run on the fake provider with planted
answers, its report's seed tables hold the same numbers as the API, and no NaN, inf or raw float noise."""

import pytest

from reports import builder
from reports.render import html, markdown
from tests.agreement.test_regard_end_to_end import VALUES as REGARD_VALUES
from tests.reports.test_fang_report import assert_clean

pytestmark = pytest.mark.django_db


def seed_tables(doc):
    seed = next(s for s in doc.sections if s.key == "seed")
    return seed, {b["key"]: b for b in seed.blocks if b["type"] == "table"}


def reader(study, api_for, django_user_model):
    from stereoscope.services import add_member

    django_user_model.objects.create_user("reader")
    add_member(study=study, username="reader", role="researcher", actor=None)
    return api_for(django_user_model.objects.get(username="reader"))


def test_wan_odds_ratios_and_welch_t_equal_the_api(run_builtin, api_for, django_user_model):
    from measures.models import MeasureRun

    study = run_builtin("wan2023-letters")
    run = MeasureRun.objects.get(study=study)
    assert run.status == "completed", run.message
    api = reader(study, api_for, django_user_model)
    records = api.get(f"/api/studies/{study.pk}/measure-runs/{run.pk}/contrasts/?grouping=overall&kind=category").json()
    doc = builder.build(study)
    seed, tables = seed_tables(doc)
    assert "Wan, Y., Pu, G." in seed.blocks[0]["text"]
    block = tables[f"seed-or-{run.pk}"]
    by_category = {r["result"]["category"]: r["result"] for r in records}
    assert len(block["rows"]) == len(by_category) > 0
    defined_or = 0
    for row, values in zip(block["rows"], block["values"], strict=True):
        res = by_category[row[0]]
        welch = res["rate_tests"]["welch"]
        assert values[2:9] == [
            res["n_f"],
            res["n_m"],
            res["odds_ratio"]["or"],
            welch.get("t"),
            welch.get("df"),
            welch.get("p"),
            welch.get("cohens_d"),
        ]
        defined_or += res["odds_ratio"]["or"] is not None
    assert defined_or  # the planted letters differ by gender
    forest = next(b for b in seed.blocks if b["type"] == "figure")
    assert "<title" in forest["svg"] and "<desc" in forest["svg"]
    for text in (html(doc), markdown(doc)):
        assert_clean(text)


def _small_personas(n):
    def edit(data):
        for cs in data.get("context_sets") or []:
            cs["persona_set"] = dict(cs["persona_set"], n=n, seed=0)
        for run in data.get("questionnaire_runs") or []:
            if run.get("seeds"):
                run["seeds"] = run["seeds"][:2]

    return edit


def test_jung_reliability_and_item_statistics_equal_the_api(run_builtin, api_for, django_user_model):
    from psychometrics.models import QuestionnaireRun

    study = run_builtin("jung2025-asi", _small_personas(8))
    api = reader(study, api_for, django_user_model)
    doc = builder.build(study)
    seed, tables = seed_tables(doc)
    assert "Jung, J. (2025)" in seed.blocks[0]["text"]
    runs = list(QuestionnaireRun.objects.filter(study=study, status="completed").order_by("pk"))
    assert len(runs) == 4
    for run in runs:
        body = api.get(f"/api/studies/{study.pk}/questionnaire-runs/{run.pk}/report/").json()
        block = tables[f"seed-reliability-{run.pk}"]
        for values, model in zip(block["values"], body["models"], strict=True):
            a = model["analysis"]
            assert values[1] == a["n"]
            assert values[2] == a["alpha"]["total"]
            assert values[4] == a["stratified_alpha"] and values[5] == a["omega_total"]
        for model in body["models"]:
            items = tables[f"seed-items-{run.pk}-{model['endpoint']}"]
            api_items = model["analysis"]["items"]
            assert [v[2:] for v in items["values"]] == [
                [i["n"], i["mean"], i["corrected_item_total_r"], i["alpha_if_deleted"]] for i in api_items
            ]
    validity = tables["seed-validity"]
    base = runs[0]
    kinds = {"ASI alternate form": "alternate_form", "ASI option order permuted": "option_order", "MSS": "convergent"}
    assert {r[0] for r in validity["rows"]} == set(kinds)
    for row, values in zip(validity["rows"], validity["values"], strict=True):
        other = values[0]
        body = api.get(
            f"/api/studies/{study.pk}/questionnaire-runs/{base.pk}/compare/?other={other}&kind={kinds[row[0]]}"
        ).json()
        total = next(r for r in body["rows"] if r["model"] == row[2] and r["score"] == "total")
        assert values[3:] == [total["n"], total["r"], None, total["p"], None] and row[1] == body["title"]
    for text in (html(doc), markdown(doc)):
        assert_clean(text)


def test_rupsycho_scores_per_persona_attribute_equal_the_api(run_builtin, api_for, django_user_model):
    from psychometrics import reports as psych_reports
    from psychometrics.models import QuestionnaireRun

    study = run_builtin("rupsycho-personas", _small_personas(8))
    runs = list(QuestionnaireRun.objects.filter(study=study).order_by("pk"))
    assert runs and all(run.status == "completed" for run in runs), [run.message for run in runs]
    doc = builder.build(study)
    seed, tables = seed_tables(doc)
    assert "Schelb, J." in seed.blocks[0]["text"]
    for run in runs:
        block = tables[f"seed-attributes-{run.pk}"]
        expected = psych_reports.run_report(run)["attribute_tests"]
        assert len(block["rows"]) == len(expected) > 0
        for row, values, t in zip(block["rows"], block["values"], expected, strict=True):
            assert row[:3] == [t["endpoint"], t["attribute"], t["score"]]
            assert values[6] == t.get("p")
    for text in (html(doc), markdown(doc)):
        assert_clean(text)


def test_regard_agreement_gold_shares_and_chi2_equal_the_api(run_builtin, api_for, django_user_model):
    """Five coders label every completion with the recipe's Regard codebook (planted: completions about women lean
    positive, about men negative). The recipe's judge round is left out: the coders' labels are the data here."""
    import random

    from scipy.stats import chi2_contingency

    from annotation import selectors as annotation_selectors
    from annotation import services as annotation
    from annotation.models import Assignment
    from generation import selectors as generation
    from stereoscope.services import add_member

    def coders_only(data):
        data["judge_rounds"] = []
        for run in data["runs"]:
            run["trials"] = 2

    study = run_builtin("regard", coders_only)
    codebook = annotation_selectors.latest_codebook(study, "Regard")
    codes = {c.name: c for c in codebook.codes.filter(codable=True)}
    assert set(REGARD_VALUES) <= set(codes)
    rng = random.Random(38)
    coders = []
    for n in range(5):
        coders.append(django_user_model.objects.create_user(f"annotator{n + 1}"))
        add_member(study=study, username=f"annotator{n + 1}", role="coder", actor=None)
    outputs = list(generation.study_outputs(study).filter(status="done").order_by("pk"))
    assert len(outputs) == 2 * 10 * 2 * 2
    for out in outputs:
        female = "Frau" in out.prompt_text or "woman" in out.prompt_text
        truth = rng.choices(REGARD_VALUES, [1, 2, 4] if female else [4, 2, 1])[0]
        for coder in coders:
            label = truth if rng.random() < 0.7 else rng.choice(REGARD_VALUES + ["uncertain"])
            Assignment.objects.get_or_create(study=study, codebook=codebook, output=out, coder=coder)
            annotation.create_coding(study=study, codebook=codebook, output=out, code=codes[label], coder=coder)
    variable = codebook.codes.get(name="Regard")
    api = reader(study, api_for, django_user_model)
    body = api.get(f"/api/studies/{study.pk}/agreement/variable/?variable={variable.pk}").json()
    doc = builder.build(study)
    seed, tables = seed_tables(doc)
    assert "Kraft, A." in seed.blocks[0]["text"]
    nominal = body["levels"]["nominal"]
    assert tables[f"seed-agreement-{variable.pk}"]["values"] == [
        [
            nominal["n_units"],
            nominal["n_raters"],
            nominal["krippendorff_alpha"],
            nominal["fleiss_kappa"],
            body["full_agreement"],
        ]
    ]
    golds = [g["gold"] for g in body["gold"] if g["gold"]]
    shares = tables[f"seed-gold-{variable.pk}"]
    assert [v[1] for v in shares["values"]] == [golds.count(v) for v in body["values"]]
    assert [v[2] for v in shares["values"]] == [golds.count(v) / len(golds) for v in body["values"]]
    chi2 = tables[f"seed-chi2-{variable.pk}"]
    counts = [v[2:] for v in chi2["values"]]
    assert [r[0] for r in chi2["rows"]] == ["F", "M"] and sum(map(sum, counts)) == len(golds)
    stat, p, df, _expected = chi2_contingency(counts, correction=False)
    assert f"χ²({df}, N = {len(golds)}) = {stat:.2f}" in chi2["note"]
    for text in (html(doc), markdown(doc)):
        assert_clean(text)
