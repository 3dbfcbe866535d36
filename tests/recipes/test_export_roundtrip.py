"""Must show: the recipe of a study built through the services, applied to a second empty study, rebuilds it —
byte-identical rendered prompts and the same judge assignments and batch orders."""

import pytest

from recipes import services
from recipes.exporting import export_recipe
from recipes.loader import dump, load


def build_study(fake_provider):
    from annotation.services import import_codebook
    from generation.runs import services as runs
    from generation.runs.endpoint_services import save_endpoint
    from generation.toolkits.file_format import create_toolkit, validate_data
    from judging import rounds
    from judging.models import JudgeTemplate
    from measures import scoring
    from measures.models import Lexicon
    from measures.services import create_lexicon, validate_lexicon_data
    from psychometrics import runs as questionnaire_runs
    from psychometrics.services import contexts_from_personas, create_instrument, generate_personas
    from stereoscope.builtin import load_builtins
    from stereoscope.services import create_study
    from tests.generation.runs.conftest import approved_connection

    from .conftest import BASE

    load_builtins(log=lambda *_: None)
    study = create_study(name="Built in the browser", created_by=None)
    toolkit = create_toolkit(study, validate_data(BASE["toolkits"][0]))
    endpoints = [
        save_endpoint(
            study,
            {
                "name": name,
                "provider": "openai_compatible",
                "model_id": f"model-{name}",
                "connection": approved_connection(
                    "openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider"
                ).name,
                "default_params": {"temperature": 0.5},
                "input_price_per_mtok": "2.5",
                "max_concurrency": 4,
                "max_attempts": 2,
                "backoff_base_s": 0.05,
            },
        )
        for name in ("alpha", "beta", "gamma")
    ]
    run = runs.create_run(study, name="Stories", toolkit=toolkit, endpoints=endpoints, trials=3)
    runs.run_foreground(run)
    template = JudgeTemplate.objects.get(builtin_key="structured-json-binary")
    for policy, k in (("rotation", None), ("k_of_n", 1)):
        rounds.create_round(
            study,
            name=f"Judging {policy}",
            template=template,
            judges=endpoints,
            source_run=run,
            policy=policy,
            k=k,
            batch_size=2,
            seed=11,
        )
    instrument = create_instrument(study, INSTRUMENT)
    personas = generate_personas(
        study, "Titles", "{title} {surname}", {"title": ["Mr.", "Ms."], "surname": ["Kim", "Okafor"]}
    )
    contexts = contexts_from_personas(study, "Titles", personas)
    questionnaire_runs.create_run(
        study,
        name="Survey",
        instrument=instrument,
        context_set=contexts,
        endpoints=endpoints[:2],
        seeds=[3, 4],
        template_key="jung2025",
        option_order="permuted",
        order_seed=5,
    )
    builtin = Lexicon.objects.get(builtin_key="wan2023-categories")
    own = create_lexicon(study, validate_lexicon_data(LEXICON))
    scoring.create_run(study, name="Words", lexicons=[builtin, own], source_runs=[run], zero_policy="smooth")
    import_codebook(study, CODEBOOK)
    return study


CODEBOOK = {
    "name": "Story codes",
    "description": "",
    "codes": [
        {"name": "Care", "gender_tag": "F", "children": [{"name": "Protects others", "gender_tag": "F"}]},
        {"name": "Leadership", "gender_tag": "M"},
    ],
}
LEXICON = {
    "name": "Care words",
    "count_policy": "per_token",
    "categories": [
        {"key": "care", "name": "Care", "direction": "female", "mode": "prefix", "words": ["car", "nurtur"]}
    ],
}


INSTRUMENT = {
    "name": "Mini scale",
    "version": "1",
    "scale": {
        "min": 1,
        "max": 4,
        "labels": {"1": "disagree", "2": "rather disagree", "3": "rather agree", "4": "agree"},
    },
    "subscales": ["A"],
    "items": [
        {"id": "q1", "text": "Women are more caring than men.", "subscale": "A", "reverse": False},
        {"id": "q2", "text": "Men and women are equally good leaders.", "subscale": "A", "reverse": True},
    ],
}


def stable(out):
    return f"{out.endpoint.name}|{out.item.number}|{out.variant_key}|{out.trial}"


def snapshot(study):
    from generation.models import Output
    from judging import rounds
    from judging.models import JudgeRound

    prompts = sorted(
        (stable(o), o.prompt_text) for o in Output.objects.filter(study=study).select_related("endpoint", "item")
    )
    plans = {}
    for rnd in JudgeRound.objects.filter(study=study).order_by("name"):
        outputs, _ = rounds.eligible_outputs(rnd)
        by_id = {o.pk: o for o in outputs}
        plan = rounds.assignment(rnd, outputs)
        plans[rnd.name] = {
            "assignments": sorted((stable(by_id[pk]), judge) for pk, judge in plan.pairs()),
            "batches": [
                (n, judge, [stable(o) for o in chunk]) for n, judge, chunk in rounds.build_batches(rnd, outputs, plan)
            ],
            # the judge prompts themselves, story ids included
            "prompts": [
                rounds.render_batch(rnd, rnd.template, chunk)
                for _n, _judge, chunk in rounds.build_batches(rnd, outputs, plan)
            ],
        }
    from psychometrics import runs as questionnaire_runs
    from psychometrics.models import QuestionnaireRun, Response

    for run in QuestionnaireRun.objects.filter(study=study):
        questionnaire_runs.materialize(run)
    permutations = sorted(
        (r.endpoint.name, r.context.key, r.item.item_id, r.repetition, r.permutation, r.messages)
        for r in Response.objects.filter(run__study=study).select_related("endpoint", "context", "item")
    )
    return prompts, plans, permutations


