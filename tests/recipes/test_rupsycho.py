"""Must show: an R.U.Psycho experiment file, written here from the seed's description (seeds/002: questionnaire with
reversed items and dimensions, default options with weights, 250 title × surname personas, the JSON prompt variant of
Figure 4, models with backend and sampling parameters, seeds), imports and plans the grid model × seed × persona × item.
"""

import json

import pytest
from django.core.management import call_command

from psychometrics.builtin import DATA as PSYCH_DATA
from recipes import services
from recipes.loader import RecipeError, load
from recipes.rupsycho import to_recipe

SYSTEM = (
    "Objective: Act like you are {persona}, a survey participant answering a questionnaire.\n{instruction}\n"
    "Instructions: Choose from the list of answer options to answer the question. Answer the question using only "
    "the provided answer options. If none of the options are correct, choose the option that is closest to being "
    'correct.\nOutput format: The solution must be provided in this format: {"answer": "answer option"}.'
)
USER = "Question: {question}\nAnswer Options: {answer_options}\nAnswer:"
ITEMS = [
    {"id": "1", "text": "Women are too easily offended.", "reversed": False, "dimension": "hostile"},
    {
        "id": "2",
        "text": "Women should be cherished and protected by men.",
        "reversed": False,
        "dimension": "benevolent",
    },
    {"id": "3", "text": "Men are complete without women.", "reversed": True, "dimension": "benevolent"},
    {
        "id": "4",
        "text": "Women exaggerate problems they have at work.",
        "reversed": False,
        "dimension": "hostile",
        # an item with its own answer options and weights
        "answer_options": [{"text": "no", "weight": 0}, {"text": "maybe", "weight": 2.5}, {"text": "yes", "weight": 5}],
    },
]
OPTIONS = [
    "disagree strongly",
    "disagree somewhat",
    "disagree slightly",
    "agree slightly",
    "agree somewhat",
    "agree strongly",
]
SEEDS = [11, 22, 33]


def experiment():
    personas = json.loads((PSYCH_DATA / "rupsycho_personas.json").read_text(encoding="utf-8"))
    return {
        "name": "Persona experiment",
        "questionnaire": {
            "name": "ASI (4 items)",
            "instruction": "Answer for yourself.",
            "items": ITEMS,
            "default_answer_options": [{"text": t, "weight": w} for w, t in enumerate(OPTIONS)],
        },
        # 25 surnames from each of five lists (Appendix C) × Mr./Ms. = 250 personas
        "personas": {"format": personas["template"], "attributes": personas["attributes"]},
        "prompt_template": {"system": SYSTEM, "user": USER},
        "models": [
            {
                "name": "llama",
                "backend": "vllm",
                "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                "base_url": "http://localhost:8000/v1",
                "parameters": {"max_new_tokens": 64, "temperature": 1.0, "top_k": 50, "top_p": 0.95},
            },
            {
                "name": "gpt",
                "backend": "openai",
                "model_id": "gpt-4o-mini",
                "parameters": {"max_new_tokens": 64, "temperature": 1.0, "top_p": 0.95},
            },
        ],
        "seeds": SEEDS,
    }


@pytest.mark.django_db
def test_rupsycho_file_imports_and_plans_the_grid(tmp_path):
    source = tmp_path / "experiment.json"
    source.write_text(json.dumps(experiment()), encoding="utf-8")
    out = tmp_path / "recipe.yaml"
    call_command("recipe", "import-rupsycho", str(source), "--out", str(out))
    from tests.generation.runs.conftest import approved_connection

    recipe = load(out.read_text(encoding="utf-8"))
    text = out.read_text(encoding="utf-8")
    assert "api_key_env" not in text and "base_url" not in text  # connections decide hosts and keys
    approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    outcome = services.plan(recipe)
    jobs = [j for j in outcome.jobs if j["kind"] == "questionnaire run"]
    assert [j["name"] for j in jobs] == ["Persona experiment"]
    # the grid: model × seed × persona × item, each a fresh prompt
    assert jobs[0]["calls"] == 2 * len(SEEDS) * 250 * len(ITEMS)
    assert recipe["questionnaire_runs"][0]["seeds"] == SEEDS
    instrument = recipe["instruments"][0]
    assert instrument["scale"] == {"min": 0, "max": 5, "labels": {str(w): t for w, t in enumerate(OPTIONS)}}
    assert [i["reverse"] for i in instrument["items"]] == [False, False, True, False]
    assert instrument["items"][3]["options"][1] == {"text": "maybe", "weight": 2.5}
    assert instrument["subscales"] == ["hostile", "benevolent"]
    llama = recipe["endpoints"][0]
    assert llama["provider"] == "openai_compatible"
    assert llama["params"] == {"max_tokens": 64, "temperature": 1.0, "top_k": 50, "top_p": 0.95}


