"""benchmarks/export_speed.py judges its own data and results: a half-built study from a failed load is not reused,
and an export with fewer rows than the study holds (0 codings) is a failure, however fast."""

import pytest

from benchmarks import export_speed as bench


def test_a_study_with_fewer_rows_than_its_plan_is_incomplete():
    spec = bench.DATASETS[bench.BIG]
    full = {"outputs": spec["outputs"], "codings": spec["outputs"] * spec["per_output"]}
    assert bench.missing_rows(full, spec) == {}
    assert bench.missing_rows({"outputs": spec["outputs"], "codings": 0}, spec) == {"codings": (0, full["codings"])}
    assert bench.missing_rows({"outputs": 0, "codings": 0}, spec) == {
        "outputs": (0, spec["outputs"]),
        "codings": (0, full["codings"]),
    }


def test_a_fast_export_of_zero_rows_fails():
    fast = {"seconds": 0.5, "peak_rss_mb": 90.0, "rows": {"codings": 0}}
    problems = bench.problems(fast, {"codings": 1_000_000}, max_s=30, max_mb=300)
    assert problems == ["codings: 0 rows, expected 1000000"]


def test_missing_dataset_slow_or_large_exports_fail_and_a_good_one_passes():
    assert bench.problems({"seconds": 1, "peak_rss_mb": 1, "rows": {}}, {"codings": 5}, max_s=30, max_mb=300) == [
        "codings: 0 rows, expected 5"
    ]
    slow = bench.problems({"seconds": 31, "peak_rss_mb": 301, "rows": {"codings": 5}}, {"codings": 5}, 30, 300)
    assert slow == ["31 s > 30 s", "peak RSS 301 MB >= 300 MB"]
    assert bench.problems({"seconds": 29, "peak_rss_mb": 10, "rows": {"codings": 5}}, {"codings": 5}, 30, None) == []


@pytest.mark.django_db
def test_study_rows_counts_outputs_and_codings(roles):
    from annotation.models import Code, Codebook, Coding
    from generation.models import GenerationRun, Output

    study = roles["a"]
    run = GenerationRun.objects.create(study=study, name="r", is_import=True)
    outputs = [Output.objects.create(study=study, run=run, model_name="m", text="t", status="done") for _ in range(2)]
    book = Codebook.objects.create(study=study, name="b")
    code = Code.objects.create(codebook=book, name="c")
    Coding.objects.create(output=outputs[0], code=code, codebook=book, coder=roles["users"]["coder"])
    assert bench.study_rows(study) == {"outputs": 2, "codings": 1}
