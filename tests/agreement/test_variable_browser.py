"""Issue 35 in Chromium: the variable page shows bootstrap intervals and offers CSV / XLSX downloads of its tables;
the gold labels a team takes away (variable page and the Exports page's bundle) hold every unit with its value
name, raters, agreement share, tie flag and adjudication."""

import csv
import io
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from agreement import variables
from tests.agreement.test_regard_end_to_end import regard_study  # noqa: F401 (fixtures)
from tests.exports.conftest import export_root  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import make_endpoint  # noqa: F401 (fixtures: regard_study needs it)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _ci_text(ci):
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def test_variable_page_intervals_and_downloads(regard_study, page, login, tmp_path):
    from openpyxl import load_workbook

    s = regard_study
    study, variable = s["study"], s["variable"]
    report = variables.variable_report(study, variable)
    tie = next(g["output_id"] for g in report["gold"] if g["tie"])
    login("researcher")
    page.goto(reverse("agreement-variables", args=[study.pk]))
    page.click(f'#variables a:has-text("{variable.name}")')
    page.wait_for_selector("#variable-summary")

    # the intervals are the report's (1,000 resamples, seed 0) and sit in the site's table style
    full = variables.variable_report(study, variable, bootstrap=1000, seed=0)
    for level in ("nominal", "ordinal"):
        result = full["levels"][level]
        row = page.locator(f'#variable-summary tr[data-level="{level}"]')
        assert row.locator("td.alpha .ci").inner_text() == _ci_text(result.ci95["krippendorff_alpha"])
        assert row.locator("td.kappa .ci").inner_text() == _ci_text(result.ci95["cohen_kappa_mean"])
    assert page.locator("#variable-summary").get_attribute("class") == "table"
    assert page.locator("#per-rater tbody tr").count() == len(full["raters"])
    assert page.locator("#confusion tbody tr").count() == len(full["values"])

    # adjudicate the tie on the page, then download every gold label
    page.click("text=Show all stories")
    page.wait_for_selector("#gold tbody tr >> nth=20")
    row = page.locator("#gold tbody tr", has=page.locator(f'input[name=output][value="{tie}"]'))
    row.locator("select[name=value]").select_option("neutral")
    row.locator("button:has-text('Set')").click()
    page.wait_for_selector("text=Gold value saved.")
    with page.expect_download() as download:
        page.click("#download-gold-csv")
    path = tmp_path / "gold.csv"
    download.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    kept = sorted(g["output_id"] for g in full["gold"])
    assert [int(r["unit"]) for r in rows] == kept
    adjudicated = next(r for r in rows if int(r["unit"]) == tie)
    votes = Counter(s["given"][(tie, c.username)] for c in s["coders"])
    assert (adjudicated["gold"], adjudicated["adjudicated"], adjudicated["tie"]) == ("neutral", "neutral", "1")
    assert adjudicated["n_raters"] == "5" and float(adjudicated["agreement_share"]) == max(votes.values()) / 5
    assert adjudicated["decided_by"] == "researcher"

    with page.expect_download() as download:
        page.click("#download-xlsx")
    path = tmp_path / "all.xlsx"
    download.value.save_as(path)
    assert download.value.suggested_filename.endswith(".xlsx")
    book = load_workbook(path, read_only=True)
    assert {"summary", "gold", "raters", "confusion", "ratings"} <= set(book.sheetnames)
    header = [c.value for c in next(book["gold"].iter_rows(max_row=1))]
    assert {"gold", "n_raters", "agreement_share", "tie", "adjudicated"} <= set(header)


def test_gold_labels_in_the_exported_bundle(regard_study, page, login, export_root, tmp_path):
    from exports.models import ExportJob

    s = regard_study
    study, variable = s["study"], s["variable"]
    report = variables.variable_report(study, variable)
    tie = next(g["output_id"] for g in report["gold"] if g["tie"])
    variables.set_variable_gold(study, variable, output_id=tie, value="positive", user=s["roles"]["users"]["admin"])
    login("researcher")
    page.goto(reverse("exports", args=[study.pk]))
    page.select_option("select[name=format]", "csv")
    page.check("input[name=datasets][value=variable_gold]")
    page.check("input[name=datasets][value=gold_labels]")
    page.click("text=Start export")
    page.wait_for_selector("text=is ready")
    job = ExportJob.objects.get(study=study)
    with page.expect_download() as download:
        page.click(f"#export-job-{job.pk} >> text=Download")
    path = Path(tmp_path / "bundle.zip")
    download.value.save_as(path)
    with zipfile.ZipFile(path) as zf:
        gold = list(csv.DictReader(io.StringIO(zf.read("variable_gold.csv").decode())))
        adjudicated = list(csv.DictReader(io.StringIO(zf.read("gold_labels.csv").decode())))
        dictionary = zf.read("data_dictionary.csv").decode()
    assert len(gold) == len(report["gold"]) and {r["variable"] for r in gold} == {f"variable:{variable.pk}"}
    row = next(r for r in gold if int(r["unit"]) == tie)
    assert (row["gold"], row["adjudicated"], row["tie"], row["decided_by"]) == ("positive", "positive", "1", "admin")
    majority = [r for r in gold if r["adjudicated"] == "" and r["gold"]]
    assert majority and all(r["gold"] == r["majority"] for r in majority)  # not only adjudicated ties
    assert [(r["target"], r["value"], r["value_name"]) for r in adjudicated] == [
        (f"variable:{variable.pk}", "2", "positive")
    ]
    assert "variable_gold,agreement_share," in dictionary and "variable:<id>" in dictionary
