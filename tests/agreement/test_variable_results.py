"""Issue 35, "Results a team takes away": every gold label of a variable exported with its evidence (bundles, data
dictionary, the variable page's downloads); the variable page's bootstrap intervals, per-annotator and confusion
tables; the API showing what the page shows (χ² and Cramér's V by gender and context, equal to scipy); variables
listed as variables on the Agreement page. The regard study of test_regard_end_to_end: 60 stories, 5 coders with an
'uncertain' exclude value, 2 judges."""

import csv
import io
import json
import re
import zipfile
from collections import Counter
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import bootstrap, chi2_contingency
from scipy.stats.contingency import association
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from agreement import variables
from exports.services import write_export
from generation.models import Output
from stereoscope.datasets import datasets
from tests.agreement.test_regard_end_to_end import regard_study  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import make_endpoint  # noqa: F401 (fixtures: regard_study needs it)

VALUES = ["negative", "neutral", "positive"]


def _votes(s, unit):
    return [s["given"][(unit, c.username)] for c in s["coders"]]


def _kept_units(s):
    units = {u for u, _ in s["given"]}
    dropped = {u for (u, _), v in s["given"].items() if v == "uncertain"}
    dropped |= {u for (u, _), v in s["judges"].items() if v == "uncertain"}
    return sorted(units - dropped)


def _adjudicate_a_tie(s):
    study, variable = s["study"], s["variable"]
    report = variables.variable_report(study, variable)
    tie = next(g["output_id"] for g in report["gold"] if g["tie"])
    variables.set_variable_gold(
        study, variable, output_id=tie, value="neutral", user=s["roles"]["users"]["researcher"], note="read twice"
    )
    return tie


def _api(s, api_for, **params):
    response = api_for(s["roles"]["users"]["researcher"]).get(
        f"/api/studies/{s['study'].pk}/agreement/variable/", {"variable": s["variable"].pk, **params}
    )
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_every_gold_label_is_exported_with_its_value_name_and_evidence(regard_study, tmp_path):
    s = regard_study
    study, variable = s["study"], s["variable"]
    tie = _adjudicate_a_tie(s)
    rows = [r for r in datasets()["variable_gold"].rows(study, {}) if r["variable"] == f"variable:{variable.pk}"]
    kept = _kept_units(s)
    assert [r["unit"] for r in rows] == kept  # every unit, not only the adjudicated ties
    for row in rows:
        votes = Counter(_votes(s, row["unit"]))
        top = max(votes.values())
        leaders = sorted(v for v, n in votes.items() if n == top)
        assert row["n_raters"] == len(s["coders"])
        assert row["agreement_share"] == pytest.approx(top / len(s["coders"]))
        assert row["tie"] == (len(leaders) > 1)
        assert row["counts"] == dict(votes)
        if row["unit"] == tie:
            assert (row["gold"], row["adjudicated"], row["decided_by"]) == ("neutral", "neutral", "researcher")
            assert row["note"] == "read twice"
        else:
            strict = top * 2 > len(s["coders"])
            assert row["gold"] == (leaders[0] if strict and len(leaders) == 1 else None)
            assert row["adjudicated"] is None
        assert row["gold"] is None or row["gold"] in VALUES
        assert row["gold_position"] == (VALUES.index(row["gold"]) + 1 if row["gold"] else None)

    # the adjudicated labels' own table names the value, not only its position
    gold = [r for r in datasets()["gold_labels"].rows(study, {}) if r["target"] == f"variable:{variable.pk}"]
    assert [(r["output_id"], r["value"], r["value_name"]) for r in gold] == [(tie, 1, "neutral")]

    # in the bundle, with the data dictionary describing it and the variable: targets
    path = tmp_path / "bundle.zip"
    write_export(study, "csv", path, dataset_keys=["variable_gold", "gold_labels"], options={"pseudonymise": True})
    with zipfile.ZipFile(path) as zf:
        exported = list(csv.DictReader(io.StringIO(zf.read("variable_gold.csv").decode())))
        dictionary = list(csv.DictReader(io.StringIO(zf.read("data_dictionary.csv").decode())))
    assert [int(r["unit"]) for r in exported] == kept
    adjudicated = next(r for r in exported if int(r["unit"]) == tie)
    assert adjudicated["gold"] == "neutral" and adjudicated["decided_by"] not in ("", "researcher")  # pseudonym
    described = {(r["dataset"], r["column"]): r["description"] for r in dictionary}
    for column in ("gold", "n_raters", "agreement_share", "tie", "adjudicated"):
        assert described[("variable_gold", column)]
    assert "variable:<id>" in described[("gold_labels", "target")]
    assert "variable" in described[("gold_labels", "value_name")]


