"""manage.py agreement on CSV files: exact keys, published values, clear errors."""

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from .test_statistics import KRIPPENDORFF_2011

KEYS = {
    "krippendorff_alpha",
    "percent_agreement",
    "fleiss_kappa",
    "cohen_kappa_mean",
    "gwet_ac1",
    "n_units",
    "n_raters",
    "n_ratings",
    "ci95",
    "notes",
}


def write_long_csv(path, matrix, names="ABCD"):
    lines = ["unit,rater,value"]
    for r, row in enumerate(matrix):
        for u, value in enumerate(row):
            lines.append(f"unit{u + 1},{names[r]},{'' if np.isnan(value) else int(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args):
    out = io.StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    "level,published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_cli_reproduces_krippendorff_2011(tmp_path, level, published):
    path = write_long_csv(tmp_path / "k.csv", KRIPPENDORFF_2011)
    data = json.loads(run("--input", str(path), "--level", level, "--format", "json", "--bootstrap", "200"))
    assert set(data) == KEYS
    assert round(data["krippendorff_alpha"], 3) == published
    assert (data["n_units"], data["n_raters"], data["n_ratings"]) == (12, 4, 41)
    assert data["fleiss_kappa"] is None and any("different numbers of ratings" in n for n in data["notes"])
    assert round(data["gwet_ac1"], 4) == 0.7754
    low, high = data["ci95"]["krippendorff_alpha"]
    assert low < data["krippendorff_alpha"] < high
    assert data["ci95"]["fleiss_kappa"] is None


def test_cli_nominal_strings_and_text_format(tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text(
        "unit,rater,value\ns1,ann,hero\ns1,bob,hero\ns2,ann,victim\ns2,bob,victim\ns3,ann,hero\ns3,bob,victim\n"
    )
    data = json.loads(run("--input", str(path), "--bootstrap", "0"))
    assert data["n_units"] == 3 and data["percent_agreement"] == pytest.approx(2 / 3)
    text = run("--input", str(path), "--format", "text", "--bootstrap", "0")
    assert "krippendorff_alpha" in text and "units 3, raters 2, ratings 6" in text


def test_cli_degenerate_prints_null_not_nan(tmp_path):
    path = tmp_path / "same.csv"
    path.write_text("unit,rater,value\nu1,a,1\nu1,b,1\nu2,a,1\nu2,b,1\n")
    raw = run("--input", str(path))
    assert "NaN" not in raw
    data = json.loads(raw)
    assert data["krippendorff_alpha"] is None and data["percent_agreement"] == 1.0 and data["notes"]


@pytest.mark.parametrize(
    "content,message",
    [
        ("unit,coder,value\nu1,a,1\n", "missing: rater"),
        ("unit,rater,value\nu1,a,high\nu1,b,1\n", "Line 2: value 'high' is not a number"),
        ("unit,rater,value\nu1,a,1\nu1,a,2\n", "Line 3: rater 'a' rated unit 'u1' more than once"),
        ("unit,rater,value\nu1,a,1,9\n", "Line 2"),
    ],
)
def test_cli_bad_input_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        run("--input", str(path), "--level", "interval")


def test_cli_missing_file(tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        run("--input", str(tmp_path / "nope.csv"))
