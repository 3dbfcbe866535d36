"""manage.py analyze_responses on human data collected elsewhere."""

import json

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from django.core.management import CommandError, call_command

from .test_pure import MINIMAL


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(2)
    items = [{"id": f"h{i}", "text": "x", "subscale": "HS", "reverse": i == 1} for i in range(1, 5)]
    items += [{"id": f"b{i}", "text": "x", "subscale": "BS", "reverse": False} for i in range(1, 5)]
    inst = {**MINIMAL, "items": items}
    f = rng.multivariate_normal([0, 0], [[1, 0.3], [0.3, 1]], size=120)
    cols = {}
    for it in items:
        x = f[:, 0 if it["subscale"] == "HS" else 1] * (-1 if it["reverse"] else 1)
        cols[it["id"]] = np.clip(np.round(2.5 + 0.9 * x + rng.normal(scale=0.8, size=120)), 0, 5).astype(int)
    frame = pd.DataFrame(cols)
    frame["group"] = ["a", "b"] * 60
    frame = frame.astype(object)
    frame.loc[5, "b2"] = ""
    (tmp_path / "inst.json").write_text(json.dumps(inst))
    frame.to_csv(tmp_path / "resp.csv", index=False)
    return tmp_path, frame


def run(capsys, *args):
    call_command("analyze_responses", *args)
    return json.loads(capsys.readouterr().out)


def test_prints_the_documented_keys(files, capsys):
    path, frame = files
    out = run(
        capsys, "--instrument", str(path / "inst.json"), "--responses", str(path / "resp.csv"), "--format", "json"
    )
    for key in ("n", "descriptives", "items", "alpha", "stratified_alpha", "omega_total", "cfa", "notes"):
        assert key in out
    for key in ("chi2", "df", "p", "cfi", "tli", "rmsea", "srmr", "loadings"):
        assert key in out["cfa"]
    assert out["n"] == 120 and set(out["alpha"]) == {"HS", "BS", "total"}
    data = frame.drop(columns="group").replace("", np.nan).astype(float)
    data["h1"] = 5 - data["h1"]
    ref, _ = pg.cronbach_alpha(data=data[["h1", "h2", "h3", "h4"]], nan_policy="listwise")
    assert out["alpha"]["HS"] == pytest.approx(ref)
    assert out["cfa"]["df"] == 19 and 0 < out["omega_total"] < 1
    assert set(out["groups"]) == {"a", "b"}
    assert any("Missing data" in n for n in out["notes"])


def test_undefined_values_are_null_with_a_note(tmp_path, capsys):
    inst = {
        **MINIMAL,
        "items": [{"id": "1", "text": "x", "subscale": "BS"}, {"id": "2", "text": "y", "subscale": "BS"}],
    }
    (tmp_path / "i.json").write_text(json.dumps(inst))
    (tmp_path / "r.csv").write_text("1,2\n3,3\n3,3\n3,3\n")
    out = run(capsys, "--instrument", str(tmp_path / "i.json"), "--responses", str(tmp_path / "r.csv"))
    assert out["alpha"]["BS"] is None and out["stratified_alpha"] is None and out["cfa"]["chi2"] is None
    assert any("undefined" in n.lower() for n in out["notes"])


@pytest.mark.parametrize(
    "csv, message",
    [
        ("1,zz\n3,x\n", "Unknown column"),
        ("1\n9\n", "not a point"),
        ("1\nabc\n", "not a number"),
    ],
)
def test_bad_csv_clear_errors(tmp_path, csv, message):
    (tmp_path / "i.json").write_text(json.dumps(MINIMAL))
    (tmp_path / "r.csv").write_text(csv)
    with pytest.raises(CommandError, match=message):
        call_command(
            "analyze_responses", "--instrument", str(tmp_path / "i.json"), "--responses", str(tmp_path / "r.csv")
        )


