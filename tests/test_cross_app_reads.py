"""Other apps read generation's tables through generation/selectors.py: outside generation/ no code starts a query on
a generation model itself (`Output.objects...`, `_default_manager`, `get_object_or_404(Output, ...)`, or a generic
helper handed the model: `_get_in_study(Output, pk, study)`) or from the study's accessors to generation's tables
(`study.outputs`, `study.generation_runs`, ...). Starting from what a selector returns
(`selectors.study_runs(study).order_by(...)`) is reading through the selector.

The rule covers every app and the project package, not tests and benchmarks (they build fixtures)."""

import re
from pathlib import Path

from django.apps import apps

from stereoscope.models import Study

ROOT = Path(__file__).resolve().parents[1]


def _generation_models():
    return sorted(model.__name__ for model in apps.get_app_config("generation").get_models())


def _study_accessors():
    """The names by which a study reaches generation's tables (related_name of their foreign keys to Study)."""
    return sorted(
        rel.get_accessor_name()
        for rel in Study._meta.related_objects
        if rel.related_model._meta.app_label == "generation" and rel.get_accessor_name()
    )


def direct_reads(text):
    names = "|".join(_generation_models())
    accessors = "|".join(_study_accessors())
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


def test_no_app_reads_generation_tables_except_through_its_selectors():
    found = []
    for config in apps.get_app_configs():
        folder = ROOT / config.name
        if config.name == "generation" or not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                found += [f"{path.relative_to(ROOT)}:{number}: {hit}" for hit in direct_reads(line)]
    assert found == []


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
