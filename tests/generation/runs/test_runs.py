"""Generation runs end to end with eager tasks: plan, start, failures recorded, cancel, resume, retry."""

import pytest

from generation.models import GenerationRun, Output, ProviderCall
from generation.runs import services as runs

pytestmark = pytest.mark.django_db


def test_plan_then_run_fills_every_unit_once(study, make_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(
        study,
        2,
        slots={"name": ["Kelly", "Joseph"], "age": ["20", "40"]},
        texts=["Write a letter for {name}, aged {age}.", "A story without slots."],
    )
    a = make_endpoint(study, default_params={"max_tokens": 100}, input_price_per_mtok=1, output_price_per_mtok=2)
    b = make_endpoint(study, "anthropic")
    run = runs.create_run(
        study,
        name="r1",
        toolkit=toolkit,
        endpoints=[a, b],
        trials=3,
        param_overrides={"temperature": 0.9},
        system_prompt="Be brief.",
    )
    toolkit.refresh_from_db()
    assert toolkit.locked
    plan = runs.plan(run)
    assert plan["prompts"] == 5 and plan["units_per_endpoint"] == 15 and plan["totals"]["calls"] == 30
    assert plan["sample"][0]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert {s["prompt"] for s in plan["sample"]} >= {"Write a letter for Kelly, aged 20.", "A story without slots."}
    row_a = next(r for r in plan["endpoints"] if r["endpoint"] == a)
    assert row_a["output_tokens"] == 15 * 100 and row_a["params"] == {"max_tokens": 100, "temperature": 0.9}
    assert float(row_a["cost_usd"]) == pytest.approx((row_a["input_tokens"] * 1 + 1500 * 2) / 1e6, abs=1e-6)
    assert not Output.objects.filter(run=run).exists()  # a dry run spends and stores nothing

    runs.start(run)  # eager: executes here
    run.refresh_from_db()
    assert run.status == "completed" and not run.lease_token
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 30 and outputs.filter(status="done").count() == 30
    kelly = outputs.get(
        endpoint=a, variant_key__contains="Kelly", variant_key__endswith="", slot_values__age="40", trial=2
    )
    assert kelly.prompt_text == "Write a letter for Kelly, aged 40." and kelly.text.endswith(kelly.prompt_text)
    assert kelly.cost_usd is not None and kelly.provenance["params"]["temperature"] == 0.9
    # Both endpoints send this prompt, in no fixed order; the Anthropic adapter moves the system prompt to `system`.
    sent = fake_provider.requests_for("Kelly, aged 40")
    by_model = {}
    for request in sent:
        by_model.setdefault(request["model"], []).append(request["body"])
    assert set(by_model) == {a.model_id, b.model_id} and all(len(v) == 3 for v in by_model.values())
    for body in by_model[a.model_id]:
        assert body["temperature"] == 0.9 and body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Write a letter for Kelly, aged 40."},
        ]
    for body in by_model[b.model_id]:
        assert (
            body["temperature"] == 0.9
            and body["system"] == "Be brief."
            and body["messages"] == [{"role": "user", "content": "Write a letter for Kelly, aged 40."}]
        )
    assert ProviderCall.objects.filter(output__run=run, purpose="generation").count() == 30
    totals = runs.counts(run)
    assert totals["overall"]["done"] == 30 and totals["overall"]["input_tokens"] > 0
    assert {row["endpoint__name"] for row in totals["per_endpoint"]} == {a.name, b.name}
    # starting again neither duplicates nor re-calls anything
    before = len(fake_provider.requests)
    runs.resume(run)
    assert Output.objects.filter(run=run).count() == 30 and len(fake_provider.requests) == before


def test_failures_are_recorded_and_retry_reruns_only_them(study, make_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 4)
    endpoint = make_endpoint(study, max_attempts=2)
    fake_provider.script([{"status": 500}, {"status": 500}], match="item 3")
    fake_provider.script([{"text": "cut", "finish_reason": "length"}], match="item 4")
    run = runs.create_run(study, name="r", toolkit=toolkit, endpoints=[endpoint], trials=1)
    runs.start(run)
    run.refresh_from_db()
    failed = Output.objects.get(run=run, item__number=3)
    assert failed.status == "failed" and "Gave up after 2 attempts" in failed.error and "HTTP 500" in failed.error
    assert run.status == "completed" and "1 units failed" in run.message
    truncated = Output.objects.get(run=run, item__number=4)
    assert truncated.status == "done" and truncated.finish_reason == "length" and "Truncated" in truncated.error
    before = len(fake_provider.requests)
    runs.retry_failed(run)
    assert len(fake_provider.requests) == before + 1  # only the failed unit was called again
    failed.refresh_from_db()
    assert failed.status == "done" and failed.error == ""
    assert ProviderCall.objects.filter(output=failed).count() == 3
    with pytest.raises(runs.RunError, match="No failed units"):
        runs.retry_failed(run)


