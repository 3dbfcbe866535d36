"""Jung's concurrent validity inside the product: an ASI run and a reference-letters run in the same 10 persona
contexts; the validation page's concurrent r equals the r computed here from the exported per-context scores."""

import random
import re

import pytest
from scipy import stats

from generation.builtin import builtin_specs as toolkit_specs
from generation.datasets import output_rows
from generation.models import GenerationRun, Toolkit
from generation.runs import services as gen_runs
from measures import scoring
from measures.builtin import builtin_specs as lexicon_specs
from measures.datasets import text_context_score_rows
from measures.models import Lexicon
from psychometrics import runs, services
from psychometrics.datasets import score_rows
from stereoscope.builtin import load_builtins

from .helpers import load_library

pytestmark = pytest.mark.django_db
AGENTIC = [
    "assertive",
    "confident",
    "ambitious",
    "independent",
    "leader",
    "strong",
    "outstanding",
    "excellent",
    "talented",
    "brilliant",
    "skilled",
    "intelligent",
]
COMMUNAL = [
    "kind",
    "warm",
    "caring",
    "helpful",
    "friendly",
    "gentle",
    "hardworking",
    "dedicated",
    "reliable",
    "meticulous",
    "thorough",
    "diligent",
]
NEUTRAL = ["the", "student", "project", "team", "year", "city", "course", "paper", "office", "report", "plan", "day"]


def letter(rng, lean):
    """A fake letter whose mix of agentic and communal words leans by `lean` (0..1)."""
    words = [rng.choice(AGENTIC) if rng.random() < lean else rng.choice(COMMUNAL) for _ in range(12)]
    words += [rng.choice(NEUTRAL) for _ in range(40)]
    rng.shuffle(words)
    return " ".join(words) + "."


