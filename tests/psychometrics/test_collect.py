"""Manual endpoints: answers pasted from a chat interface are extracted like API answers."""

import pytest

from generation.models import ModelEndpoint
from psychometrics import runs, services

from .helpers import load_library

pytestmark = pytest.mark.django_db


def test_paste_manual_answers_completes_the_run(roles, client_for):
    study = roles["a"]
    asi, _ = load_library()
    manual = ModelEndpoint.objects.create(study=study, name="ChatGPT web", provider="manual", model_id="gpt-4o (chat)")
    ctx = services.empty_context_set(study)
    run = runs.create_run(
        study, name="Manual", instrument=asi, context_set=ctx, endpoints=[manual], template_key="jung2025"
    )
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "running" and "Waiting for 22 manual answers" in run.message
    web = client_for(roles["users"]["researcher"])
    url = f"/studies/{study.pk}/questionnaires/runs/{run.pk}/collect/"
    page = web.get(url).content.decode()
    assert "22 left" in page and "Statement: No matter how accomplished he is" in page
    assert "Paste manual answers" in web.get(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/").content.decode()
    responses = list(run.responses.order_by("pk"))
    r = web.post(url, {"response": responses[0].pk, "answer": ""}, follow=True)
    assert "it is empty" in r.content.decode()
    for i, response in enumerate(responses):
        web.post(url, {"response": response.pk, "answer": "I'm sorry, I can't." if i == 0 else f"{i % 6} because"})
    run.refresh_from_db()
    assert run.status == "completed"
    first = run.responses.order_by("pk").first()
    assert first.extraction == "refused" and first.value is None
    assert run.responses.order_by("pk")[1].value == 1.0
    r = web.post(url, {"response": responses[1].pk, "answer": "3"}, follow=True)
    assert "answered already" in r.content.decode()
    assert client_for(roles["users"]["coder"]).get(url).status_code == 403
