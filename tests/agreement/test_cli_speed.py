"""What keeps `manage.py agreement` fast (benchmarks/agreement_speed.py times it) gives the same results as the
straightforward code: the vectorised CSV reader, the chunked bootstrap, no system checks."""

import csv
import io
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from agreement import cli
from agreement.management.commands.agreement import Command
from stereoscope.stats import agreement as ag

ROOT = Path(__file__).resolve().parents[2]


def row_by_row(text, level):
    """The reference reader: the csv module and from_long, one row at a time."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    reader.fieldnames = [h.strip().lower() for h in reader.fieldnames]
    rows = [(r["unit"].strip(), r["rater"].strip(), r["value"]) for r in reader]
    return ag.from_long(rows, level=level)


def random_long_csv(
    seed, n_units=300, n_raters=5, categories=4, value=str, newline="\n", unit="u{} ", shuffle=False, blank_lines=False
):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, n_units)
    data = np.where(rng.random((n_raters, n_units)) < 0.7, truth, rng.integers(0, categories, (n_raters, n_units)))
    lines = ["Value, UNIT ,rater,note"]
    for u in rng.permutation(n_units):
        for r in rng.permutation(n_raters):
            cell = value(int(data[r, u])) if rng.random() > 0.2 else rng.choice(["", " NA", "null", "  "])
            lines.append(f"{cell},{unit.format(u)}, rater{r},x")
    if shuffle:  # a unit's rows apart (the reader factorizes runs of one unit's rows once)
        lines[1:] = [lines[1 + i] for i in rng.permutation(len(lines) - 1)]
    if blank_lines:
        lines[5:5] = ["", ""]
    return "\ufeff" + newline.join(lines) + newline


CASES = [
    ("integers", dict(), "ordinal"),
    ("floats written as 2.0", dict(value=lambda v: f"{v}.0"), "interval"),
    ("halves", dict(value=lambda v: f" {v / 2} "), "ratio"),
    ("names", dict(value=lambda v: f"code{v}"), "nominal"),
    ("numbers and names mixed", dict(value=lambda v: "hero" if v == 0 else str(v)), "nominal"),
    ("windows line ends", dict(newline="\r\n"), "nominal"),
    # the byte reader packs fields of up to 8 bytes into integers, longer ones into fixed-width byte strings; past
    # 64 bytes, or with characters other than printable ASCII, pandas reads the file
    ("unit names of 9 to 40 bytes", dict(unit="story-{}-" + "x" * 30), "nominal"),
    ("unit names over 64 bytes", dict(unit="{}" + "y" * 70), "ordinal"),
    ("non-ASCII names", dict(unit="Zoë {}", value=lambda v: f"câté{v}"), "nominal"),
    ("tabs around values", dict(value=lambda v: f"\t{v}\t"), "interval"),
    ("rows in random order", dict(shuffle=True), "ordinal"),
    ("long unit names in random order", dict(shuffle=True, unit="story-{}-" + "x" * 30), "nominal"),
    ("empty lines", dict(blank_lines=True), "nominal"),
]


@pytest.mark.parametrize("name,options,level", CASES, ids=[c[0] for c in CASES])
def test_plain_csv_reader_equals_the_row_by_row_reader(name, options, level):
    text = random_long_csv(len(name), **options)
    header = [h.strip().lower() for h in text.lstrip("\ufeff").splitlines()[0].split(",")]
    fast = ag._read_plain_long_csv(text.lstrip("\ufeff"), header, level)
    assert fast is not None, "a plain CSV takes the vectorised path"
    reference = row_by_row(text, level)
    for got in (fast, ag.read_long_csv(text, level)):
        assert got.units == reference.units and got.raters == reference.raters
        assert got.categories == reference.categories
        assert [type(c) for c in got.categories] == [type(c) for c in reference.categories]
        assert np.array_equal(got.codes, reference.codes)


@pytest.mark.parametrize(
    "text",
    [
        'unit,rater,value\n"u,1",a,1\n"u,1",b,2\n',  # quoted: row by row
        "unit,rater,value\nu1,a,1,9\n",  # too many fields
        "unit,rater,value\nu1,a\n",  # too few
        "unit,rater,value\nu1,a,1\n   \n",  # a line of spaces is a row
        "unit,rater,value\nu1,a,1\nu1,a,2\n",  # a rater twice on a unit
        "unit,rater,value\nu1,,1\n",  # no rater
        "unit,rater,value\n",  # header only
    ],
)
def test_anything_unusual_takes_the_row_by_row_path(text):
    assert ag._read_plain_long_csv(text, ["unit", "rater", "value"], "interval") is None


def test_chunked_bootstrap_totals_equal_one_draw_of_all_resamples():
    rm = ag.from_matrix(
        np.where(
            np.random.default_rng(7).random((6, 2000)) < 0.1, np.nan, np.random.default_rng(8).integers(0, 4, (6, 2000))
        )
    )
    feats = ag._Features(rm)
    got = feats.resampled_totals(1000, np.random.default_rng(3))
    draws = np.random.default_rng(3).multinomial(int(feats.freq.sum()), feats.freq / feats.freq.sum(), size=1000)
    expected = (feats.matrix.T @ draws.astype(float).T).T
    assert np.array_equal(got, expected)
    assert got.flags.f_contiguous  # the same memory layout, so every coefficient sums in the same order


def test_command_runs_without_system_checks():
    assert Command.requires_system_checks == []


@pytest.mark.parametrize("unit", ["u{}", "story-{}-of-the-first-run"])
def test_plain_ascii_csv_is_read_from_its_bytes_without_pandas(monkeypatch, unit):
    monkeypatch.setattr(ag, "_pandas_columns", lambda *args: pytest.fail("pandas read a plain ASCII CSV"))
    text = random_long_csv(11, unit=unit)
    got, reference = ag.read_long_csv(text, "ordinal"), row_by_row(text, "ordinal")
    assert got.units == reference.units and got.raters == reference.raters
    assert np.array_equal(got.codes, reference.codes)


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_intervals_drawn_in_the_background_equal_the_sequential_bootstrap(seed):
    """The reference: one multinomial draw of all 1,000 resamples over the unit patterns, one product, in this
    thread; agreement() draws them in blocks in other threads while it computes the point estimates."""
    data = np.random.default_rng(seed + 10).integers(0, 3, (5, 3000)).astype(float)
    data[np.random.default_rng(seed + 20).random(data.shape) < 0.2] = np.nan
    rm = ag.from_matrix(data)
    got = ag.agreement(rm, bootstrap=1000, seed=seed)
    feats = ag._Features(rm)
    draws = np.random.default_rng(seed).multinomial(int(feats.freq.sum()), feats.freq / feats.freq.sum(), size=1000)
    totals = np.asfortranarray((feats.matrix.T @ draws.astype(float).T).T)
    point = ag.agreement(rm, bootstrap=0)
    expected = ag.bootstrap_ci(feats, "nominal", point, n_boot=1000, seed=seed, totals=totals)
    assert got.ci95 == expected  # bit for bit
    assert all(expected[name] is not None for name in ("krippendorff_alpha", "gwet_ac1", "cohen_kappa_mean"))


def test_a_background_iterator_dropped_unread_lets_its_thread_end():
    def numbers():
        yield from range(1000)

    threads = {t.ident for t in threading.enumerate()}
    blocks = ag._background_iter(numbers(), ahead=1)  # its thread starts at once, before anything is read
    (producer,) = [t for t in threading.enumerate() if t.ident not in threads]
    assert producer.is_alive()
    del blocks
    producer.join(timeout=30)
    assert not producer.is_alive()


def test_an_error_while_drawing_reaches_the_caller():
    def failing():
        yield 1
        raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError, match="drawing failed"):
        list(ag._background_iter(failing()))


# ------------------------------------------------------------------ a file's agreement without starting Django
@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--format", "text", "--seed", "3", "--bootstrap", "150"],
        ["--level", "ordinal", "--bootstrap", "0"],
        ["--level=interval", "--format=text", "--bootstrap=50", "--seed=9"],
    ],
)
def test_the_django_free_run_prints_what_the_command_prints(tmp_path, options):
    path = tmp_path / "ratings.csv"
    path.write_text(random_long_csv(5), encoding="utf-8")
    out = io.StringIO()
    assert cli.run_without_django(["--input", str(path), *options], stdout=out)
    expected = io.StringIO()
    call_command("agreement", "--input", str(path), *options, stdout=expected)
    assert out.getvalue() == expected.getvalue() and out.getvalue().endswith("\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["--study", "1"],
        ["--input", "-"],  # standard input can be read once: the command reads it
        ["--input", "{path}", "--verbosity", "2"],  # Django's own options
        ["--input", "{path}", "--traceback"],
        ["--inp", "{path}"],  # an abbreviation Django may read otherwise
        ["--input", "{path}", "--help"],
        ["--input", "{path}", "--bootstrap", "-1"],
        ["--input", "{path}", "--level", "fuzzy"],
        ["--input", "{missing}"],  # errors are the command's
        ["--input", "{bad}"],
    ],
)
def test_anything_but_a_readable_file_is_left_to_the_django_command(tmp_path, argv):
    path = tmp_path / "ok.csv"
    path.write_text(random_long_csv(6), encoding="utf-8")
    (tmp_path / "bad.csv").write_text("unit,rater,value\nu1,a,1\nu1,a,2\n", encoding="utf-8")  # rated twice
    names = {"path": path, "missing": tmp_path / "nope.csv", "bad": tmp_path / "bad.csv"}
    out = io.StringIO()
    assert cli.run_without_django([a.format(**names) for a in argv], stdout=out) is False
    assert out.getvalue() == ""


PROBE = """
import runpy, sys
sys.argv = ["manage.py", "agreement", "--input", sys.argv[1], "--bootstrap", "20"]
runpy.run_path("manage.py", run_name="__main__")
print("imported:" + " ".join(m for m in ("django", "pandas", "agreement.models", "celery") if m in sys.modules))
"""


def test_manage_py_reads_a_file_without_django_or_celery(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(random_long_csv(7), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report, imported = done.stdout.rstrip("\n").rsplit("\n", 1)
    assert imported == "imported:"
    assert ag.read_long_csv(path.read_text()).units and '"n_units": 300' in report


def test_manage_py_reports_a_file_error_through_the_command(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "agreement", "--input", str(tmp_path / "nope.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "CommandError: No such file" in done.stderr and done.stdout == ""


def benchmark_ratings(n_units, n_raters, missing, seed, categories):
    """benchmarks/agreement_speed.py's ratings: a truth per unit, each rater right 80% of the time."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, n_units)
    noise = rng.integers(0, categories, (n_raters, n_units))
    data = np.where(rng.random((n_raters, n_units)) < 0.8, truth, noise).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