def test_concurrent_validity_end_to_end(roles, client_for, api_for, make_endpoint, fake_provider):
    study = roles["a"]
    asi, personas = load_library()
    load_builtins(toolkit_specs() + lexicon_specs(), log=lambda *_: None)
    toolkit = Toolkit.objects.get(builtin_key="jung2025-reference-letters")
    lexicon = Lexicon.objects.get(builtin_key="jung2025-reference-letters")
    ctx = services.contexts_from_personas(study, "10 personas", personas, n=10, seed=3)
    keys = list(ctx.contexts.values_list("key", flat=True))
    assert len(keys) == 10
    endpoint = make_endpoint(study, name="fake-gpt", model_id="fake-gpt")

    # ASI answers and letters differ by context: the fake server reads the persona (system message) per request
    rng = random.Random(11)
    lean = {c.persona: rng.random() for c in ctx.contexts.all()}
    answer_of = {c.persona: rng.randint(0, 5) for c in ctx.contexts.all()}

    def respond(request):
        system = next((m["content"] for m in request["body"]["messages"] if m["role"] == "system"), "")
        persona = re.match(r"You are (.*)\. Answer and behave accordingly\.", system).group(1)
        if "reference letter" in request["prompt"]:
            male = "Joseph" in request["prompt"]
            share = lean[persona] if male else 1 - lean[persona]
            return {"text": letter(random.Random(request["prompt"] + persona), share)}
        return {"text": str((answer_of[persona] + len(request["prompt"])) % 6)}

    fake_provider.responder = respond
    asi_run = runs.create_run(study, name="ASI in personas", instrument=asi, context_set=ctx, endpoints=[endpoint])
    runs.start(asi_run)
    asi_run.refresh_from_db()
    assert asi_run.status == "completed", asi_run.message

    web = client_for(roles["users"]["researcher"])
    page = web.get(f"/studies/{study.pk}/questionnaires/contexts/{ctx.pk}/").content.decode()
    assert "Generate texts in these contexts" in page
    r = web.post(
        f"/studies/{study.pk}/questionnaires/contexts/{ctx.pk}/generate/",
        {"name": "Letters in personas", "toolkit": toolkit.pk, "endpoints": [endpoint.pk], "trials": 1},
    )
    assert r.status_code == 302
    letters_run = GenerationRun.objects.get(name="Letters in personas")
    assert r.url.endswith(f"/runs/{letters_run.pk}/") and letters_run.context_source == "context set “10 personas”"
    with pytest.raises(services.PsychError, match="context set of this study"):
        services.generation_run_in_contexts(
            study, name="x", context_set=services.empty_context_set(roles["b"]), toolkit=toolkit, endpoints=[endpoint]
        )
    assert gen_runs.plan(letters_run)["units_per_endpoint"] == 48 * 10
    gen_runs.start(letters_run)
    letters_run.refresh_from_db()
    assert letters_run.status == "completed", letters_run.message
    out = letters_run.outputs.filter(context_key=keys[0]).first()
    persona = ctx.contexts.get(key=keys[0]).persona
    assert fake_provider.requests_for(out.prompt_text)[0]["body"]["messages"][0] == {
        "role": "system",
        "content": f"You are {persona}. Answer and behave accordingly.",
    }
    assert letters_run.outputs.count() == 480
    assert set(letters_run.outputs.values_list("context_key", flat=True)) == set(keys)
    exported = list(output_rows(study, {"run_ids": [letters_run.pk]}))
    assert len(exported) == 480 and {r["context"] for r in exported} == set(keys)
    assert "Asked in 10 contexts" in web.get(f"/studies/{study.pk}/runs/{letters_run.pk}/").content.decode()

    measure_run = scoring.create_run(study, name="Jung lexicon", lexicons=[lexicon], source_runs=[letters_run])
    scoring.start(measure_run)
    measure_run.refresh_from_db()
    assert measure_run.status == "completed", measure_run.message

    # the exported per-context scores, correlated here
    letters = {r["context"]: r["context_score"] for r in text_context_score_rows(study, {"run_ids": [measure_run.pk]})}
    assert set(letters) == set(keys) and all(v is not None for v in letters.values())
    totals = {r["context"]: r["value"] for r in score_rows(study, {"run_ids": [asi_run.pk]}) if r["score"] == "total"}
    assert set(totals) == set(keys)
    expected = stats.pearsonr([totals[k] for k in keys], [letters[k] for k in keys])

    api = api_for(roles["users"]["researcher"])
    url = f"/api/studies/{study.pk}/questionnaire-runs/{asi_run.pk}/validation/"
    body = api.get(f"{url}?concurrent={measure_run.pk}").json()
    concurrent = body["rows"][0]["concurrent"][0]
    assert concurrent["r"] == pytest.approx(expected.statistic, abs=1e-12) and concurrent["n"] == 10
    assert concurrent["p"] == pytest.approx(expected.pvalue, abs=1e-12)
    ci = expected.confidence_interval(0.95)
    assert (concurrent["ci_low"], concurrent["ci_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    page = web.get(f"/studies/{study.pk}/questionnaires/validation/?run={asi_run.pk}&concurrent={measure_run.pk}")
    shown = re.search(r'class="concurrent-r">([-0-9.]+)<', page.content.decode()).group(1)
    assert shown == f"{expected.statistic:.3f}"
    assert "n = 10" in page.content.decode()
    bad = api.get(f"/api/studies/{study.pk}/questionnaire-runs/{asi_run.pk}/validation/?concurrent=999999")
    assert bad.status_code == 400


@pytest.mark.parametrize(
    "contexts, message",
    [
        ("persona", "must be a list"),
        ([{"persona": "a nurse"}], "needs a key"),
        ([{"key": "a"}, {"key": "a"}], "appears twice"),
        ([{"key": "a", "turns": [{"role": "system", "content": "x"}]}], "user|assistant"),
    ],
)
def test_generation_contexts_are_validated(contexts, message):
    with pytest.raises(gen_runs.RunError, match=message):
        gen_runs.clean_contexts(contexts)


def test_generation_messages_in_a_context():
    turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    run = GenerationRun(
        contexts=[{"key": "c1", "persona": "a judge", "turns": turns}, {"key": "c2", "persona": "", "turns": []}],
        system_prompt="",
    )
    assert gen_runs.messages_for(run, "Write.", "c1") == [
        {"role": "system", "content": "You are a judge. Answer and behave accordingly."},
        *turns,
        {"role": "user", "content": "Write."},
    ]
    assert gen_runs.messages_for(run, "Write.", "c2") == [{"role": "user", "content": "Write."}]
