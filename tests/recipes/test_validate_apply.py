"""recipe validate: every error names its path, nothing is written. recipe apply: idempotent, versions like the UI."""

import json

import pytest
import yaml
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError

from recipes import services
from recipes.loader import RecipeError, load


def row_counts():
    return {m._meta.label: m.objects.count() for m in apps.get_models()}


def _set(path, value):
    def change(r):
        *head, last = path
        target = r
        for part in head:
            target = target[part]
        target[last] = value

    return change


def _delete(path):
    def change(r):
        *head, last = path
        target = r
        for part in head:
            target = target[part]
        del target[last]

    return change


# (change, path the error must name, a word of the message)
MALFORMED = [
    (_set(("runs", 0, "endpoints", 0), "gpt4o"), "runs[0].endpoints[0]", "no endpoint named 'gpt4o'"),
    (_set(("runs", 0, "toolkit"), "Nope"), "runs[0].toolkit", "no toolkit named"),
    (_set(("judge_rounds", 0, "source_run"), "Missing"), "judge_rounds[0].source_run", "no run named"),
    (_set(("judge_rounds", 0, "template"), "Missing"), "judge_rounds[0].template", "no judge template named"),
    (_set(("judge_rounds", 0, "judges", 1), "gamma"), "judge_rounds[0].judges[1]", "no endpoint named"),
    (_set(("judge_rounds", 0, "policy"), "k_of_n"), "judge_rounds[0].k", "needs k"),
    (_set(("judge_rounds", 0, "policy"), "everyone"), "judge_rounds[0].policy", "is not one of"),
    (_set(("human_stages", 0, "after"), "Nothing"), "human_stages[0].after", "no job named"),
    (_set(("endpoints", 1, "provider"), "openia"), "endpoints[1].provider", "is not one of"),
    (_set(("endpoints", 0, "api_key_env"), "OPENAI_API_KEY"), "endpoints[0]", "do not set base URLs or key variables"),
    (_set(("endpoints", 0, "base_url"), "http://evil.example/v1"), "endpoints[0]", "names a provider connection"),
    (_set(("endpoints", 0, "params"), {"temperature": "hot"}), "endpoints[0].params", "temperature"),
    (_set(("endpoints", 0, "limits", "max_concurrency"), 0), "endpoints[0].limits.max_concurrency", "minimum"),
    (_set(("endpoints", 1, "name"), "alpha"), "endpoints[1].name", "also used by endpoints[0]"),
    (_set(("toolkits", 0, "items", 1, "text"), "About {job}."), "toolkits[0]", "job"),
    (_set(("toolkits", 0, "items"), []), "toolkits[0].items", "should be non-empty"),
    (_set(("judge_templates", 0, "version"), "9"), "judge_templates[0].builtin", "no built-in judge_template"),
    (_set(("runs", 0, "trials"), 0), "runs[0].trials", "minimum"),
    (_delete(("runs", 0, "endpoints")), "runs[0]", "'endpoints' is a required property"),
    (_set(("runs", 0, "colour"), "blue"), "runs[0]", "unknown field(s) 'colour'; allowed: "),
]


def test_twenty_malformed_recipes():
    assert len(MALFORMED) == 20


@pytest.mark.django_db
@pytest.mark.parametrize("change,path,words", MALFORMED)
def test_validate_names_the_path_and_writes_nothing(recipe, tmp_path, change, path, words):
    change(recipe)
    file = tmp_path / "recipe.yaml"
    file.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    before = row_counts()
    with pytest.raises(CommandError) as info:
        call_command("recipe", "validate", str(file))
    lines = [line.strip() for line in str(info.value).splitlines()[1:]]
    assert any(line.startswith(f"{path}: ") and words in line for line in lines), lines
    with pytest.raises(CommandError):
        call_command("recipe", "apply", str(file))
    with pytest.raises(CommandError):
        call_command("recipe", "plan", str(file))
    assert row_counts() == before


@pytest.mark.django_db
def test_valid_recipe_json_or_yaml(recipe, tmp_path, capsys):
    for name, text in (("r.json", json.dumps(recipe)), ("r.yaml", yaml.safe_dump(recipe))):
        (tmp_path / name).write_text(text, encoding="utf-8")
        call_command("recipe", "validate", str(tmp_path / name))
        assert "valid" in capsys.readouterr().out


def test_bad_syntax_names_the_line():
    with pytest.raises(RecipeError) as info:
        load("format: stereoscope-recipe\nstudy: [unclosed\n")
    assert "line 3" in str(info.value) or "line 2" in str(info.value)


