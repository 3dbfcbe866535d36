import pytest

from judging import rounds
from judging.services import toolkit_weights
from stereoscope.datasets import datasets
from tests.judging.helpers import build_study, script_round, seed_template

pytestmark = pytest.mark.django_db


def test_registered_datasets_and_toolkit_weights(study, make_endpoint, fake_provider):
    data = build_study(study, make_endpoint, trials=1, injection=False)
    rnd = rounds.create_round(
        study,
        name="r",
        template=seed_template(study),
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    rounds.start(rnd)
    registry = datasets()
    verdicts = registry["verdicts"]
    rows = list(verdicts.rows(study, {"round_ids": [rnd.pk]}))
    assert len(rows) == 15 and set(rows[0]) == set(verdicts.column_names)
    assert {r["output_id"]: r["value"] for r in rows} == data["truth"]
    assert len(list(verdicts.rows(study, {"models": ["o3"]}))) == 6  # o3 as writer (3) and as judge (3)
    weights = registry["toolkit_weights"]
    wrows = list(weights.rows(study, {}))
    assert [r["item_number"] for r in wrows] == [1, 2, 3] and set(wrows[0]) == set(weights.column_names)
    assert list(weights.rows(study, {"item_numbers": [2]}))[0]["item_number"] == 2
    direct = toolkit_weights(study)
    ones = {1: 4, 2: 5, 3: 4}  # trial 1 is detected iff ONES >= 1: item 1 in 4 of 5 models, item 2 in 5, item 3 in 4
    for row in direct:
        assert row["n"] == 5 and row["rate"] == pytest.approx(ones[row["item_number"]] / 5)
        assert row["method"] == "efficiency" and 0 <= row["ci_low"] <= row["rate"] <= row["ci_high"] <= 1
    assert toolkit_weights(study, rounds=[rnd]) == toolkit_weights(study, rounds=[rnd.pk])


def test_human_checks_dataset_pseudonymises(study, make_endpoint, fake_provider, django_user_model):
    from judging.models import HumanCheck
    from stereoscope.models import Membership

    data = build_study(study, make_endpoint, trials=1, injection=False)
    rnd = rounds.create_round(
        study,
        name="r",
        template=seed_template(study),
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    rounds.start(rnd)
    coder = django_user_model.objects.create_user("carla")
    Membership.objects.create(study=study, user=coder, role="coder")
    verdict = rnd.verdicts.first()
    HumanCheck.objects.create(verdict=verdict, user=coder, value=1 - verdict.value, note="no")
    dataset = datasets()["judge_human_checks"]
    rows = list(dataset.rows(study, {"pseudonymise": True, "pseudonym": lambda pk: f"P{pk:03d}"}))
    assert len(rows) == 1 and rows[0]["coder"] == f"P{coder.pk:03d}" and rows[0]["human_value"] == 1 - verdict.value
    assert set(rows[0]) == set(dataset.column_names)
    assert list(dataset.rows(study, {}))[0]["coder"] == "carla"
