import pytest

from stereoscope import datasets as registry
from stereoscope.datasets import Column, Dataset, RegistryError, data_dictionary, datasets, register_dataset


@pytest.fixture
def clean_registry(monkeypatch):
    """A copy of the whole registry, restored afterwards. The apps' datasets are discovered first: discovered into
    the copy, they would be lost for every later test in this process (discovery imports each module once)."""
    registry.discover()
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    return registry._registry


def test_register_and_list(clean_registry, db):
    @register_dataset(
        "demo_rows", title="Demo", app="tests", columns=[Column("a", "first"), ("b", "second")], min_role="admin"
    )
    def demo(study, options):
        yield {"a": 1, "b": options.get("x")}

    found = datasets()["demo_rows"]
    assert isinstance(found, Dataset)
    assert found.column_names == ["a", "b"]
    assert found.columns[1] == Column("b", "second")
    assert found.min_role == "admin"
    assert list(found.rows(None, {"x": 2})) == [{"a": 1, "b": 2}]
    assert data_dictionary([found]) == [
        {"dataset": "demo_rows", "column": "a", "description": "first"},
        {"dataset": "demo_rows", "column": "b", "description": "second"},
    ]
    assert registry.get_dataset("demo_rows") is found
    with pytest.raises(KeyError, match="unknown dataset 'nope'"):
        registry.get_dataset("nope")


def test_bad_registrations(clean_registry):
    with pytest.raises(RegistryError, match="duplicate column"):
        register_dataset("x1", title="X", app="t", columns=[Column("a", ""), Column("a", "")])
    with pytest.raises(RegistryError, match="min_role"):
        register_dataset("x2", title="X", app="t", columns=[Column("a", "")], min_role="boss")
    with pytest.raises(RegistryError, match="key"):
        register_dataset("bad key!", title="X", app="t", columns=[Column("a", "")])
    with pytest.raises(RegistryError, match="at least one column"):
        register_dataset("x3", title="X", app="t", columns=[])

    @register_dataset("x4", title="X", app="one", columns=[Column("a", "")])
    def rows_one(study, options):
        yield from ()

    with pytest.raises(RegistryError, match="already registered by app 'one'"):

        @register_dataset("x4", title="X", app="two", columns=[Column("a", "")])
        def rows_two(study, options):
            yield from ()


def test_discovery_imports_app_modules_once(monkeypatch):
    imported = []
    real_import = registry.importlib.import_module

    def spy(name, *args):
        imported.append(name)
        return real_import(name, *args)

    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry.importlib, "import_module", spy)
    datasets()
    datasets()
    assert "generation.datasets" in imported
    assert imported.count("generation.datasets") == 1
    assert "stereoscope.datasets" not in imported
