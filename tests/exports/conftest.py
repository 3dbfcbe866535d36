import pytest


@pytest.fixture
def export_root(tmp_path, settings):
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT


@pytest.fixture
def gen_study(roles):
    """Study A with a toolkit (2 dimensions, 3 items), two endpoints, a run and 6 done outputs."""
    from generation.models import Dimension, GenerationRun, ModelEndpoint, Output, PromptItem, Toolkit

    study = roles["a"]
    toolkit = Toolkit.objects.create(study=study, name="Fang toolkit", version=2)
    leadership = Dimension.objects.create(toolkit=toolkit, name="Leadership", order=1)
    family = Dimension.objects.create(toolkit=toolkit, name="Family", order=2)
    items = [
        PromptItem.objects.create(toolkit=toolkit, number=1, text="Write about a leader.", dimension=leadership,
                                  target_stereotype="charisma in leadership", gender_mapping="M = charismatic"),
        PromptItem.objects.create(toolkit=toolkit, number=2, text="Write about a parent.", dimension=family,
                                  target_stereotype="caregiving", gender_mapping="F = caregiver"),
        PromptItem.objects.create(toolkit=toolkit, number=3, text="Write about a hero.", dimension=leadership),
    ]
    gpt = ModelEndpoint.objects.create(study=study, name="gpt", provider="openai", model_id="gpt-4o",
                                       api_key_env="OPENAI_API_KEY", default_params={"temperature": 0.7, "seed": 3})
    claude = ModelEndpoint.objects.create(study=study, name="claude", provider="anthropic", model_id="claude-x",
                                          default_params={"temperature": 1.0, "max_tokens": 800})
    run = GenerationRun.objects.create(study=study, name="Phase 3", toolkit=toolkit, trials=1,
                                       param_overrides={"temperature": 0.5}, status="completed")
    run.endpoints.set([gpt, claude])
    outputs = []
    for endpoint in (gpt, claude):
        for item in items:
            outputs.append(Output.objects.create(
                study=study, run=run, item=item, endpoint=endpoint, model_name=endpoint.model_id, trial=1,
                prompt_text=item.text, status="done",
                text=f"Story {item.number} by {endpoint.model_id}.\nShe led the team; he cared for the kids.",
                provenance={"source": "generated", "provider": endpoint.provider, "model": endpoint.model_id,
                            "params": {"temperature": 0.5}}))
    return {"study": study, "toolkit": toolkit, "items": items, "endpoints": [gpt, claude], "run": run,
            "outputs": outputs, "roles": roles}
