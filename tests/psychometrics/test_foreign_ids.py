"""Issue 32: an id of another study's object answers "No <thing> N in this study", never "belongs to another
study" (which confirms that it exists)."""

import pytest

from psychometrics.models import QuestionnaireRun

from .helpers import load_library

pytestmark = pytest.mark.django_db


def test_foreign_endpoint_and_instrument_ids_answer_no_such_thing_in_this_study(roles, api_for, make_endpoint):
    from psychometrics.models import Instrument

    asi, _ = load_library()
    study, other = roles["a"], roles["b"]
    mine = make_endpoint(study, name="mine")
    foreign = make_endpoint(other, name="foreign-secret")
    foreign_instrument = Instrument.objects.create(study=other, name="Other instrument")
    api = api_for(roles["users"]["researcher"])
    url = f"/api/studies/{study.pk}/questionnaire-runs/"
    response = api.post(url, {"name": "x", "instrument": asi.pk, "endpoints": [foreign.pk]}, format="json")
    body = response.content.decode()
    assert response.status_code == 400, body
    assert f"No endpoint {foreign.pk} in this study." in body
    assert "another study" not in body and "foreign-secret" not in body
    response = api.post(url, {"name": "x", "instrument": foreign_instrument.pk, "endpoints": [mine.pk]}, format="json")
    body = response.content.decode()
    assert response.status_code == 400 and f"No instrument {foreign_instrument.pk} in this study." in body
    assert "another study" not in body
    assert not QuestionnaireRun.objects.exists()
