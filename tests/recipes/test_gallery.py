"""Issue 35, "Start from a published study": the gallery of built-in recipes on the Recipe page leads to their plan;
applying shows what was created with links and the next step; an unknown cost says which endpoints lack prices;
re-applying an unchanged recipe plans no new calls."""

import html
import re

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from recipes import library, services
from recipes.loader import dump

from .test_api_page import client_for, people  # noqa: F401  (fixture)
from .test_validate_apply import row_counts


def web_client(user):
    client = Client()
    client.force_login(user)
    return client


# --- unknown cost ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_cost_unknown_names_the_endpoints_without_prices(recipe):
    outcome = services.plan(recipe)
    summary = services.cost_summary(outcome.jobs)
    # alpha has prices, beta has none: the total is not known
    assert summary["unpriced_endpoints"] == ["beta"]
    assert summary["complete"] is False
    assert services.cost_text(outcome.jobs) == "unknown, no prices set for beta"


@pytest.mark.django_db
def test_cost_known_when_every_endpoint_has_prices(recipe):
    recipe["endpoints"][1]["prices"] = {"input_per_mtok": 1, "output_per_mtok": 1}
    outcome = services.plan(recipe)
    summary = services.cost_summary(outcome.jobs)
    assert summary["unpriced_endpoints"] == [] and summary["complete"] is True
    assert services.cost_text(outcome.jobs) == f"${summary['known_cost_usd']}"
    assert summary["known_cost_usd"] > 0


def test_unknown_cost_in_api_page_and_cli(people, recipe, tmp_path, capsys):  # noqa: F811
    study, users = people
    recipe["runs"].append({"name": "Alpha only", "toolkit": "Mini care", "endpoints": ["alpha"], "trials": 1})
    data = (
        client_for(users["researcher"])
        .post(f"/api/studies/{study.pk}/recipe/plan/", {"recipe": recipe}, format="json")
        .json()
    )
    assert data["unpriced_endpoints"] == ["beta"]
    assert float(data["known_cost_usd"]) > 0  # the number of what is priced stays
    page = web_client(users["researcher"]).post(f"/studies/{study.pk}/recipe/", {"recipe": dump(recipe)})
    text = page.content.decode()
    assert page.status_code == 200
    assert "unknown, no prices set for beta" in text and "Known cost: $" not in text
    file = tmp_path / "recipe.yaml"
    file.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    call_command("recipe", "plan", str(file))
    assert "Known cost: unknown, no prices set for beta" in capsys.readouterr().out


# --- re-applying an unchanged recipe ------------------------------------------------------------------------


@pytest.mark.django_db
def test_reapplying_an_unchanged_recipe_plans_no_new_calls(recipe):
    first = services.plan(recipe)
    assert services.new_calls(first.jobs) == 24 + 16
    services.apply(recipe)
    again = services.plan(recipe)
    assert [c.action for c in again.changes] == ["unchanged"] * len(again.changes)
    assert [j["calls"] for j in again.jobs] == [0, 0, 0]
    assert services.new_calls(again.jobs) == 0
    assert all(j.get("existing") for j in again.jobs if j["kind"] != "human stage")
    assert services.cost_text(again.jobs) == "$0"


@pytest.mark.django_db
def test_a_new_run_next_to_unchanged_ones_counts_only_its_own_calls(recipe):
    services.apply(recipe)
    recipe["runs"].append({"name": "More stories", "toolkit": "Mini care", "endpoints": ["alpha"], "trials": 1})
    outcome = services.plan(recipe)
    by_name = {j["name"]: j for j in outcome.jobs}
    assert by_name["Stories"]["calls"] == 0 and by_name["Cross judging"]["calls"] == 0
    assert by_name["More stories"]["calls"] == 4  # 2 items × 2 names × 1 endpoint × 1 trial
    assert services.new_calls(outcome.jobs) == 4


def test_unchanged_plan_says_so_on_page_api_and_cli(people, recipe, tmp_path, capsys):  # noqa: F811
    study, users = people
    services.apply(recipe, study=study)
    data = (
        client_for(users["researcher"])
        .post(f"/api/studies/{study.pk}/recipe/plan/", {"recipe": recipe}, format="json")
        .json()
    )
    assert data["new_calls"] == 0 and [j["calls"] for j in data["jobs"]] == [0, 0, 0]
    text = web_client(users["researcher"]).post(f"/studies/{study.pk}/recipe/", {"recipe": dump(recipe)}).content
    assert "Nothing changed: applying this recipe makes no new calls." in text.decode()
    file = tmp_path / "recipe.yaml"
    file.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    call_command("recipe", "plan", str(file), "--study", str(study.pk))
    out = capsys.readouterr().out
    assert "Nothing changed: applying this recipe makes no new calls." in out


# --- gallery and result page ----------------------------------------------------------------------------------


