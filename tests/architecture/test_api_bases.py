"""Each app's API is a package (`<app>/api/`: serializers.py, views.py, ...; generation, an app of two sub-packages,
has one API module per sub-package, joined by `generation/api.py`), and the serializers of versioned objects
and of jobs extend the shared bases (stereoscope/api_bases.py), which add the shared fields read-only: no app writes
those field lists again."""

import importlib
import pkgutil

import pytest
from rest_framework import serializers

from stereoscope.api_bases import JOB_COLUMNS, VERSION_COLUMNS, JobSerializer, VersionedSerializer
from stereoscope.app_names import PROJECT_APPS
from stereoscope.jobs.models import Job
from stereoscope.versioning import VersionedModel

# apps made of sub-packages, each with its own API module(s) (`api.py`, `api_connections.py`)
SUB_PACKAGED = {"generation": ["toolkits", "runs"]}
APPS = [app for app in PROJECT_APPS if app not in SUB_PACKAGED]


def api_modules(app):
    package = importlib.import_module(f"{app}.api")
    if app in SUB_PACKAGED:
        modules = [package]
        for sub in SUB_PACKAGED[app]:
            sub_package = importlib.import_module(f"{app}.{sub}")
            names = [m.name for m in pkgutil.iter_modules(sub_package.__path__) if m.name.startswith("api")]
            modules += [importlib.import_module(f"{app}.{sub}.{name}") for name in names]
        return modules
    return [package] + [importlib.import_module(f"{app}.api.{m.name}") for m in pkgutil.iter_modules(package.__path__)]


def model_serializers():
    found = set()
    for app in PROJECT_APPS:
        for module in api_modules(app):
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, serializers.ModelSerializer)
                    and value.__module__.startswith(f"{app}.")
                    and ".api" in value.__module__
                ):
                    found.add(value)
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__name__}")


@pytest.mark.parametrize("app", APPS)
def test_the_api_is_a_package_of_serializers_and_views(app):
    package = importlib.import_module(f"{app}.api")
    assert hasattr(package, "__path__"), f"{app}/api.py should be the package {app}/api/"
    names = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert {"serializers", "views"} <= names
    assert package.api_routes, f"{app}.api gives no api_routes"


def test_versioned_and_job_serializers_extend_the_shared_bases():
    wrong = []
    for cls in model_serializers():
        model = cls.Meta.model
        if issubclass(model, VersionedModel) and not issubclass(cls, VersionedSerializer):
            wrong.append(f"{cls.__name__} ({model.__name__} is versioned)")
        if issubclass(model, Job) and not issubclass(cls, JobSerializer):
            wrong.append(f"{cls.__name__} ({model.__name__} is a job)")
    assert not wrong, f"serializers that repeat the shared fields instead of extending the base: {wrong}"


def test_the_probe_finds_the_serializers_of_versioned_objects_and_jobs():
    names = {cls.__name__ for cls in model_serializers()}
    assert {"CodebookSerializer", "InstrumentSerializer", "LexiconSerializer", "JudgeTemplateSerializer"} <= names
    assert {"CodeDiscoverySerializer", "QuestionnaireRunSerializer", "JudgeRoundSerializer"} <= names
    assert {"MeasureRunSerializer", "ExportJobSerializer"} <= names
    assert {"ToolkitSerializer", "GenerationRunSerializer"} <= names


def test_generation_joins_the_api_of_its_two_sub_packages():
    joined = importlib.import_module("generation.api").api_routes
    for sub in SUB_PACKAGED["generation"]:
        routes = importlib.import_module(f"generation.{sub}.api").api_routes
        assert routes and all(route in joined for route in routes), sub


@pytest.mark.parametrize(
    ("base", "columns"),
    [(VersionedSerializer, VERSION_COLUMNS), (JobSerializer, JOB_COLUMNS)],
    ids=["versioned", "job"],
)
def test_the_shared_fields_are_added_once_and_read_only(base, columns):
    subclasses = [cls for cls in model_serializers() if issubclass(cls, base)]
    assert subclasses
    for cls in subclasses:
        repeated = set(cls.Meta.fields) & set(columns)
        assert not repeated, f"{cls.__name__} lists shared fields again: {sorted(repeated)}"
        fields = cls().fields
        for name in ("id", *columns):
            assert name in fields, f"{cls.__name__} lacks {name}"
        writable = [name for name in columns if not fields[name].read_only]
        assert not writable, f"{cls.__name__}: {writable} should be read-only"