# intervals as the code before issue 36's speed work computed them (commit 53b1efc), to the last bit
FROZEN = [
    (
        (5000, 4, 0.2, 30, 5),
        "ordinal",
        0,
        {
            "krippendorff_alpha": [0.6115185744791857, 0.6457635746746476],
            "percent_agreement": [0.7022137886886298, 0.7218442050194512],
            "fleiss_kappa": None,
            "cohen_kappa_mean": [0.6260999565223249, 0.6493406193244259],
            "gwet_ac1": [0.6278089494817506, 0.6523116714771364],
        },
    ),
    (
        (3000, 6, 0.3, 31, 3),
        "interval",
        7,
        {
            "krippendorff_alpha": [0.6180989596225765, 0.6548339554791386],
            "percent_agreement": [0.7554889637122633, 0.7755034547506149],
            "fleiss_kappa": None,
            "cohen_kappa_mean": [0.6288213596560815, 0.6588665057234906],
            "gwet_ac1": [0.6334065648889319, 0.6633688644880645],
        },
    ),
]


@pytest.mark.parametrize("shape,level,seed,expected", FROZEN, ids=["ordinal", "interval"])
def test_intervals_for_a_seed_are_those_of_before_the_speed_work(shape, level, seed, expected):
    rm = ag.from_matrix(benchmark_ratings(*shape))
    assert ag.agreement(rm, level=level, bootstrap=500, seed=seed).ci95 == expected
