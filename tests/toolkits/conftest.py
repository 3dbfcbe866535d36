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
