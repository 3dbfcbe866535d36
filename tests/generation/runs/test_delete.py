"""Deleting a whole study cascades through its runs; deleting a used toolkit or endpoint alone is refused."""

import pytest
from django.db.models import RestrictedError

from generation.models import GenerationRun, ModelEndpoint, Output, PromptItem, ProviderCall, Toolkit
from generation.runs import services as runs

pytestmark = pytest.mark.django_db


def test_deleting_a_study_with_runs_deletes_everything(study, make_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 3)
    endpoint = make_endpoint(study)
    run = runs.create_run(study, name="r", toolkit=toolkit, endpoints=[endpoint], trials=2)
    runs.start(run)
    assert Output.objects.filter(run=run, status="done").count() == 6
    assert ProviderCall.objects.filter(study=study).count() == 6
    study.delete()
    for model in (GenerationRun, Output, ProviderCall, Toolkit, PromptItem, ModelEndpoint):
        assert not model.objects.exists(), model.__name__


def test_used_toolkit_item_and_endpoint_cannot_be_deleted_alone(study, make_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 1)
    endpoint = make_endpoint(study)
    run = runs.create_run(study, name="r", toolkit=toolkit, endpoints=[endpoint])
    runs.start(run)
    with pytest.raises(RestrictedError):
        toolkit.delete()
    with pytest.raises(RestrictedError):
        endpoint.delete()
    with pytest.raises(RestrictedError):
        PromptItem.objects.get(toolkit=toolkit).delete()
    assert Output.objects.filter(run=run).count() == 1
