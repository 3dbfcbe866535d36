"""Questionnaire runs end to end against the fake provider server."""

import statistics

import pytest

from generation.models import ProviderCall
from psychometrics import reports, runs, services
from psychometrics.models import QuestionnaireRun, Response
from psychometrics.services import PsychError

from .helpers import ASI_LABELS, expected_value, load_library, script_asi

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(study, make_endpoint, fake_provider):
    asi, personas = load_library()
    ctx = services.contexts_from_personas(study, "20 personas", personas, n=20, seed=42)
    endpoint = make_endpoint(study, name="fake-gpt", model_id="fake-gpt", default_params={"temperature": 0})
    return {"asi": asi, "ctx": ctx, "endpoint": endpoint, "study": study, "fake": fake_provider}


def test_asi_end_to_end_20_personas_permuted_with_refusals(setup):
    asi, ctx, endpoint, study, fake = setup["asi"], setup["ctx"], setup["endpoint"], setup["study"], setup["fake"]
    assert ctx.contexts.count() == 20
    script_asi(fake, asi)
    run = runs.create_run(
        study,
        name="ASI permuted",
        instrument=asi,
        context_set=ctx,
        endpoints=[endpoint],
        template_key="jung2025",
        option_order="permuted",
        order_seed=5,
        extractors=["number"],
        audit_per_model=30,
    )
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    responses = list(run.responses.select_related("item", "context"))
    assert len(responses) == 22 * 20 and ProviderCall.objects.filter(purpose="psychometrics").count() == 440
    # every prompt is a fresh conversation: system persona, then the item
    r0 = responses[0]
    assert r0.messages[0] == {
        "role": "system",
        "content": f"You are {r0.context.persona}. Answer and behave accordingly.",
    }
    assert len(r0.messages) == 2
    # the permutation is stored, differs between prompts, and the answer maps back to the original option
    assert len({tuple(r.permutation) for r in responses}) > 50
    refused = 0
    for r in responses:
        expected = expected_value(r.messages, r.raw_text)
        if expected is None:
            refused += 1
            assert r.extraction == "refused" and r.value is None and r.raw_text
        else:
            assert r.extraction == "ok" and r.value == expected, (r.raw_text, r.options)
    assert refused == 440 // 9
    # report: recoded scores, missing counts and extraction results, computed here independently
    report = reports.run_report(run)
    model = report["models"][0]
    assert model["extraction"]["refused"] == refused and model["extraction"]["ok"] == 440 - refused
    assert model["extraction"]["missing"] == refused
    reverse = {"3", "6", "7", "13", "18", "21"}
    by_context = {}
    for r in responses:
        if r.value is not None:
            by_context.setdefault(r.context.key, []).append(5 - r.value if r.item.item_id in reverse else r.value)
    totals = {k: sum(v) / len(v) for k, v in by_context.items() if len(v) >= 11}
    subs = {}
    for r in responses:
        if r.value is not None:
            subs.setdefault((r.item.subscale, r.context.key), []).append(
                5 - r.value if r.item.item_id in reverse else r.value
            )
    for name in ("HS", "BS"):  # a subscale score needs ≥ 50% of its 11 items (6)
        means = [sum(v) / len(v) for (s, _), v in subs.items() if s == name and len(v) >= 6]
        assert model["analysis"]["descriptives"][name]["mean"] == pytest.approx(statistics.mean(means))
    assert model["analysis"]["descriptives"]["total"]["mean"] == pytest.approx(statistics.mean(totals.values()))
    assert model["analysis"]["descriptives"]["total"]["n"] == len(totals)
    assert model["analysis"]["missing"]["cells"] == refused
    assert run.responses.filter(audit_sampled=True).count() == 30
    scores = reports.scores_table(run)
    assert len(scores) == 20 and all(s["model"] == "fake-gpt" for s in scores)


