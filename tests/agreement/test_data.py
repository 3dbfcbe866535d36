"""Rating tables built from codings, verdicts, human checks and gold labels."""

import krippendorff
import numpy as np
import pytest

from agreement import rating_tables as data
from agreement import services
from stereoscope.stats import agreement as ag

pytestmark = pytest.mark.django_db


def ann_bob(table, ns):
    rm = table.matrix
    order = [rm.raters.index(f"coder:{ns.coders[n].pk}") for n in ("ann", "bob")]
    return rm.values()[order]


def test_document_level_code_table(coded_study):
    ns = coded_study
    table = data.build_table(ns.study, f"code:{ns.charisma.pk}", codebook=ns.codebook)
    values = ann_bob(table, ns)
    expected_ann = [1] * 12 + [0] * 8
    expected_bob = [1] * 10 + [0] * 4 + [1, 1] + [0] * 4
    assert values[0].tolist() == expected_ann and values[1].tolist() == expected_bob
    result = ag.agreement(table.matrix, bootstrap=0)
    assert result.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=[expected_ann, expected_bob], level_of_measurement="nominal")
    )
    assert table.rater_labels[f"coder:{ns.coders['ann'].pk}"] == "ann"


def test_dimension_is_any_code_under_it(coded_study):
    ns = coded_study
    table = data.build_table(ns.study, f"dimension:{ns.leadership.pk}", codebook=ns.codebook)
    values = ann_bob(table, ns)
    assert values[0].tolist() == [1] * 12 + [0] * 8  # ann: charisma 0-11 ∪ protected 0-3
    assert values[1].tolist() == [1] * 10 + [0] * 4 + [1, 1] + [0] * 4  # bob: 0-9,14,15 ∪ 2-5


def test_missing_when_coder_did_not_code_the_story(coded_study):
    from annotation.models import Assignment, Coding

    ns = coded_study
    bob = ns.coders["bob"]
    Assignment.objects.filter(coder=bob, output__in=ns.outputs[15:]).update(status="pending")
    Coding.objects.filter(coder=bob, output__in=ns.outputs[15:]).delete()
    table = data.build_table(ns.study, f"code:{ns.protected.pk}", codebook=ns.codebook)
    values = ann_bob(table, ns)
    assert np.isnan(values[1][15:]).all() and not np.isnan(values[0]).any()
    # a coding alone (assignment still pending) also counts as "coded"
    Coding.objects.create(output=ns.outputs[19], code=ns.charisma, coder=bob, codebook=ns.codebook)
    values = ann_bob(data.build_table(ns.study, f"code:{ns.protected.pk}", codebook=ns.codebook), ns)
    assert values[1][19] == 0 and np.isnan(values[1][18])


def test_merged_code_counts_as_its_survivor(coded_study):
    from annotation.models import Code, Coding

    ns = coded_study
    old = Code.objects.create(
        codebook=ns.codebook, parent=ns.leadership, name="Charisma (old)", active=False, merged_into=ns.charisma
    )
    Coding.objects.create(output=ns.outputs[19], code=old, coder=ns.coders["bob"], codebook=ns.codebook)
    values = ann_bob(data.build_table(ns.study, f"code:{ns.charisma.pk}", codebook=ns.codebook), ns)
    assert values[1][19] == 1
    index = data.CodebookIndex(ns.codebook)
    assert old.pk not in index.codable_codes() and ns.charisma.pk in index.codable_codes()