def test_cancel_before_and_during(study, make_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 30)
    endpoint = make_endpoint(study, max_concurrency=1)
    run = runs.create_run(study, name="c", toolkit=toolkit, endpoints=[endpoint])
    runs.cancel(run)
    assert run.status == "cancelled"
    fake_provider.default_delay = 0.05
    original = runs.OutputSink.on_success_many
    seen = []

    def on_success_many(self, pairs):  # request cancellation once three units are in
        original(self, pairs)
        seen.extend(pairs)
        if len(seen) >= 3:
            GenerationRun.objects.filter(pk=run.pk).update(cancel_requested=True)

    runs.OutputSink.on_success_many = on_success_many
    try:
        runs.resume(run)
    finally:
        runs.OutputSink.on_success_many = original
    run.refresh_from_db()
    done = Output.objects.filter(run=run, status="done").count()
    assert run.status == "cancelled" and 3 <= done < 30
    runs.resume(run)
    run.refresh_from_db()
    assert run.status == "completed" and Output.objects.filter(run=run, status="done").count() == 30


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"name": ""}, "name"),
        ({"trials": 0}, "between 1"),
        ({"trials": "many"}, "whole number"),
        ({"endpoints": []}, "at least one"),
        ({"param_overrides": "{not json"}, "JSON object"),
        ({"param_overrides": {"temprature": 1}}, "Unknown parameter"),
    ],
)
def test_bad_run_input_is_rejected_and_nothing_saved(study, make_endpoint, make_toolkit, kwargs, message):
    toolkit = make_toolkit(study, 1)
    args = {"name": "x", "toolkit": toolkit, "endpoints": [make_endpoint(study)], "trials": 1, **kwargs}
    with pytest.raises(runs.RunError, match=message):
        runs.create_run(study, **args)
    assert not GenerationRun.objects.exists()


def test_unknown_slot_and_foreign_endpoint(study, make_endpoint, make_toolkit):
    from stereoscope.models import Study

    toolkit = make_toolkit(study, 1, texts=["Hello {nobody}."])
    with pytest.raises(runs.RunError, match="cannot be expanded"):
        runs.create_run(study, name="x", toolkit=toolkit, endpoints=[make_endpoint(study)])
    other = Study.objects.create(name="other")
    with pytest.raises(runs.RunError, match=r"No endpoint \d+ in this study"):
        runs.create_run(study, name="x", toolkit=make_toolkit(study, 1), endpoints=[make_endpoint(other)])


def test_nul_characters_in_an_answer_are_dropped_before_saving(study, make_endpoint, make_toolkit, fake_provider):
    """A model may answer with NUL characters; PostgreSQL refuses them in text and JSON columns. The answer is kept
    without them (on every database), with its raw response, and the unit is done."""
    toolkit = make_toolkit(study, 1, texts=["Tell a story about a nurse."])
    openai_endpoint, anthropic_endpoint = make_endpoint(study), make_endpoint(study, "anthropic")
    fake_provider.script([{"text": "Once\x00 upon\x00 a time."}] * 2, match="nurse")
    run = runs.create_run(study, name="nul", toolkit=toolkit, endpoints=[openai_endpoint, anthropic_endpoint])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 2 and all(o.text == "Once upon a time." for o in outputs)
    for call in ProviderCall.objects.filter(output__run=run):
        assert "\x00" not in str(call.raw_response) and "Once upon a time." in str(call.raw_response)


def test_materialize_writes_every_unit_in_one_statement_and_is_idempotent(study, make_endpoint, make_toolkit):
    """Starting a run creates its pending outputs with one prepared INSERT (not one per few dozen rows: the start
    is part of a run's time), with the columns' defaults, and leaves existing units alone."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    toolkit = make_toolkit(study, 30, slots={"name": ["Kelly", "Joseph"]}, texts=["Letter for {name}."] * 30)
    a, b = make_endpoint(study), make_endpoint(study)
    run = runs.create_run(study, name="many", toolkit=toolkit, endpoints=[a, b], trials=5)
    with CaptureQueriesContext(connection) as queries:
        assert runs.materialize(run) == 30 * 2 * 2 * 5
    inserts = [q["sql"] for q in queries.captured_queries if "INSERT" in q["sql"].upper()]
    assert len(inserts) == 1, inserts[:3]
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 600 and outputs.filter(status="pending", text="", error="").count() == 600
    first = outputs.get(endpoint=b, trial=5, slot_values={"name": "Joseph"}, item__number=30)
    assert first.prompt_text == "Letter for Joseph." and first.model_name == b.model_id and first.created_at
    assert first.study_id == study.pk and first.provenance == {}
    outputs.filter(pk=first.pk).update(status="done", text="kept")
    assert runs.materialize(run) == 600  # again: nothing new, nothing overwritten
    assert outputs.count() == 600 and outputs.get(pk=first.pk).text == "kept"
