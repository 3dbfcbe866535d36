import pytest

from tests.gencore.conftest import make_endpoint, make_toolkit, study  # noqa: F401


@pytest.fixture
def outputs_factory():
    """Creates a run with outputs of given texts in a study."""

    def make(study, texts, model_names=None, items=None):
        from generation.models import GenerationRun, Output

        run = GenerationRun.objects.create(study=study, name=f"Run {GenerationRun.objects.count() + 1}", is_import=True)
        outs = []
        for i, text in enumerate(texts):
            outs.append(Output.objects.create(
                study=study, run=run, item=(items[i] if items else None), model_name=(model_names[i] if model_names else "model-a"),
                trial=i + 1, text=text, status="done",
            ))
        return outs

    return make