def test_stereotype_table_mixes_judges_checks_coders_and_gold(coded_study, make_user):
    from judging.models import HumanCheck, Verdict

    ns = coded_study
    checker = make_user("carol")
    for i, verdict in enumerate(Verdict.objects.filter(judge_model="model-x").order_by("output_id")[:5]):
        HumanCheck.objects.create(verdict=verdict, user=checker, value=int(i < 3))
    services.set_gold(ns.study, target="stereotype", output_id=ns.outputs[0].pk, value=1, user=ns.users["researcher"])
    table = data.build_table(ns.study, "stereotype", codebook=ns.codebook)
    rm = table.matrix
    assert rm.raters[:2] == ["judge:model-x", "judge:model-y"]
    assert set(rm.raters) == {
        "judge:model-x",
        "judge:model-y",
        f"check:{checker.pk}",
        f"coder:{ns.coders['ann'].pk}",
        f"coder:{ns.coders['bob'].pk}",
        "gold",
    }
    vals = rm.values()
    x = vals[rm.raters.index("judge:model-x")]
    assert x.tolist() == [1.0] * 11 + [0.0] * 9
    check = vals[rm.raters.index(f"check:{checker.pk}")]
    assert check[:5].tolist() == [1, 1, 1, 0, 0] and np.isnan(check[5:]).all()
    # coders on the stereotype table: the code linked to the story's item (charisma), not "protected"
    assert vals[rm.raters.index(f"coder:{ns.coders['ann'].pk}")].tolist() == [1.0] * 12 + [0.0] * 8
    assert vals[rm.raters.index("gold")][0] == 1 and np.isnan(vals[rm.raters.index("gold")][1:]).all()
    only = data.build_table(ns.study, "stereotype", codebook=ns.codebook, raters=["judge:model-x", "judge:model-y"])
    assert only.matrix.raters == ["judge:model-x", "judge:model-y"]
    with pytest.raises(data.AgreementRequestError, match="Unknown rater"):
        data.build_table(ns.study, "stereotype", codebook=ns.codebook, raters=["judge:nobody"])


def test_failed_verdicts_are_missing(coded_study):
    from judging.models import Verdict

    ns = coded_study
    Verdict.objects.filter(judge_model="model-y", output=ns.outputs[0]).update(status="unparseable", value=None)
    table = data.build_table(ns.study, "stereotype", codebook=ns.codebook, raters=["judge:model-x", "judge:model-y"])
    assert np.isnan(table.matrix.values()[1][0])


def test_bad_targets(coded_study):
    ns = coded_study
    for target, message in [
        ("code:abc", "Unknown target"),
        ("code:999999", "No code"),
        (f"code:{ns.leadership.pk}", "not a codable code"),
        (f"dimension:{ns.charisma.pk}", "not a dimension"),
    ]:
        with pytest.raises(data.AgreementRequestError, match=message):
            data.build_table(ns.study, target, codebook=ns.codebook)


def test_segment_share_per_code(coded_study):
    ns = coded_study
    cd = data.CodingData(ns.study, ns.codebook)
    # ann spans [0,30), bob [0,32): overlap 30/32 = .9375
    strict = data.segment_report(cd, ns.charisma.pk, min_overlap=0.95)
    loose = data.segment_report(cd, ns.charisma.pk, min_overlap=0.9)
    assert strict["share_matched"] == 0.0
    # matched where both coded: stories 0-9 (10 of ann's 12, 10 of bob's 12)
    assert loose["share_matched"] == pytest.approx(20 / 24)
    assert data.segment_report(cd, ns.protected.pk)["segments"] == 0


def test_gold_labels_validation_and_rater(coded_study):
    from agreement.models import GoldLabel

    ns = coded_study
    target = f"code:{ns.charisma.pk}"
    for kwargs, message in [
        ({"value": 3}, "must be one of 0, 1"),
        ({"value": "x"}, "whole number"),
        ({"value": 1, "output_id": 999999}, "No story"),
        ({"value": 1, "target": "code:x"}, "Unknown target"),
    ]:
        args = {"target": target, "output_id": ns.outputs[10].pk, "user": ns.users["researcher"], **kwargs}
        with pytest.raises(data.AgreementRequestError, match=message):
            services.set_gold(ns.study, **args)
    assert not GoldLabel.objects.exists()
    services.set_gold(ns.study, target=target, output_id=ns.outputs[10].pk, value=1, user=ns.users["researcher"])
    services.set_gold(ns.study, target=target, output_id=ns.outputs[10].pk, value=0, user=ns.users["researcher"])
    assert GoldLabel.objects.get().value == 0
    table = data.build_table(ns.study, target, codebook=ns.codebook)
    assert "gold" in table.matrix.raters
    rows, count = services.disagreement_rows(table)
    assert count == 4  # stories 10, 11, 14, 15
    assert {r["output_id"]: r["gold"] for r in rows}[ns.outputs[10].pk] == 0
    services.clear_gold(ns.study, target=target, output_id=ns.outputs[10].pk, user=ns.users["researcher"])
    assert not GoldLabel.objects.exists()