@pytest.mark.django_db
def test_exported_recipe_rebuilds_the_study(fake_provider, monkeypatch):
    from generation.models import GenerationRun
    from generation.runs import services as runs
    from stereoscope.services import create_study

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    fake_provider.default = {"text": "Once upon a time.\n"}  # not numbered by arrival: the same in both studies
    first = build_study(fake_provider)
    text = dump(export_recipe(first))
    # a recipe names the connection, never the key, its variable or the host a researcher could redirect it to
    assert "sk-fake-secret-123" not in text and "FAKE_KEY_ENV" not in text and "connection: Fake provider" in text
    assert fake_provider.openai_base_url not in text
    assert "notes" not in load(text)  # everything of this study is carried
    second = create_study(name="Rebuilt elsewhere", created_by=None)
    outcome = services.apply(load(text), study=second)
    assert {c.action for c in outcome.changes} == {"create"}
    runs.run_foreground(GenerationRun.objects.get(study=second, name="Stories"))
    assert set(first.outputs.values_list("pk", flat=True)).isdisjoint(second.outputs.values_list("pk", flat=True))
    prompts_1, plans_1, permutations_1 = snapshot(first)
    prompts_2, plans_2, permutations_2 = snapshot(second)
    assert len(permutations_1) == 2 * 4 * 2 * 2  # endpoints × personas × items × repetitions
    assert len({tuple(p[4]) for p in permutations_1}) > 1  # permuted, not one fixed order
    assert permutations_1 == permutations_2
    assert len(prompts_1) == 2 * 2 * 3 * 3
    assert prompts_1 == prompts_2
    assert plans_1 and all(plan["batches"] for plan in plans_1.values())
    assert plans_1 == plans_2
    # exporting the rebuilt study gives the same recipe (up to the study's own name)
    assert [m["name"] for m in load(text)["measure_runs"]] == ["Words"]
    assert [c["name"] for c in load(text)["codebooks"][0]["codes"]] == ["Care", "Leadership"]
    assert {"name": "Care words"}.items() <= load(text)["lexicons"][1].items()
    again = export_recipe(second)
    again["study"] = export_recipe(first)["study"]
    assert dump(again) == text


@pytest.mark.django_db
def test_export_says_what_it_cannot_carry(recipe):
    from generation.models import GenerationRun

    study = services.apply(recipe).study
    GenerationRun.objects.create(study=study, name="Pasted answers", is_import=True)
    notes = export_recipe(study)["notes"]
    assert notes == [
        "The run “Pasted answers” holds imported outputs; a recipe does not carry them (import them again)."
    ]
    assert services.check(export_recipe(study)) == []


def assignment_plan(study):
    """A study's assignments by stable story identity: coder, queue position and mode."""
    from annotation.models import Assignment

    return sorted(
        (stable(a.output), a.coder.username, a.position, a.mode)
        for a in Assignment.objects.filter(study=study).select_related("output__endpoint", "output__item", "coder")
    )