def test_the_api_has_chi2_and_cramers_v_by_gender_and_context_equal_to_scipy(regard_study, api_for, client_for):
    s = regard_study
    study = s["study"]
    contexts = {}
    for i, out in enumerate(s["outputs"]):
        contexts[out.pk] = "occupation" if i % 3 else "respect"
        Output.objects.filter(pk=out.pk).update(slot_values={**out.slot_values, "context": contexts[out.pk]})
    body = _api(s, api_for, bootstrap=0)
    gold = {g["output_id"]: g["gold"] for g in body["gold"] if g["gold"]}
    gender = {o.pk: "F" if o.slot_values["gender"] == "woman" else "M" for o in s["outputs"]}
    for by, groups in (("gender", gender), ("context", contexts)):
        found = body["contrasts"][by]
        order = found["groups"]
        table = np.zeros((len(order), len(VALUES)), dtype=int)
        for unit, value in gold.items():
            table[order.index(groups[unit]), VALUES.index(value)] += 1
        assert found["table"] == table.tolist() and found["labels"] == VALUES
        stat, p, df, _ = chi2_contingency(table, correction=False)
        assert found["chi2"] == pytest.approx(stat) and found["p_value"] == pytest.approx(p) and found["df"] == df
        assert found["cramers_v"] == pytest.approx(association(table, method="cramer", correction=False))
        # the page shows the same numbers
        html = (
            client_for(s["roles"]["users"]["researcher"])
            .get(reverse("agreement-variable", args=[study.pk, s["variable"].pk]), {"by": by, "bootstrap": 0})
            .content.decode()
        )
        shown = re.search(r'id="chi2">χ²\((\d+)\) = ([\d.]+), p = ([\d.]+),\s*Cramér\'s V = ([\d.]+)', html)
        assert shown, html.split('id="chi2"')[1][:300] if 'id="chi2"' in html else "no χ² on the page"
        assert (int(shown[1]), shown[2], shown[4]) == (df, f"{stat:.2f}", f"{found['cramers_v']:.3f}")
    assert sum(sum(r["counts"]) for r in body["by_model"]["rows"]) == len(gold)


def _matrix(s, units):
    raters = [f"coder:{c.username}" for c in s["coders"]] + ["judge:judge-alpha", "judge:judge-beta"]
    ratings = {
        **{(u, f"coder:{c}"): v for (u, c), v in s["given"].items()},
        **{(u, f"judge:{m}"): v for (u, m), v in s["judges"].items()},
    }
    return raters, np.array([[VALUES.index(ratings[(u, r)]) for u in units] for r in raters], dtype=float)


def test_bootstrap_intervals_for_alpha_and_kappa_match_scipy_bootstrap(regard_study, api_for):
    """The variable's 95% intervals resample units (the code-level report's machinery); scipy.stats.bootstrap's
    percentile intervals of krippendorff's α and of scikit-learn's mean pairwise κ on the same table agree within
    resampling noise, and the point estimate lies inside."""
    s = regard_study
    body = _api(s, api_for, bootstrap=1000)
    units = _kept_units(s)
    _raters, matrix = _matrix(s, units)
    nominal = body["levels"]["nominal"]
    low, high = nominal["ci95"]["krippendorff_alpha"]
    assert low < nominal["krippendorff_alpha"] < high

    def alpha(idx):
        return krippendorff.alpha(reliability_data=matrix[:, idx.astype(int)], level_of_measurement="nominal")

    def kappa(idx):
        cols = matrix[:, idx.astype(int)]
        with np.errstate(all="ignore"):
            return float(np.mean([cohen_kappa_score(cols[a], cols[b]) for a, b in combinations(range(len(cols)), 2)]))

    index = (np.arange(len(units), dtype=float),)
    ref = bootstrap(index, alpha, n_resamples=1000, method="percentile", vectorized=False, random_state=1)
    ci = ref.confidence_interval
    assert (low, high) == (pytest.approx(ci.low, abs=0.04), pytest.approx(ci.high, abs=0.04))
    klow, khigh = nominal["ci95"]["cohen_kappa_mean"]
    ref = bootstrap(index, kappa, n_resamples=200, method="percentile", vectorized=False, random_state=1)
    ci = ref.confidence_interval
    assert (klow, khigh) == (pytest.approx(ci.low, abs=0.05), pytest.approx(ci.high, abs=0.05))
    ordinal = body["levels"]["ordinal"]
    assert (
        ordinal["ci95"]["krippendorff_alpha"][0]
        < ordinal["krippendorff_alpha"]
        < ordinal["ci95"]["krippendorff_alpha"][1]
    )


