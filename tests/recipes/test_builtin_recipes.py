"""The built-in recipes of the seed studies are valid and plan against the endpoints the user names."""

import pytest
from django.core.management import call_command

from recipes import library, services

MINE = [
    {
        "name": "my-model",
        "provider": "openai_compatible",
        "model_id": "my-llm",
        "connection": "Lab server",
        "prices": {"input_per_mtok": 1, "output_per_mtok": 2},
    },
    {"name": "my-other", "provider": "openai_compatible", "model_id": "other-llm", "connection": "Lab server"},
]
SEEDS = {"fang2025", "jung2025-asi", "rupsycho-personas", "wan2023-letters", "regard"}


def test_there_is_a_recipe_for_every_seed():
    assert set(library.names()) == SEEDS


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_builtin_recipe_plans_with_the_users_endpoints(name):
    data = library.with_endpoints(library.load(name), MINE)
    assert services.check(data) == []
    outcome = services.plan(data)
    jobs = [j for j in outcome.jobs if j["kind"] != "human stage"]
    assert jobs and all(j["calls"] >= 0 for j in jobs)
    assert any(j["calls"] > 0 for j in jobs)
    assert all(not j["problems"] for j in jobs), [j["problems"] for j in jobs]


@pytest.mark.django_db
def test_plan_command_with_a_builtin_and_endpoints_file(tmp_path, capsys):
    import yaml

    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(yaml.safe_dump(MINE), encoding="utf-8")
    call_command("recipe", "plan", "regard", "--endpoints", str(endpoints))
    out = capsys.readouterr().out
    # 2 subjects × 10 contexts × 50 samples × 2 endpoints
    assert "generation run  Completions: 2,000 calls" in out
    assert "human stage     Regard annotation" in out
