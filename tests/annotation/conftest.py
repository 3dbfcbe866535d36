import pytest

from tests.generation.runs.conftest import make_endpoint, make_toolkit, study  # noqa: F401


@pytest.fixture
def outputs_factory():
    """Creates a run with outputs of the given texts in a study."""

    def make(target, texts, model_names=None, items=None):
        from generation.models import GenerationRun, Output

        run = GenerationRun.objects.create(
            study=target, name=f"Run {GenerationRun.objects.count() + 1}", is_import=True
        )
        outs = []
        for i, text in enumerate(texts):
            outs.append(
                Output.objects.create(
                    study=target,
                    run=run,
                    item=(items[i] if items else None),
                    model_name=(model_names[i] if model_names else "model-a"),
                    trial=i + 1,
                    text=text,
                    status="done",
                )
            )
        return outs

    return make


@pytest.fixture
def small_codebook():
    """Two dimensions with two codes each, shortcuts 1-4."""

    def make(target, name="Stereotypes"):
        from annotation import services

        cb = services.create_codebook(target, name=name)
        lead = services.create_code(cb, name="Leadership", codable=False, color="#e03131")
        care = services.create_code(cb, name="Care", codable=False, color="#2f9e44")
        codes = {
            "lead_m": services.create_code(
                cb, name="M charisma", parent=lead, gender_tag="M", shortcut="1", color="#e03131"
            ),
            "lead_f": services.create_code(
                cb, name="F charisma", parent=lead, gender_tag="F", shortcut="2", color="#fa5252"
            ),
            "care_f": services.create_code(
                cb, name="F communion", parent=care, gender_tag="F", shortcut="3", color="#2f9e44"
            ),
            "care_m": services.create_code(
                cb, name="M communion", parent=care, gender_tag="M", shortcut="4", color="#40c057"
            ),
        }
        return cb, {"lead": lead, "care": care, **codes}

    return make
