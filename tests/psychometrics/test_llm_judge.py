"""A model-based judge as the last step of the extraction chain: only answers the rule chain leaves inconclusive
or not present go to the judge endpoint; its calls are ProviderCalls with their own purpose."""

import pytest

from generation.models import ProviderCall
from psychometrics import extraction, runs
from psychometrics.services import PsychError

from .helpers import load_library

pytestmark = pytest.mark.django_db


def test_chain_validation_puts_llm_last():
    assert extraction.validate_chain(["number", "llm"]) == ["number", "llm"]
    with pytest.raises(ValueError, match="last"):
        extraction.validate_chain(["llm", "number"])
    # the rule chain ignores the judge step; the run sends those answers to the judge afterwards
    options = [{"code": "0", "label": "no", "value": 0}, {"code": "1", "label": "yes", "value": 1}]
    assert extraction.extract("maybe", options, ["number", "llm"]).status == "not_present"
    prompt = extraction.judge_messages("Cats are nice.", options, "Well, kind of positive")
    assert "Cats are nice." in prompt[-1]["content"] and "1 yes" in prompt[-1]["content"]
    assert extraction.read_judgement("1", options).value == 1
    assert extraction.read_judgement("NONE", options).status == "not_present"


def test_judge_resolves_only_what_the_rules_left_open(study, make_endpoint, fake_provider):
    asi, _ = load_library()
    model = make_endpoint(study, name="subject", model_id="subject-model")
    judge = make_endpoint(study, name="judge", model_id="judge-model")
    items = list(asi.items.order_by("position"))
    # subject model: item 1 a clear number, item 2 a tie, item 3 no option, the rest a clear number
    fake_provider.script([{"text": "Both 1 and 4 feel right."}], match=f"Statement: {items[1].text}\n")
    fake_provider.script([{"text": "It depends on the situation."}], match=f"Statement: {items[2].text}\n")
    # one judge answer per open answer, matched by the answer quoted in the judge's prompt (the two judge calls
    # may run concurrently, so their order is not fixed)
    fake_provider.script([{"text": "3"}], match="Reply: Both 1 and 4 feel right.")
    fake_provider.script([{"text": "NONE"}], match="Reply: It depends on the situation.")
    fake_provider.default = {"text": "2"}
    run = runs.create_run(
        study,
        name="judged",
        instrument=asi,
        context_set=None,
        endpoints=[model],
        extractors=["number", "llm"],
        judge_endpoint=judge,
    )
    assert runs.export_run_file(run)["extraction"]["judge_endpoint"] == "judge"
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    judged = {r.item.item_id: r for r in run.responses.select_related("item") if r.extraction_method == "llm"}
    assert set(judged) == {items[1].item_id, items[2].item_id}
    tie, none = judged[items[1].item_id], judged[items[2].item_id]
    assert tie.extraction == "ok" and tie.value == 3 and tie.raw_text == "Both 1 and 4 feel right."
    assert none.extraction == "not_present" and none.value is None
    calls = ProviderCall.objects.filter(purpose="psychometrics_judge")
    assert calls.count() == 2 and set(calls.values_list("model", flat=True)) == {"judge-model"}
    assert {c.unit_ref for c in calls} == {f"response-judge:{tie.pk}", f"response-judge:{none.pk}"}
    assert ProviderCall.objects.filter(purpose="psychometrics").count() == 22
    runs.start(run)  # nothing is judged twice
    assert ProviderCall.objects.filter(purpose="psychometrics_judge").count() == 2


def test_llm_step_needs_a_judge_endpoint_of_the_study(study, roles, make_endpoint):
    asi, _ = load_library()
    model = make_endpoint(study, name="subject")
    with pytest.raises(PsychError, match="judge endpoint"):
        runs.create_run(
            study, name="x", instrument=asi, context_set=None, endpoints=[model], extractors=["number", "llm"]
        )
    foreign = make_endpoint(roles["b"], name="foreign")
    with pytest.raises(PsychError, match=r"No endpoint \d+ in this study"):
        runs.create_run(
            study,
            name="x",
            instrument=asi,
            context_set=None,
            endpoints=[model],
            extractors=["number", "llm"],
            judge_endpoint=foreign,
        )
