"""One study with data on every page: runs, outputs, codings, a judge round, agreement, questionnaires, measures,
exports. Built from the other suites' fixtures and helpers."""

import pytest
from django.apps import apps

from tests.exports.conftest import coded_study, export_root, gen_study  # noqa: F401
from tests.generation.runs.conftest import make_endpoint  # noqa: F401


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def full_study(coded_study, make_endpoint, fake_provider, export_root, client_for):  # noqa: F811
    """coded_study plus assignments, a questionnaire run, a lexicon and a measure run, and an export job."""
    from annotation.models import Assignment
    from measures import scoring
    from measures import services as measure_services
    from psychometrics import runs as questionnaire_runs
    from psychometrics import services as psych_services
    from tests.psychometrics.helpers import load_library

    study, users = coded_study["study"], coded_study["roles"]["users"]
    for i, output in enumerate(coded_study["outputs"][:3]):
        Assignment.objects.get_or_create(
            study=study,
            codebook=coded_study["codebook"],
            output=output,
            coder=users["coder"],
            defaults={"position": i + 1},
        )
    asi, personas = load_library()
    contexts = psych_services.contexts_from_personas(study, "five", personas, n=5, seed=1)
    endpoint = make_endpoint(study, name="questionnaire model", model_id="m-1")
    fake_provider.default = {"text": "3"}
    questionnaire = questionnaire_runs.create_run(
        study,
        name="ASI run",
        instrument=asi,
        context_set=contexts,
        endpoints=[endpoint],
        option_order="permuted",
        audit_per_model=5,
    )
    questionnaire_runs.start(questionnaire)
    lexicon = measure_services.create_lexicon(
        study,
        measure_services.validate_lexicon_data(
            {
                "name": "Care words",
                "categories": [
                    {
                        "key": "care",
                        "name": "Care",
                        "direction": "female",
                        "words": ["cared", "kind"],
                        "color": "#e8590c",
                    },
                    {
                        "key": "agency",
                        "name": "Agency",
                        "direction": "male",
                        "words": ["led", "leader"],
                        "color": "#1c7ed6",
                    },
                ],
            }
        ),
    )
    exclusion, _ = measure_services.add_exclusion(lexicon, phrase="kind of")
    lexicon = exclusion.lexicon
    measure_run = scoring.create_run(study, name="Measures", lexicons=[lexicon], classifier="vader")
    scoring.start(measure_run)
    response = client_for(users["researcher"]).post(
        f"/studies/{study.pk}/exports/", {"format": "csv", "datasets": ["codings"]}
    )
    assert response.status_code == 302, response.content[:500]
    export_job_model = next(m for m in apps.get_models() if m.__name__ == "ExportJob")  # wherever the app lives
    export_job = export_job_model.objects.get(study=study)
    coder_membership = apps.get_model("stereoscope", "Membership").objects.get(study=study, user=users["coder"])
    variable = _regard_variable(study, coded_study["outputs"][:2], users)
    from annotation.services import start_discovery

    discovery = start_discovery(
        study, coded_study["codebook"], item=coded_study["outputs"][0].item, endpoint=endpoint, sample_size=2
    )
    questionnaire.refresh_from_db()
    measure_run.refresh_from_db()
    return {
        **coded_study,
        "questionnaire": questionnaire,
        "contexts": contexts,
        "personas": personas,
        "instrument": asi,
        "lexicon": lexicon,
        "exclusion": exclusion,
        "measure_run": measure_run,
        "endpoint": endpoint,
        "export_job": export_job,
        "coder_membership": coder_membership.pk,
        "variable": variable,
        "discovery": discovery,
    }


def _regard_variable(study, outputs, users):
    """A categorical variable coded by two coders on two stories (one tie), for the variable pages."""
    from annotation import services
    from annotation.models import Assignment

    codebook = services.import_codebook(
        study,
        {
            "name": "Regard",
            "codes": [
                {
                    "name": "Regard",
                    "codable": False,
                    "variable": "story",
                    "children": [{"name": "negative"}, {"name": "positive"}, {"name": "uncertain", "exclude": True}],
                }
            ],
        },
    )
    values = {c.name: c for c in codebook.codes.filter(codable=True)}
    for output, (first, second) in zip(outputs, [("positive", "positive"), ("positive", "negative")], strict=True):
        Assignment.objects.create(study=study, codebook=codebook, output=output, coder=users["coder"])
        for user, value in ((users["coder"], first), (users["researcher"], second)):
            services.create_coding(study=study, codebook=codebook, output=output, code=values[value], coder=user)
    return codebook.codes.get(name="Regard")
