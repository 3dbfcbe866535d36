"""Other apps read an app's tables through its selectors.py, for every app that has one (generation, annotation,
judging, measures, psychometrics): outside the app no code starts a query on one of its models itself
(`Output.objects...`, `_default_manager`, `get_object_or_404(Output, ...)`, or a generic helper handed the model:
`_get_in_study(Output, pk, study)`) or from the study's accessors to its tables (`study.outputs`,
`study.judge_rounds`, ...). Starting from what a selector returns (`selectors.study_runs(study).order_by(...)`) is
reading through the selector.

The rule covers every app and the project package, not tests and benchmarks (they build fixtures)."""

import re
from pathlib import Path

import pytest
from django.apps import apps

from stereoscope.models import Study

ROOT = Path(__file__).resolve().parents[2]


def apps_with_selectors():
    return sorted(c.name for c in apps.get_app_configs() if (ROOT / c.name / "selectors.py").is_file())


def _models(owner="generation"):
    return sorted(model.__name__ for model in apps.get_app_config(owner).get_models())


def _generation_models():
    return _models("generation")


def _study_accessors(owner="generation"):
    """The names by which a study reaches the owner's tables (related_name of their foreign keys to Study)."""
    return sorted(
        rel.get_accessor_name()
        for rel in Study._meta.related_objects
        if rel.related_model._meta.app_label == owner and rel.get_accessor_name()
    )


def direct_reads(text, owner="generation"):
    names = "|".join(_models(owner))
    accessors = "|".join(_study_accessors(owner)) or "(?!)"
    pattern = re.compile(
        rf"\b({names})\.(objects|_default_manager)\b"
        rf"|get_object_or_404\(\s*({names})\b"
        rf"|\bstudy\.({accessors})\b"
        rf"|\b(?!(?:isinstance|issubclass|ForeignKey|OneToOneField|ManyToManyField)\()\w+\(\s*({names})\s*[,)]"
    )
    return [m.group(0) for m in pattern.finditer(text)]


def test_the_rule_sees_each_kind_of_direct_read():
    assert {"Output", "GenerationRun", "ModelEndpoint", "Toolkit", "PromptItem"} <= set(_generation_models())
    assert {"outputs", "generation_runs", "endpoints"} <= set(_study_accessors())
    sample = (
        "Output.objects.filter(study=study)\n"
        "get_object_or_404(Toolkit, pk=1)\n"
        "request.study.generation_runs.order_by('pk')\n"
        "ModelEndpoint._default_manager.all()\n"
        "_get_in_study(Output, pk, study)\n"
        "isinstance(endpoint, ModelEndpoint)\n"  # a type check reads nothing
        "models.ForeignKey(Output, on_delete=models.CASCADE)\n"  # a relation reads nothing
        "selectors.study_runs(study).order_by('pk')\n"  # through a selector: fine
        "rnd.study.codebooks.all()\n"  # annotation's own accessor: fine
    )
    assert direct_reads(sample) == [
        "Output.objects",
        "get_object_or_404(Toolkit",
        "study.generation_runs",
        "ModelEndpoint._default_manager",
        "_get_in_study(Output,",
    ]


def test_every_app_with_models_that_others_read_has_selectors():
    assert {"generation", "annotation", "judging", "measures", "psychometrics"} <= set(apps_with_selectors())


@pytest.mark.parametrize("owner", apps_with_selectors())
def test_no_app_reads_another_apps_tables_except_through_its_selectors(owner):
    found = []
    for config in apps.get_app_configs():
        folder = ROOT / config.name
        if config.name == owner or not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                found += [f"{path.relative_to(ROOT)}:{number}: {hit}" for hit in direct_reads(line, owner)]
    assert found == []


def test_the_rule_sees_reads_of_other_owners():
    assert direct_reads("Codebook.objects.filter(study=study)", "annotation") == ["Codebook.objects"]
    assert direct_reads("JudgeRound.objects.filter(study=study)", "judging") == ["JudgeRound.objects"]
    assert direct_reads("study.judge_rounds.order_by('pk')", "judging") == ["study.judge_rounds"]
    assert direct_reads("MeasureRun.objects.filter(study=study)", "measures") == ["MeasureRun.objects"]


def test_generation_offers_the_reads_other_apps_use():
    from generation import selectors

    for name in (
        "study_runs",
        "study_endpoints",
        "endpoints_by_id",
        "study_outputs",
        "outputs_by_id",
        "toolkits_for",
        "study_items",
    ):
        assert callable(getattr(selectors, name)), name
