"""A transformers endpoint on a server without the 'local' extra: a clear message naming the extra, never a raw
ModuleNotFoundError (the missing torch is simulated, so this runs with or without the extra installed)."""

import pytest

from generation.models import ModelEndpoint, Output
from generation.runs import services as runs
from generation.runs.endpoint_services import endpoint_problems
from generation.runs.providers import ProviderError, get_provider

pytestmark = pytest.mark.django_db
EXTRA = "pip install -e .[local]"


def test_endpoint_validation_names_the_extra(study, no_torch):
    _, problems = endpoint_problems(
        {
            "name": "local",
            "provider": "transformers",
            "model_id": "/models/gpt2",
            "max_concurrency": 1,
            "max_attempts": 1,
        },
        study,
    )
    assert "'local' extra" in problems["provider"] and EXTRA in problems["provider"] and "torch" in problems["provider"]


def test_endpoint_api_answers_400_and_saves_nothing(roles, api_for, no_torch):
    study = roles["a"]
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/endpoints/",
        {
            "name": "local",
            "provider": "transformers",
            "model_id": "/models/gpt2",
            "max_concurrency": 1,
            "max_attempts": 1,
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert EXTRA in response.content.decode()
    assert not ModelEndpoint.objects.filter(study=study).exists()


def test_endpoint_validation_accepts_transformers_when_the_extra_is_there(study, monkeypatch):
    monkeypatch.setattr("generation.runs.endpoint_services.missing_local_extra", lambda: [])
    _, problems = endpoint_problems(
        {
            "name": "local",
            "provider": "transformers",
            "model_id": "/models/gpt2",
            "max_concurrency": 1,
            "max_attempts": 1,
        },
        study,
    )
    assert "provider" not in problems


def test_call_without_torch_is_a_clear_provider_error(study, make_endpoint, no_torch, tmp_path):
    endpoint = make_endpoint(study, "transformers", model_id=str(tmp_path))
    with pytest.raises(ProviderError, match=r"'local' extra") as caught:
        get_provider(endpoint).complete([{"role": "user", "content": "hi"}], {})
    assert EXTRA in str(caught.value) and not caught.value.retryable


def test_run_start_without_torch_records_the_clear_error(study, make_endpoint, make_toolkit, no_torch, tmp_path):
    endpoint = make_endpoint(study, "transformers", model_id=str(tmp_path), max_attempts=1)
    run = runs.create_run(study, name="local", toolkit=make_toolkit(study, n_items=2), endpoints=[endpoint])
    runs.start(run)
    errors = list(Output.objects.filter(run=run).values_list("error", flat=True))
    assert len(errors) == 2 and all(EXTRA in e and "ModuleNotFoundError" not in e for e in errors), errors