def test_resume_only_runs_missing_units(setup):
    asi, ctx, endpoint, study, fake = setup["asi"], setup["ctx"], setup["endpoint"], setup["study"], setup["fake"]
    fake.default = {"text": "2"}
    run = runs.create_run(study, name="R", instrument=asi, context_set=ctx, endpoints=[endpoint])
    runs.materialize(run)
    Response.objects.filter(run=run).exclude(pk__in=list(run.responses.values_list("pk", flat=True)[:100])).update(
        status="done", value=2, extraction="ok"
    )
    calls = len(fake.requests)
    runs.start(run)
    assert len(fake.requests) - calls == 100
    runs.start(run)  # nothing pending: no calls
    assert len(fake.requests) - calls == 100
    assert runs.materialize(run) == 0


def test_failed_units_recorded_and_retried(setup):
    asi, endpoint, study, fake = setup["asi"], setup["endpoint"], setup["study"], setup["fake"]
    item = asi.items.get(item_id="5")
    fake.default = {"text": "1"}
    fake.script([{"status": 400, "message": "bad"}] * 3, match=item.text)
    one = services.import_contexts(
        study, "three", '{"persona": "a nurse"}\n{"persona": "a pilot"}\n{"persona": "a cook"}\n'
    )
    run = runs.create_run(study, name="F", instrument=asi, context_set=one, endpoints=[endpoint])
    runs.start(run)
    assert run.responses.filter(status="failed").count() == 3
    runs.retry_failed(run)
    assert run.responses.filter(status="failed").count() == 0 and run.responses.filter(value=1).count() == 66


def test_run_validation_messages(setup, roles):
    asi, ctx, endpoint, study = setup["asi"], setup["ctx"], setup["endpoint"], setup["study"]
    with pytest.raises(PsychError, match="Choose at least one model endpoint"):
        runs.create_run(study, name="x", instrument=asi, context_set=ctx, endpoints=[])
    with pytest.raises(PsychError, match="cannot change"):
        runs.create_run(
            study,
            name="x",
            instrument=asi,
            context_set=ctx,
            endpoints=[endpoint],
            template_key="fang2025",
            option_order="permuted",
        )
    with pytest.raises(PsychError, match="states a 1–7 scale"):
        runs.create_run(study, name="x", instrument=asi, context_set=ctx, endpoints=[endpoint], template_key="fang2025")
    with pytest.raises(PsychError, match="Unknown extractor"):
        runs.create_run(study, name="x", instrument=asi, context_set=ctx, endpoints=[endpoint], extractors=["magic"])
    with pytest.raises(PsychError, match="Repetitions"):
        runs.create_run(study, name="x", instrument=asi, context_set=ctx, endpoints=[endpoint], repetitions=0)
    bare = services.import_contexts(
        study, "turns", '{"turns": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hey"}]}\n'
    )
    with pytest.raises(PsychError, match="needs a persona"):
        runs.create_run(
            study, name="x", instrument=asi, context_set=bare, endpoints=[endpoint], template_key="rupsycho_json"
        )
    other = services.empty_context_set(roles["b"])
    with pytest.raises(PsychError, match=r"No context set \d+ in this study"):
        runs.create_run(study, name="x", instrument=asi, context_set=other, endpoints=[endpoint])
    assert QuestionnaireRun.objects.count() == 0


def test_run_file_round_trip_and_prior_turns(setup):
    asi, endpoint, study, fake = setup["asi"], setup["endpoint"], setup["study"], setup["fake"]
    fake.default = {"text": '{"answer": "agree somewhat"}'}
    ctx = services.import_contexts(
        study,
        "arena",
        '{"key": "c1", "conversation": [{"role": "user", "content": "Write a sonnet about cats."}, '
        '{"role": "assistant", "content": "You are my love"}]}\n',
    )
    run = runs.create_run(
        study,
        name="Arena",
        instrument=asi,
        context_set=ctx,
        endpoints=[endpoint],
        template_key="custom",
        custom_user="{statement}\n{options}",
        option_order="reversed",
        extractors=["json", "number"],
    )
    data = runs.export_run_file(run)
    again = runs.create_run_from_file(study, data, name="Arena again")
    assert runs.export_run_file(again) == {**data, "name": "Arena again"}
    runs.start(again)
    r = again.responses.first()
    assert [m["role"] for m in r.messages] == ["user", "assistant", "user"]
    assert r.messages[-1]["content"].endswith(
        "0 agree strongly\n1 agree somewhat\n2 agree slightly\n3 disagree slightly\n"
        "4 disagree somewhat\n5 disagree strongly"
    )
    assert set(again.responses.values_list("value", flat=True)) == {float(ASI_LABELS.index("agree somewhat"))}
    with pytest.raises(PsychError, match="No context set"):
        runs.create_run_from_file(study, {**data, "context_set": "nope"})
    with pytest.raises(PsychError, match="Not a questionnaire run file"):
        runs.create_run_from_file(study, {"name": "x"})


