import pytest

from tests.generation.runs.conftest import study  # noqa: F401


@pytest.fixture
def make_outputs():
    """make_outputs(study, [{"text":..., "slot_values":..., "item":..., "model_name":..., "trial":...}]) -> outputs
    in one imported generation run."""
    from generation.models import GenerationRun, Output
    from generation.toolkits.expansion import variant_key

    def make(target, specs, run=None, name="imported"):
        run = run or GenerationRun.objects.create(study=target, name=name, is_import=True, status="completed")
        outputs = []
        for i, spec in enumerate(specs, 1):
            spec = dict(spec)
            slots = spec.pop("slot_values", {})
            outputs.append(
                Output.objects.create(
                    study=target,
                    run=run,
                    status="done",
                    model_name=spec.pop("model_name", "model-a"),
                    trial=spec.pop("trial", i),
                    slot_values=slots,
                    variant_key=variant_key(slots),
                    **spec,
                )
            )
        return outputs

    return make


@pytest.fixture
def library_lexicons(db):
    from measures.builtin import builtin_specs
    from measures.models import Lexicon
    from stereoscope.builtin import load_builtins

    load_builtins(builtin_specs(), log=lambda *_: None)
    return {lx.builtin_key: lx for lx in Lexicon.objects.filter(study__is_library=True)}