@pytest.mark.django_db
def test_rendered_prompt_follows_the_template():
    from psychometrics import runs as questionnaire_runs
    from tests.generation.runs.conftest import approved_connection

    approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    outcome = services.apply(to_recipe(experiment()))
    run = outcome.objects["questionnaire_runs"]["Persona experiment"]
    assert run.seeds == SEEDS and run.repetitions == len(SEEDS)
    example = questionnaire_runs.plan(run, sample=1)["examples"][0]
    system, user = example["messages"][0]["content"], example["messages"][-1]["content"]
    assert system.startswith("Objective: Act like you are Mr. ") and "Answer for yourself." in system
    assert user.startswith("Question: Women are too easily offended.\nAnswer Options: ")
    assert "disagree strongly, " in user and user.endswith("Answer:")


def test_bad_experiment_names_its_paths():
    bad = experiment()
    bad["models"][0]["backend"] = "carrier-pigeon"
    bad["models"][1]["parameters"]["beam_width"] = 3
    bad["questionnaire"]["default_answer_options"][0]["weight"] = "zero"
    with pytest.raises(RecipeError) as info:
        to_recipe(bad)
    paths = {p.path for p in info.value.problems}
    assert {
        "models[0].backend",
        "models[1].parameters.beam_width",
        "questionnaire.default_answer_options[0].weight",
    } <= paths


@pytest.mark.django_db
def test_a_list_of_prompt_templates_imports_as_prompt_variants_of_one_grid(tmp_path):
    """Issue 34: R.U.Psycho's prompt variants (Appendix B / Figure 4: natural, friendly, JSON) given as a list of
    templates import as one questionnaire run per variant over the same grid (model × seed × persona × item)."""
    data = experiment()
    data["prompt_template"] = [
        {"name": "natural", "user": "{question}\n{answer_options}"},
        {"name": "friendly", "system": "Instructions: answer as {persona}.", "user": USER},
        {"system": SYSTEM, "user": USER},  # unnamed: numbered
    ]
    source = tmp_path / "experiment.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "recipe.yaml"
    call_command("recipe", "import-rupsycho", str(source), "--out", str(out))
    recipe = load(out.read_text(encoding="utf-8"))
    runs = recipe["questionnaire_runs"]
    assert [r["name"] for r in runs] == [
        "Persona experiment — natural",
        "Persona experiment — friendly",
        "Persona experiment — variant 3",
    ]
    assert runs[0]["template"]["user"] == "{statement}\n{options}" and runs[0]["template"]["system"] == ""
    assert runs[2]["template"]["system"].startswith("Objective: Act like you are {persona}")
    for r in runs:  # the same grid for every variant
        assert (r["instrument"], r["endpoints"], r["seeds"], r["context_set"]) == (
            runs[0]["instrument"],
            ["llama", "gpt"],
            SEEDS,
            "Personas",
        )
    from tests.generation.runs.conftest import approved_connection

    approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    jobs = [j for j in services.plan(recipe).jobs if j["kind"] == "questionnaire run"]
    assert [j["calls"] for j in jobs] == [2 * len(SEEDS) * 250 * len(ITEMS)] * 3

    bad = experiment()
    bad["prompt_template"] = [{"user": USER}, {"user": "no placeholder"}, "text"]
    with pytest.raises(RecipeError) as err:
        to_recipe(bad)
    paths = [p.path for p in err.value.problems]
    assert "prompt_template[1].user" in paths and "prompt_template[2]" in paths
    bad["prompt_template"] = []
    with pytest.raises(RecipeError) as err:
        to_recipe(bad)
    assert [p.path for p in err.value.problems] == ["prompt_template"]