def test_compare_runs_alternate_form(setup):
    asi, ctx, endpoint, study, fake = setup["asi"], setup["ctx"], setup["endpoint"], setup["study"], setup["fake"]
    from psychometrics.models import Instrument

    alt = Instrument.objects.get(builtin_key="asi-alternate-jung2025")
    script_asi(fake, asi, seed=1)
    a = runs.create_run(study, name="A", instrument=asi, context_set=ctx, endpoints=[endpoint], extractors=["number"])
    runs.start(a)
    fake.reset()
    fake.default = {"text": "3"}
    b = runs.create_run(study, name="B", instrument=alt, context_set=ctx, endpoints=[endpoint])
    runs.start(b)
    out = reports.compare_runs(a, b, "alternate_form")
    total = [r for r in out["rows"] if r["score"] == "total"][0]
    assert total["n"] == 20 and total["r"] is None  # form B is constant: r undefined, reported as null
    out = reports.compare_runs(a, a, "option_order")
    total = [r for r in out["rows"] if r["score"] == "total"][0]
    assert total["r"] == pytest.approx(1.0) and total["df"] == total["n"] - 2 and total["rating"] == "++"


def test_jung_validation_gate_with_alternate_order_and_convergent_runs(setup, make_endpoint):
    """Sequential calls (concurrency 1) make the i-th answer per item belong to the i-th context, so the same
    scripted levels reach the same contexts in every run."""
    import random as _random

    from psychometrics.models import Instrument

    asi, study, fake = setup["asi"], setup["study"], setup["fake"]
    ctx = services.import_contexts(
        study, "twenty", "".join(f'{{"key": "k{i:02d}", "persona": "person {i}"}}\n' for i in range(20))
    )
    ep = make_endpoint(study, name="seq", model_id="seq-model", max_concurrency=1)
    alt = Instrument.objects.get(builtin_key="asi-alternate-jung2025")
    mss = Instrument.objects.get(builtin_key="mss-jung2025")
    rng = _random.Random(3)
    levels = [rng.randint(0, 5) for _ in range(20)]

    def answers(item, reverse_codes=False, lo=0, hi=5):
        out = []
        for level in levels:
            v = max(lo, min(hi, level + rng.choice([-1, 0, 0, 1]) + lo))
            v = lo + hi - v if item.reverse else v
            out.append({"text": str(lo + hi - v if reverse_codes else v)})
        return out

    def script(instrument, marker, **kw):
        fake.reset()
        for item in instrument.items.all():
            fake.script(answers(item, **kw), match=f"{marker}{item.text}\n")

    script(asi, "Statement: ")
    main = runs.create_run(study, name="main", instrument=asi, context_set=ctx, endpoints=[ep])
    runs.start(main)
    script(alt, "Statement: ")
    alt_run = runs.create_run(study, name="alt", instrument=alt, context_set=ctx, endpoints=[ep])
    runs.start(alt_run)
    script(asi, "Statement: ", reverse_codes=True)
    order_run = runs.create_run(
        study, name="order", instrument=asi, context_set=ctx, endpoints=[ep], option_order="reversed"
    )
    runs.start(order_run)
    script(mss, "Statement: ", lo=1, hi=5)
    conv = runs.create_run(study, name="mss", instrument=mss, context_set=ctx, endpoints=[ep])
    runs.start(conv)

    summary = reports.validation_summary(main, alt_run, order_run, conv)
    row = summary["rows"][0]
    assert row["internal_consistency"] in ("+", "++") and row["stratified_alpha"] > 0.7
    assert row["alternate_form"]["r"] > 0.7 and row["option_order"]["r"] > 0.7 and row["gate"]
    assert row["convergent"] is not None and row["convergent"]["df"] == 18
    ungated = reports.validation_summary(main, None, order_run, conv)["rows"][0]
    assert not ungated["gate"] and ungated["convergent"] is None and ungated["factorial"] is None and ungated["note"]


