"""Discoveries made before discoveries were jobs become jobs with one request each (and back)."""

import pytest

from tests.migration_trip import empty_database, migrate

BEFORE = [("annotation", "0008_categorical_variables")]
AFTER = [("annotation", "0011_discovery_job_old_columns_removed")]


@pytest.mark.django_db(transaction=True)
def test_old_discoveries_become_jobs_with_one_request(tmp_path):
    with empty_database(tmp_path):
        _old_discoveries_become_jobs_with_one_request()


def _old_discoveries_become_jobs_with_one_request():
    old = migrate(BEFORE)
    Study, Endpoint = old.get_model("stereoscope", "Study"), old.get_model("generation", "ModelEndpoint")
    Codebook, Discovery = old.get_model("annotation", "Codebook"), old.get_model("annotation", "CodeDiscovery")
    study = Study.objects.create(name="S")
    endpoint = Endpoint.objects.create(study=study, name="gpt", provider="openai", model_id="gpt-x")
    codebook = Codebook.objects.create(study=study, name="cb")
    messages = [{"role": "user", "content": "stories"}]
    done = Discovery.objects.create(
        study=study,
        codebook=codebook,
        endpoint=endpoint,
        output_ids=[3, 5],
        messages=messages,
        status="done",
        error="Note: the model proposed 3 codes (asked for 10–15).",
        response_text="[...]",
    )
    old.get_model("annotation", "CodeSuggestion").objects.create(discovery=done, name="F carer")
    failed = Discovery.objects.create(
        study=study, codebook=codebook, endpoint=endpoint, status="failed", error="no list of codes"
    )
    waiting = Discovery.objects.create(study=study, codebook=codebook, endpoint=endpoint, status="running")

    new = migrate(AFTER)
    Discovery = new.get_model("annotation", "CodeDiscovery")
    Request = new.get_model("annotation", "DiscoveryRequest")
    got = {d.pk: d for d in Discovery.objects.all()}
    assert (got[done.pk].status, got[failed.pk].status, got[waiting.pk].status) == ("completed", "failed", "cancelled")
    assert got[failed.pk].message == "no list of codes" and "resume" in got[waiting.pk].message
    request = Request.objects.get(discovery_id=done.pk)
    assert (request.output_ids, request.messages, request.status, request.endpoint_id) == (
        [3, 5],
        messages,
        "done",
        endpoint.pk,
    )
    assert request.error.startswith("Note:") and request.response_text == "[...]"
    assert Request.objects.get(discovery_id=waiting.pk).status == "pending"
    assert list(got[done.pk].endpoints.values_list("pk", flat=True)) == [endpoint.pk]
    assert new.get_model("annotation", "CodeSuggestion").objects.get().request_id == request.pk

    back = migrate(BEFORE)
    restored = back.get_model("annotation", "CodeDiscovery").objects.get(pk=done.pk)
    assert (restored.status, restored.output_ids, restored.endpoint_id) == ("done", [3, 5], endpoint.pk)