def test_gallery_lists_the_five_published_studies(people):  # noqa: F811
    study, users = people
    text = web_client(users["researcher"]).get(f"/studies/{study.pk}/recipe/").content.decode()
    assert "Start from a published study" in text
    assert sorted(e["name"] for e in library.gallery()) == library.names()
    for entry in library.gallery():
        assert html.escape(entry["citation"]) in text and html.escape(entry["summary"]) in text
        assert f"?builtin={entry['name']}" in text
    for word in ("Fang", "Jung", "R.U.Psycho", "Wan", "regard"):
        assert word in text


def test_gallery_entry_shows_its_plan_and_writes_nothing(people):  # noqa: F811
    from tests.generation.runs.conftest import approved_connection

    study, users = people
    approved_connection("openai", name="OpenAI")
    client = web_client(users["researcher"])
    before = row_counts()
    response = client.get(f"/studies/{study.pk}/recipe/?builtin=regard")
    text = response.content.decode()
    assert response.status_code == 200
    assert "Plan: German regard" in text and "Completions" in text and "Kraft" in text
    assert row_counts() == before
    missing = client.get(f"/studies/{study.pk}/recipe/?builtin=nope")
    assert missing.status_code == 400 and "No built-in recipe" in missing.content.decode()


def test_gallery_plan_without_a_connection_explains_and_offers_editing(people):  # noqa: F811
    study, users = people
    response = web_client(users["researcher"]).get(f"/studies/{study.pk}/recipe/?builtin=wan2023-letters")
    text = response.content.decode()
    assert response.status_code == 400
    assert "no openai connection open to the study" in text
    assert 'name="recipe"' in text and "Letters" in text  # the recipe text, to edit and plan again


def test_apply_shows_the_result_page_with_links_and_next_steps(people, recipe):  # noqa: F811
    from generation.models import GenerationRun, ModelEndpoint, Toolkit
    from judging.models import JudgeRound

    study, users = people
    client = web_client(users["admin"])
    response = client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": dump(recipe)})
    assert response.status_code == 302 and response["Location"].endswith(f"/studies/{study.pk}/recipe/applied/")
    text = client.get(response["Location"]).content.decode()
    run = GenerationRun.objects.get(study=study, name="Stories")
    toolkit = Toolkit.objects.get(study=study, name="Mini care")
    rnd = JudgeRound.objects.get(study=study, name="Cross judging")
    for url in (
        f"/studies/{study.pk}/runs/{run.pk}/",
        f"/studies/{study.pk}/toolkits/{toolkit.pk}/",
        f"/studies/{study.pk}/judging/rounds/{rnd.pk}/",
    ):
        assert f'href="{url}"' in text
    for endpoint in ModelEndpoint.objects.filter(study=study):
        assert f'href="/studies/{study.pk}/endpoints/{endpoint.pk}/edit/"' in text
    assert "5 created" in text
    assert "Start the first run" in text and f'href="/studies/{study.pk}/runs/{run.pk}/plan/"' in text
    assert "Invite coders" in text and f'href="/studies/{study.pk}/members/"' in text
    # nothing to show once it has been seen, and coders and researchers cannot apply
    assert client.get(f"/studies/{study.pk}/recipe/applied/").status_code == 302
    assert web_client(users["researcher"]).post(f"/studies/{study.pk}/recipe/apply/", {"recipe": "x"}).status_code in (
        302,
        403,
    )


def test_result_page_of_an_unchanged_reapply_says_nothing_changed(people, recipe):  # noqa: F811
    study, users = people
    services.apply(recipe, study=study)
    client = web_client(users["admin"])
    response = client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": dump(recipe)}, follow=True)
    text = response.content.decode()
    assert "Nothing changed" in text
    assert re.search(r"unchanged", text)


def test_api_apply_lists_the_objects_with_their_pages_and_next_steps(people, recipe):  # noqa: F811
    from generation.models import GenerationRun

    study, users = people
    data = (
        client_for(users["admin"])
        .post(f"/api/studies/{study.pk}/recipe/apply/", {"recipe": recipe}, format="json")
        .json()
    )
    run = GenerationRun.objects.get(study=study, name="Stories")
    rows = {(r["kind"], r["name"]): r for r in data["objects"]}
    assert rows[("generation run", "Stories")]["url"] == f"/studies/{study.pk}/runs/{run.pk}/"
    assert rows[("generation run", "Stories")]["action"] == "create"
    labels = [s["label"] for s in data["next_steps"]]
    assert labels[:2] == ["Start the first run", "Invite coders"]
    again = (
        client_for(users["admin"])
        .post(f"/api/studies/{study.pk}/recipe/apply/", {"recipe": recipe}, format="json")
        .json()
    )
    assert {r["action"] for r in again["objects"]} == {"unchanged"}