def test_per_annotator_and_confusion_tables_equal_scikit_learn(regard_study, api_for):
    s = regard_study
    units = _kept_units(s)
    raters, matrix = _matrix(s, units)
    a, b = raters[0], raters[5]
    body = _api(s, api_for, bootstrap=0, a=a, b=b)
    conf = body["confusion"]
    assert (conf["rater_a"], conf["rater_b"], conf["values"]) == (a, b, VALUES)
    assert conf["table"] == confusion_matrix(matrix[0], matrix[5], labels=[0, 1, 2]).tolist()
    by_rater = {r["rater"]: r for r in body["raters_vs_majority"]}
    assert set(by_rater) == set(raters)
    for r, key in enumerate(raters):
        others = np.delete(matrix, r, axis=0)
        majority, mine = [], []
        for k in range(len(units)):
            counts = Counter(others[:, k])
            value, top = counts.most_common(1)[0]
            if top * 2 > len(others) and list(counts.values()).count(top) == 1:
                majority.append(value)
                mine.append(matrix[r, k])
        row = by_rater[key]
        assert row["n_compared"] == len(mine)
        assert row["kappa_vs_majority"] == pytest.approx(cohen_kappa_score(mine, majority), abs=1e-9)
        assert row["agreement_vs_majority"] == pytest.approx(np.mean(np.array(mine) == np.array(majority)))
        assert [row[f"n_{v}"] for v in VALUES] == [int((matrix[r] == i).sum()) for i in range(3)]


def test_variable_page_downloads_csv_and_xlsx(regard_study, client_for):
    from openpyxl import load_workbook

    s = regard_study
    study, variable = s["study"], s["variable"]
    tie = _adjudicate_a_tie(s)
    c = client_for(s["roles"]["users"]["researcher"])
    url = reverse("agreement-variable-download", args=[study.pk, variable.pk])
    response = c.get(url, {"table": "gold", "format": "csv", "bootstrap": 0})
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(r["unit"]) for r in rows] == _kept_units(s)
    row = next(r for r in rows if int(r["unit"]) == tie)
    assert (row["gold"], row["adjudicated"], row["tie"], row["n_raters"]) == ("neutral", "neutral", "1", "5")
    assert json.loads(row["counts"]) == dict(Counter(_votes(s, tie)))

    response = c.get(url, {"table": "all", "format": "xlsx", "bootstrap": 200})
    assert response.status_code == 200
    book = load_workbook(io.BytesIO(response.content), read_only=True)
    assert {"summary", "gold", "raters", "confusion", "by_gender", "by_model", "ratings"} <= set(book.sheetnames)
    summary = list(book["summary"].iter_rows(values_only=True))
    header = summary[0]
    nominal = dict(zip(header, next(r for r in summary[1:] if r[header.index("level")] == "nominal"), strict=True))
    kept = _kept_units(s)
    _raters, matrix = _matrix(s, kept)
    assert nominal["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )
    assert nominal["krippendorff_alpha_ci_low"] < nominal["krippendorff_alpha"] < nominal["krippendorff_alpha_ci_high"]
    assert nominal["bootstrap"] == 200
    gold_sheet = list(book["gold"].iter_rows(values_only=True))
    assert len(gold_sheet) == len(kept) + 1

    for bad in ({"table": "nonsense"}, {"format": "pdf"}, {"table": "all", "format": "csv"}, {"bootstrap": "x"}):
        response = c.get(url, bad)
        assert response.status_code == 400, bad
    assert client_for(s["roles"]["users"]["coder"]).get(url).status_code == 403


def test_the_agreement_page_lists_variables_as_variables(regard_study, client_for, api_for):
    s = regard_study
    study, variable = s["study"], s["variable"]
    units = _kept_units(s)
    _raters, matrix = _matrix(s, units)
    html = client_for(s["roles"]["users"]["researcher"]).get(reverse("agreement", args=[study.pk])).content.decode()
    table = html.split('id="variable-agreement"', 1)[1].split("</table>", 1)[0]
    row = re.search(rf'data-target="variable:{variable.pk}">(.*?)</tr>', table, re.S).group(1)
    assert reverse("agreement-variable", args=[study.pk, variable.pk]) in row and "ordinal" in row
    # the variable's own α (coders and judges, excluded units dropped) at its level: ordinal for an ordered variable
    found = api_for(s["roles"]["users"]["researcher"]).get(f"/api/studies/{study.pk}/agreement/", {"bootstrap": 0})
    rows = {r["target"]: r for r in found.json()["variables"]}
    mine = rows[f"variable:{variable.pk}"]
    assert mine["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    )
    assert mine["alpha_nominal"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )
    assert mine["level"] == "ordinal" and mine["n_units"] == len(units)
    assert f"{mine['krippendorff_alpha']:.3f}" in row
    # the values are not 1/0 codes, and the variable is not a dimension with α "—"
    codes = html.split('id="code-agreement"', 1)[1].split("</table>", 1)[0] if 'id="code-agreement"' in html else ""
    for value in VALUES + ["uncertain"]:
        assert f">{value}</a>" not in codes
    dims = html.split('id="dimension-agreement"', 1)[1].split("</table>", 1)[0] if "dimension-agreement" in html else ""
    assert ">Regard</a>" not in dims
    assert 'id="n-low"' in html and "5 low-agreement" not in html