def test_report_rows_and_flags(coded_study):
    ns = coded_study
    report = services.study_report(ns.study, bootstrap=200, low=0.9)
    codes = {row["id"]: row for row in report["codes"]}
    charisma = codes[ns.charisma.pk]
    ann = [1] * 12 + [0] * 8
    bob = [1] * 10 + [0] * 4 + [1, 1] + [0] * 4
    assert charisma["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=[ann, bob], level_of_measurement="nominal")
    )
    assert charisma["low"] is True and charisma["n_double_coded"] == 20
    low, high = charisma["ci95"]["krippendorff_alpha"]
    assert low < charisma["krippendorff_alpha"] < high
    assert [row["name"] for row in report["dimensions"]] == ["Leadership"]
    assert report["coder_matrix"][0][0] == "ann" and report["coder_matrix"][0][1][1]["n_units"] == 40
    jh = report["judge_human"]
    assert jh["judges"] == ["model-x", "model-y"] and "ann" in jh["humans"]
    cell = jh["rows"][0][1][jh["humans"].index("ann")]
    x = [1] * 11 + [0] * 9
    from statsmodels.stats.inter_rater import cohens_kappa

    table = np.zeros((2, 2))
    for p, q in zip(x, ann, strict=True):
        table[p, q] += 1
    assert cell["kappa"] == pytest.approx(cohens_kappa(table, return_results=False))


def test_export_rows(coded_study):
    ns = coded_study
    services.set_gold(ns.study, target="stereotype", output_id=ns.outputs[3].pk, value=1, user=ns.users["researcher"])
    rows = list(services.rating_rows(ns.study, {}))
    assert {"target", "unit", "rater", "value"} == set(rows[0])
    assert {r["rater"] for r in rows if r["target"] == "stereotype"} >= {"judge:model-x", "coder:ann", "gold"}
    pseudo = list(services.rating_rows(ns.study, {"pseudonymise": True, "pseudonym": lambda pk: f"P{pk % 7}"}))
    assert not any("ann" in r["rater"] for r in pseudo) and any(r["rater"].startswith("coder:P") for r in pseudo)
    gold = list(services.gold_label_rows(ns.study, {}))
    assert gold[0]["target"] == "stereotype" and gold[0]["value"] == 1 and gold[0]["decided_by"] == "researcher"
    report_rows = list(services.agreement_rows(ns.study, {"bootstrap": 0}))
    assert {r["target"] for r in report_rows} == {
        f"dimension:{ns.leadership.pk}",
        f"code:{ns.charisma.pk}",
        f"code:{ns.protected.pk}",
    }


def test_datasets_are_registered_with_documented_columns(coded_study):
    from stereoscope.datasets import datasets

    found = datasets()
    for key in ("agreement", "agreement_ratings", "gold_labels"):
        assert found[key].app == "agreement"
    rows = list(found["agreement_ratings"].rows(coded_study.study, {}))
    assert set(rows[0]) == set(found["agreement_ratings"].column_names)
    rows = list(found["agreement"].rows(coded_study.study, {"bootstrap": 0}))
    assert set(rows[0]) == set(found["agreement"].column_names)


def test_binary_and_likert_rounds_do_not_mix(coded_study):
    from judging.models import JudgeRound, JudgeTemplate, Verdict

    ns = coded_study
    likert = JudgeTemplate.objects.create(
        study=ns.study, name="Likert", kind="likert", text="{target_stereotype}{stories}", scale_min=0, scale_max=4
    )
    later = JudgeRound.objects.create(study=ns.study, name="Likert round", template=likert, policy="panel")
    for i, out in enumerate(ns.outputs):
        Verdict.objects.create(round=later, output=out, judge_model="model-x", value=i % 5, status="ok")
        Verdict.objects.create(round=later, output=out, judge_model="model-z", value=(i + 1) % 5, status="ok")
    table = data.build_table(ns.study, "stereotype", codebook=ns.codebook, include_gold=False)
    assert table.level == "ordinal" and "judge:model-y" not in table.matrix.raters
    assert not any(k.startswith("coder:") for k in table.matrix.raters)
    assert any("0-4 scale" in note for note in table.notes)
    x = table.matrix.values()[table.matrix.raters.index("judge:model-x")]
    assert x.tolist() == [i % 5 for i in range(20)]
    binary = data.build_table(ns.study, "stereotype", codebook=ns.codebook, round_ids=[ns.round.pk])
    assert binary.level == "nominal" and "judge:model-z" not in binary.matrix.raters
    with pytest.raises(data.AgreementRequestError, match="No judge round 999999"):
        data.build_table(ns.study, "stereotype", codebook=ns.codebook, round_ids=[999999])
