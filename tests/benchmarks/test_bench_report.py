"""The BENCH line every benchmark prints (benchmarks/_report.py) and `make bench`'s comparison (issue 36)."""

from benchmarks import _report, run_all


def test_bench_line_round_trips(capsys):
    line = _report.bench("workspace.open_p95", 42.125, "ms", target=50)
    assert capsys.readouterr().out.strip() == line
    figure = _report.parse(line)["workspace.open_p95"]
    assert figure["value"] == 42.12 and figure["unit"] == "ms" and figure["op"] == "<=" and figure["target"] == 50
    assert _report.meets(figure) is True
    ratio = _report.parse(_report.bench("generation.ratio_to_baseline", 0.81, "x", target=0.95, higher_is_better=True))
    assert _report.meets(ratio["generation.ratio_to_baseline"]) is False


def test_last_recorded_line_wins_and_prose_is_ignored():
    text = (
        "prose BENCH a=1 s load=0.1\n```\nBENCH a=1 s load=0.5\nBENCH b=2 ms target<=3 load=1\n"
        "BENCH a=3 s load=0.2\n```"
    )
    found = _report.parse(text)
    assert set(found) == {"a", "b"} and found["a"]["value"] == 3 and found["b"]["target"] == 3


def test_regression_over_a_quarter_is_flagged_in_the_direction_of_the_target():
    slower = _report.parse("BENCH t=130 ms target<=50 load=1")["t"]
    faster_ratio = _report.parse("BENCH r=0.7 x target>=0.95 load=1")["r"]
    assert _report.regression(slower, {"value": 100.0}) is not None
    assert _report.regression(slower, {"value": 110.0}) is None  # 18% worse: within noise
    assert _report.regression(faster_ratio, {"value": 1.0}) is not None  # a ratio 30% lower
    assert _report.regression(faster_ratio, {"value": 0.6}) is None  # higher than before: better
    lines, regressed = run_all.compare({"t": slower}, {"quick.t": {"value": 100.0, "load": 1.0}}, prefix="quick.")
    assert regressed == ["quick.t"] and "REGRESSION 30% worse" in lines[0] and "recorded 100" in lines[0]


def test_every_benchmark_is_run_by_make_bench():
    scripts = {entry[0] for entry in run_all.BENCHMARKS}
    on_disk = {p.name for p in run_all.ROOT.joinpath("benchmarks").glob("*.py")}
    helpers = {"_report.py", "run_all.py", "bench_data.py", "__init__.py"}
    assert on_disk - helpers == scripts