def test_permutations_do_not_depend_on_database_ids(setup, make_endpoint):
    """The same run in another installation (other primary keys) shows the same prompts and option orders."""
    from stereoscope.models import Study

    asi, ctx, endpoint, study = setup["asi"], setup["ctx"], setup["endpoint"], setup["study"]
    first = runs.create_run(
        study, name="A", instrument=asi, context_set=ctx, endpoints=[endpoint], option_order="permuted", order_seed=11
    )
    runs.materialize(first)
    other = Study.objects.create(name="Elsewhere")
    for n in range(3):  # shift the primary keys of the second installation's endpoints and contexts
        make_endpoint(other, name=f"filler-{n}")
    _, personas = load_library()
    ctx2 = services.contexts_from_personas(other, "20 personas", personas, n=20, seed=42)
    twin = make_endpoint(other, name="fake-gpt", model_id="fake-gpt", default_params={"temperature": 0})
    assert twin.pk != endpoint.pk
    second = runs.create_run(
        other, name="A", instrument=asi, context_set=ctx2, endpoints=[twin], option_order="permuted", order_seed=11
    )
    runs.materialize(second)

    def rendered(run):
        return sorted(
            (r.context.key, r.item.item_id, r.repetition, tuple(r.permutation), str(r.messages))
            for r in run.responses.select_related("context", "item")
        )

    assert rendered(first) == rendered(second)


@pytest.mark.parametrize(
    "content, filename, said",
    [
        (b'{"key": "a"}\n', "p.jsonl", "row 1: needs a non-empty “text” (or “persona”)"),
        (b'{"text": "  "}\n', "p.jsonl", "row 1, text: needs a non-empty “text” (or “persona”)"),
        (b'{"text": 3}\n', "p.jsonl", "row 1, text: must be text"),
        (b'{"text": "a", "key": "k"}\n{"text": "b", "key": "k"}\n', "p.jsonl", "row 2: duplicate key 'k'"),
        ('{"text": "a", "key": "'.encode() + b"k" * 201 + b'"}\n', "p.jsonl", "row 1, key: is longer than 200"),
        (b"text,key\na,1,extra\n", "p.csv", "Row 2 has more cells than the header has columns"),
    ],
)
def test_bad_persona_files_are_refused_with_the_row_and_field(study, content, filename, said):
    from psychometrics.models import PersonaSet

    with pytest.raises(services.PsychError) as caught:
        services.import_personas(study, "P", content, filename)
    assert said in str(caught.value)
    assert not PersonaSet.objects.filter(study=study).exists()


@pytest.mark.parametrize(
    "content, said",
    [
        (b'{"key": "a"}\n', "row 1: a context needs a persona or at least one prior turn"),
        (b'{"turns": "hi"}\n', "row 1, turns: “turns” must be a list"),
        (b'{"turns": [{"role": "system", "content": "x"}]}\n', "row 1, turns[0].role: each turn needs role"),
        (b'{"turns": [{"role": "user", "content": 5}]}\n', "row 1, turns[0].content: each turn needs a text content"),
        (b'{"persona": 1}\n', "row 1, persona: “persona” must be text"),
        (b'{"persona": "a", "key": 1}\n{"persona": "b", "key": "1"}\n', "row 2: duplicate key '1'"),
        (b"[1]\n", "Line 1 must be a JSON object"),
    ],
)
def test_bad_context_files_are_refused_with_the_row_and_field(study, content, said):
    from psychometrics.models import ContextSet

    with pytest.raises(services.PsychError) as caught:
        services.import_contexts(study, "C", content, "c.jsonl")
    assert said in str(caught.value)
    assert not ContextSet.objects.filter(study=study).exists()


def test_every_bad_context_row_is_named_not_only_the_first(study):
    content = b'{"key": "a"}\n{"persona": 2}\n{"persona": "ok"}\n{"turns": [{"role": "bot", "content": "x"}]}\n'
    with pytest.raises(services.PsychError) as caught:
        services.import_contexts(study, "C", content, "c.jsonl")
    said = str(caught.value)
    assert "row 2, persona" in said and "row 4, turns[0].role" in said