def test_bad_instrument(tmp_path):
    (tmp_path / "i.json").write_text("{not json")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("analyze_responses", "--instrument", str(tmp_path / "i.json"), "--responses", "x.csv")
    (tmp_path / "i.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(CommandError, match="Invalid instrument"):
        call_command("analyze_responses", "--instrument", str(tmp_path / "i.json"), "--responses", "x.csv")


def test_header_without_rows_is_a_clear_error(tmp_path):
    (tmp_path / "i.json").write_text(json.dumps(MINIMAL))
    (tmp_path / "r.csv").write_text("1\n")
    with pytest.raises(CommandError, match="no rows"):
        call_command(
            "analyze_responses", "--instrument", str(tmp_path / "i.json"), "--responses", str(tmp_path / "r.csv")
        )


def _scores(frame):
    data = frame.drop(columns="group").replace("", np.nan).astype(float)
    data["h1"] = 5 - data["h1"]
    return pd.DataFrame(
        {
            "HS": data[["h1", "h2", "h3", "h4"]].mean(axis=1),
            "BS": data[["b1", "b2", "b3", "b4"]].mean(axis=1),
            "group": frame["group"],
        }
    )


def test_two_groups_get_welch_t_with_cohens_d(files, capsys):
    from scipy import stats

    path, frame = files
    out = run(capsys, "--instrument", str(path / "inst.json"), "--responses", str(path / "resp.csv"), "--no-cfa")
    hs = out["between_groups"]["HS"]
    scores = _scores(frame)
    a, b = scores.loc[scores.group == "a", "HS"].dropna(), scores.loc[scores.group == "b", "HS"].dropna()
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert hs["test"] == "Welch t" and hs["t"] == pytest.approx(ref.statistic) and hs["p"] == pytest.approx(ref.pvalue)
    pooled = np.sqrt(((len(a) - 1) * a.var() + (len(b) - 1) * b.var()) / (len(a) + len(b) - 2))
    assert hs["d"] == pytest.approx((a.mean() - b.mean()) / pooled)
    assert hs["df"] == pytest.approx(pg.ttest(a, b, correction=True)["dof"].iloc[0])


def test_three_groups_get_one_way_anova_with_eta_squared(files, capsys):
    from scipy import stats

    path, frame = files
    frame = frame.copy()
    frame["group"] = ["a", "b", "c"] * 40
    frame.to_csv(path / "resp3.csv", index=False)
    out = run(capsys, "--instrument", str(path / "inst.json"), "--responses", str(path / "resp3.csv"), "--no-cfa")
    bs = out["between_groups"]["BS"]
    scores = _scores(frame)
    groups = [g["BS"].dropna() for _, g in scores.groupby("group")]
    ref = stats.f_oneway(*groups)
    assert (
        bs["test"] == "one-way ANOVA"
        and bs["F"] == pytest.approx(ref.statistic)
        and bs["p"] == pytest.approx(ref.pvalue)
    )
    allv = pd.concat(groups)
    ss_b = sum(len(g) * (g.mean() - allv.mean()) ** 2 for g in groups)
    assert bs["eta2"] == pytest.approx(ss_b / ((allv - allv.mean()) ** 2).sum())
    assert (bs["df1"], bs["df2"]) == (2, len(allv) - 3)


def test_cli_gives_the_robust_statistics_and_the_ratings_the_report_gives(files, capsys):
    from psychometrics.analysis import analyze, read_wide_csv
    from psychometrics.spec import parse_instrument

    path, _ = files
    out = run(capsys, "--instrument", str(path / "inst.json"), "--responses", str(path / "resp.csv"))
    for key in ("chi2_scaled", "p_scaled", "scaling_factor", "cfi_robust", "tli_robust", "rmsea_robust", "improper"):
        assert key in out["cfa"], key
    assert out["cfa"]["scaling_factor"] > 0 and out["cfa"]["chi2_scaled"] > 0
    spec = parse_instrument(json.loads((path / "inst.json").read_text()))
    wide, _ = read_wide_csv(str(path / "resp.csv"), spec)
    report = analyze(wide, spec, histograms=False)
    assert out["ratings"]["factorial"] == report["ratings"]["factorial"]
    assert out["ratings"]["internal_consistency"] == report["ratings"]["internal_consistency"]
    assert out["ratings"]["factorial_basis"]["robust"] is True and "robust" in out["ratings"]["factorial_basis"]["text"]
    assert out["cfa"]["rmsea_robust"] == pytest.approx(report["cfa"]["rmsea_robust"])
