import pytest


@pytest.fixture
def make_toolkit(roles):
    """A toolkit in study A built from plain data: make_toolkit(items=[{"number":1,"text":...}], slots=..., ...)."""
    from generation.models import Toolkit

    def make(items=(), study=None, name="Toolkit", **fields):
        toolkit = Toolkit.objects.create(study=study or roles["a"], name=name, **fields)
        for spec in items:
            spec = dict(spec)
            dimension = spec.pop("dimension", None)
            if dimension:
                spec["dimension"], _ = toolkit.dimensions.get_or_create(name=dimension)
            toolkit.items.create(**spec)
        return toolkit

    return make


@pytest.fixture
def phase3(db):
    """The built-in toolkits of generation, loaded into the library study; returns the Phase 3 toolkit."""
    from generation.builtin import builtin_specs
    from generation.models import Toolkit
    from stereoscope.builtin import load_builtins

    load_builtins(builtin_specs(), log=lambda line: None)
    return Toolkit.objects.get(study__is_library=True, builtin_key="fang2025-phase3")


@pytest.fixture
def lock_with_run():
    """Lock a toolkit the way the platform does: a generation run uses it."""

    def lock(toolkit):
        from generation.models import GenerationRun
        from generation.toolkits.services import TOOLKITS

        GenerationRun.objects.create(study=toolkit.study, name=f"run of {toolkit}", toolkit=toolkit)
        return TOOLKITS.lock(toolkit)

    return lock