@pytest.mark.django_db
def test_a_blind_sampled_coding_stage_round_trips(fake_provider, monkeypatch, make_user):
    """Must show: a study coded by 3 blind coders on a 15-story sample exports a recipe whose human stage says
    exactly that, and applying it elsewhere recreates the same assignment plan."""
    from collections import Counter

    from annotation.models import Assignment, Codebook
    from annotation.services import create_assignments, create_coding, outputs_of, set_assignment_status
    from generation.models import GenerationRun
    from generation.runs import services as runs
    from recipes import human
    from stereoscope.models import Membership
    from stereoscope.services import create_study

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    fake_provider.default = {"text": "Once upon a time.\n"}
    first = build_study(fake_provider)
    coders = [make_user(name) for name in ("cora", "dana", "eli")]
    for coder in coders:
        Membership.objects.create(study=first, user=coder, role="coder")
    codebook = Codebook.objects.get(study=first, name="Story codes")
    made = create_assignments(
        first,
        codebook,
        outputs=outputs_of(first).filter(status="done"),
        runs=[GenerationRun.objects.get(study=first, name="Stories")],
        coders=coders,
        k=2,
        strategy="stratified",
        seed=4,
        mode="blind",
        sample_size=15,
        sample_seed=9,
    )
    assert len(made) == 30 and len({a.output_id for a in made}) == 15
    # 36 stories in 6 model × prompt strata of 6: 15 · 6/36 = 2.5 each, the 3 leftover stories to the first strata
    sampled = first.outputs.filter(pk__in={a.output_id for a in made})
    per_stratum = Counter((out.model_name, out.item.number) for out in sampled.select_related("item"))
    assert sorted(per_stratum.values()) == [2, 2, 2, 3, 3, 3]
    # the coders code, blind
    leadership = codebook.codes.get(name="Leadership")
    for assignment in made[:3]:
        create_coding(study=first, codebook=codebook, output=assignment.output, code=leadership, coder=assignment.coder)
        set_assignment_status(assignment, user=assignment.coder, done=True)

    text = dump(export_recipe(first))
    stages = load(text)["human_stages"]
    assert stages == [
        {
            "name": "Coding Story codes",
            "kind": "coding",
            "after": "Stories",
            "codebook": "Story codes",
            "coders": {"role": "coder", "count": 3},
            "overlap": 2,
            "strategy": "stratified",
            "seed": 4,
            "mode": "blind",
            "sample": {"runs": ["Stories"], "n": 15, "stratify": "model_item", "seed": 9},
        }
    ]
    assert services.check(load(text)) == []

    second = create_study(name="Rebuilt elsewhere", created_by=None)
    for coder in coders:
        Membership.objects.create(study=second, user=coder, role="coder")
    outcome = services.apply(load(text), study=second)
    runs.run_foreground(GenerationRun.objects.get(study=second, name="Stories"))
    done, message = human.reach(stages[0], second, outcome.objects, None)
    assert not done and message.startswith("Assigned 15 stories (30 assignments) to 3 coders in “Story codes")
    assert Assignment.objects.filter(study=second).count() == 30
    assert set(Assignment.objects.filter(study=second).values_list("mode", flat=True)) == {"blind"}
    assert assignment_plan(second) == assignment_plan(first)
    # and the rebuilt study's recipe says the same
    again = export_recipe(second)
    assert again["human_stages"] == stages
    assert "notes" not in again


@pytest.mark.django_db
def test_export_writes_what_was_done_not_the_applied_stage(fake_provider, monkeypatch, make_user):
    """A study applied from a recipe whose stage asks for "5 coders, overlap 5, all" and no codebook, then coded by
    3 coders in blind mode on a sample: its recipe says 3 coders, the codebook, the mode and the sample."""
    from annotation.models import Codebook
    from annotation.services import create_assignments, outputs_of
    from generation.models import GenerationRun
    from stereoscope.models import Membership

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    fake_provider.default = {"text": "Once upon a time.\n"}
    study = build_study(fake_provider)
    asked = {
        "name": "Human coding",
        "kind": "coding",
        "after": "Judging rotation",
        "coders": {"role": "coder", "count": 5},
        "overlap": 5,
        "strategy": "all",
        "message": "Code the stories.",
    }
    services.apply({**export_recipe(study), "human_stages": [asked]}, study=study)
    assert export_recipe(study)["human_stages"] == [asked]  # nothing assigned yet: the stage as applied
    coders = [make_user(name) for name in ("cora", "dana", "eli")]
    for coder in coders:
        Membership.objects.create(study=study, user=coder, role="coder")
    create_assignments(
        study,
        Codebook.objects.get(study=study, name="Story codes"),
        outputs=outputs_of(study).filter(status="done"),
        runs=[GenerationRun.objects.get(study=study, name="Stories")],
        coders=coders,
        k=3,
        strategy="all",
        mode="blind",
        sample_size=15,
        seed=2,
    )
    assert export_recipe(study)["human_stages"] == [
        {
            "name": "Human coding",
            "kind": "coding",
            "after": "Judging rotation",
            "codebook": "Story codes",
            "coders": {"role": "coder", "count": 3},
            "overlap": 3,
            "strategy": "all",
            "seed": 2,
            "mode": "blind",
            "sample": {"runs": ["Stories"], "n": 15, "stratify": "model_item", "seed": 2},
            "message": "Code the stories.",
        }
    ]


@pytest.mark.django_db
def test_assignments_without_a_plan_are_noted(recipe, make_user):
    """Assignments made before plans were recorded cannot be described: the recipe says so instead of guessing."""
    from annotation.models import Assignment, Codebook
    from generation.models import GenerationRun, Output

    recipe["codebooks"] = [{"name": "Story codes", "codes": [{"name": "Care"}]}]
    recipe["human_stages"][0]["codebook"] = "Story codes"
    study = services.apply(recipe).study
    run = GenerationRun.objects.get(study=study, name="Stories")
    output = Output.objects.create(study=study, run=run, model_name="model-alpha", text="A story.", status="done")
    Assignment.objects.create(
        study=study, codebook=Codebook.objects.get(study=study), output=output, coder=make_user("old")
    )
    exported = export_recipe(study)
    assert exported["human_stages"] == recipe["human_stages"]  # the stage as applied, not a guess
    assert exported["notes"] == [
        "Some assignments of “Story codes” were made before assignment plans were recorded; the recipe cannot say "
        "which stories, coders and mode they used."
    ]