def _stamps():
    from generation.models import GenerationRun, ModelEndpoint, Toolkit
    from judging.models import JudgeRound

    return (
        [(t.pk, t.version, t.created_at) for t in Toolkit.objects.filter(study__is_library=False).order_by("pk")],
        [(e.pk, e.created_at, e.default_params) for e in ModelEndpoint.objects.order_by("pk")],
        [(r.pk, r.created_at, r.status) for r in GenerationRun.objects.order_by("pk")],
        [(r.pk, r.created_at, r.plan.get("batches")) for r in JudgeRound.objects.order_by("pk")],
    )


@pytest.mark.django_db
def test_apply_twice_changes_nothing(recipe, tmp_path, capsys):
    file = tmp_path / "recipe.yaml"
    file.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    call_command("recipe", "apply", str(file))
    first = capsys.readouterr().out
    assert "6 change(s)" in first
    counts, stamps = row_counts(), _stamps()
    call_command("recipe", "apply", str(file))
    assert "0 change(s)" in capsys.readouterr().out
    assert row_counts() == counts
    assert _stamps() == stamps


@pytest.mark.django_db
def test_plan_writes_nothing_and_estimates_each_job(recipe):
    before = row_counts()
    outcome = services.plan(recipe)
    assert row_counts() == before
    assert [c.action for c in outcome.changes] == ["create"] * 6
    generation, judging, stage = outcome.jobs
    # 2 items × 2 names × 2 endpoints × 3 trials
    assert generation["calls"] == 24
    # rotation: each of 8 (item, name, model) groups judged once, 3 stories in batches of 2 -> 2 calls each
    assert (judging["calls"], judging["verdicts"]) == (16, 24)
    # stories counted at max_tokens (alpha 200, beta the default 400), 60 tokens per verdict; only alpha has prices
    assert judging["output_tokens"] == 24 * 60
    assert judging["input_tokens"] > 12 * 200 + 12 * 400 and judging["cost_usd"] is None
    assert stage["kind"] == "human stage"


@pytest.mark.django_db
def test_changed_toolkit_used_by_a_run_gets_a_new_version(recipe):
    from generation.models import Toolkit

    services.apply(recipe)
    recipe["toolkits"][0]["items"][0]["text"] = "Write a story about {name}, a midwife."
    recipe["runs"][0]["name"] = "Stories v2"
    recipe["judge_rounds"][0]["source_run"] = "Stories v2"
    recipe["judge_rounds"][0]["name"] = recipe["human_stages"][0]["after"] = "Cross judging v2"
    outcome = services.apply(recipe)
    assert ("new version", "toolkit", "Mini care v2") in [(c.action, c.kind, c.name) for c in outcome.changes]
    versions = Toolkit.objects.filter(name="Mini care").order_by("version")
    assert [t.version for t in versions] == [1, 2]
    assert versions[0].items.get(number=1).text.endswith("a nurse.")  # the used version is untouched
    assert outcome.objects["runs"]["Stories v2"].toolkit == versions[1]


@pytest.mark.django_db
def test_changed_run_is_refused_with_its_path(recipe):
    services.apply(recipe)
    before = row_counts()
    recipe["runs"][0]["trials"] = 4
    with pytest.raises(RecipeError) as info:
        services.apply(recipe)
    assert "runs.Stories" in str(info.value) and "trials" in str(info.value)
    assert row_counts() == before


@pytest.mark.django_db
def test_changed_endpoint_is_updated_in_place(recipe):
    first = services.apply(recipe)
    recipe["endpoints"][1]["params"] = {"temperature": 0.2}
    outcome = services.apply(recipe)
    assert [(c.action, c.name) for c in outcome.changed] == [("update", "beta")]
    assert outcome.objects["endpoints"]["beta"].pk == first.objects["endpoints"]["beta"].pk


@pytest.mark.django_db
def test_judge_round_cost_before_generation(recipe):
    """Rotation with two models: each judges the other's 12 stories in 8 calls; stories at their max_tokens."""
    from decimal import Decimal

    from generation.runs.limits import estimate_tokens
    from judging.models import JudgeTemplate
    from stereoscope.builtin import load_builtins

    load_builtins(log=lambda *_: None)
    recipe["endpoints"][1]["prices"] = {"input_per_mtok": 3, "output_per_mtok": 4}
    judging = services.plan(recipe).jobs[1]
    template = estimate_tokens(JudgeTemplate.objects.get(builtin_key="structured-json-binary").text)
    alpha_in, beta_in = 8 * template + 12 * 400, 8 * template + 12 * 200  # alpha judges beta's stories
    expected = (
        Decimal(alpha_in) * Decimal("1.5") + Decimal(12 * 60) * 2 + Decimal(beta_in) * 3 + Decimal(12 * 60) * 4
    ) / Decimal(1_000_000)
    assert judging["input_tokens"] == alpha_in + beta_in
    assert Decimal(judging["cost_usd"]) == pytest.approx(expected, abs=Decimal("0.000001"))
