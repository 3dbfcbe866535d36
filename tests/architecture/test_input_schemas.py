"""Every input format is one JSON Schema (Draft 2020-12, `<app>/schema/<format>.schema.json`) checked through one
error reporter (stereoscope/schemas.py: path + message); code keeps only the rules across fields. The schemas are
published at /api/<format>-schema/ for signed-in users and in the OpenAPI document.

A validator module is built on a schema when it registers its schema file (`schemas.register`) and validates
through the shared reporter (`schemas.problems` or `schemas.messages`); `schema_problems` says why one is not, and a
probe shows that a hand-written validator fails."""

import ast
import importlib
import json
from pathlib import Path

import jsonschema
import pytest

from stereoscope import schemas

ROOT = Path(__file__).resolve().parents[2]
DRAFT = "https://json-schema.org/draft/2020-12/schema"
# format -> the module that validates it
VALIDATORS = {
    "recipe": "recipes/loader.py",
    "toolkit": "generation/toolkits/file_format.py",
    "endpoint": "generation/runs/endpoint_services.py",
    "instrument": "psychometrics/spec.py",
    "run_config": "psychometrics/runs.py",
    "codebook": "annotation/codebook_format.py",
    "judge_weights": "judging/services.py",
    "personas": "psychometrics/services.py",
    "contexts": "psychometrics/services.py",
    "lexicon": "measures/services.py",
    "output_import": "generation/runs/collect.py",
    "answers": "generation/runs/collect.py",
}


def module_name(path):
    return path.removesuffix(".py").replace("/", ".")


def schema_problems(source):
    """Why a validator module (its source) is not built on a schema; [] when it is."""
    calls = {
        f"{node.func.value.id}.{node.func.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
    }
    problems = []
    if "schemas.register" not in calls:
        problems.append("registers no schema file (stereoscope.schemas.register)")
    if not calls & {"schemas.problems", "schemas.messages"}:
        problems.append("does not validate through the shared reporter (stereoscope.schemas.problems/messages)")
    return problems


def registry():
    for path in VALIDATORS.values():
        importlib.import_module(module_name(path))
    return dict(schemas.REGISTRY)


def schema_files():
    return sorted(
        p for p in ROOT.glob("*/schema/*.schema.json") if not p.parts[-3].startswith(".") and p.parts[-3] != "tests"
    )


@pytest.mark.parametrize("name, path", sorted(VALIDATORS.items()))
def test_each_validator_is_built_on_a_schema(name, path):
    assert schema_problems((ROOT / path).read_text(encoding="utf-8")) == [], path
    app = path.split("/")[0]  # the schema lives in its app's schema/ folder (generation's modules sit in sub-packages)
    assert registry()[name] == ROOT / app / "schema" / f"{name}.schema.json"


def test_probe_a_validator_without_a_schema_fails():
    by_hand = """
def validate(data):
    errors = []
    if not isinstance(data.get("name"), str):
        errors.append("name must be text")
    return errors
"""
    assert len(schema_problems(by_hand)) == 2
    own_jsonschema = """
import jsonschema
from stereoscope import schemas
SCHEMA = schemas.register("probe", "probe.schema.json")
def validate(data):
    return [e.message for e in jsonschema.Draft202012Validator({}).iter_errors(data)]
"""
    assert schema_problems(own_jsonschema) == [
        "does not validate through the shared reporter (stereoscope.schemas.problems/messages)"
    ]


def test_every_schema_file_is_a_registered_draft_2020_12_schema():
    files = schema_files()
    assert {p.name.removesuffix(".schema.json") for p in files} == set(VALIDATORS)
    for path in files:
        schema = json.loads(path.read_text(encoding="utf-8"))
        assert schema["$schema"] == DRAFT and schema.get("title"), path
        jsonschema.Draft202012Validator.check_schema(schema)
    assert sorted(registry().values()) == files


def test_the_reporter_gives_paths_and_the_schemas_words():
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "integer", "x-message": "must be a whole number, not {value}."},
            }
        },
        "additionalProperties": False,
    }
    found = schemas.problems({"items": [1, "two"], "colour": "red"}, schema)
    assert [str(p) for p in found] == [
        "unknown field(s) 'colour'; allowed: items",
        "items[1]: must be a whole number, not 'two'.",
    ]
    assert str(schemas.problems({"items": [float("nan")]}, schema)[0]).startswith("items[0]: NaN")


def test_toolkit_lengths_are_the_limits_of_the_database():
    from stereoscope.untrusted import MAX_ITEM_NOTE, MAX_ITEM_TEXT

    item = schemas.load(registry()["toolkit"])["$defs"]["item"]["properties"]
    assert item["text"]["maxLength"] == MAX_ITEM_TEXT
    assert item["notes"]["maxLength"] == item["target_stereotype"]["maxLength"] == MAX_ITEM_NOTE


def test_run_config_choices_are_the_codes():
    from psychometrics import extraction, prompts, runs

    fields = schemas.load(registry()["run_config"])["properties"]
    assert tuple(fields["option_order"]["enum"]) == prompts.ORDER_MODES
    assert tuple(fields["option_numbering"]["enum"]) == prompts.NUMBERING
    assert tuple(fields["refusal_policy"]["enum"]) == extraction.REFUSAL_POLICIES
    assert fields["repetitions"]["anyOf"][0]["maximum"] == runs.MAX_REPETITIONS


@pytest.mark.django_db
def test_schemas_are_served_to_signed_in_users_and_documented(client, django_user_model):
    names = sorted(registry())
    urls = {name: f"/api/{name.replace('_', '-')}-schema/" for name in names}  # /api/run-config-schema/
    for name in names:
        assert client.get(urls[name]).status_code in (401, 403)
    client.force_login(django_user_model.objects.create_user("reader", password="x"))
    for name in names:
        response = client.get(urls[name])
        assert response.status_code == 200 and response.json() == schemas.load(registry()[name]), name
    document = client.get("/api/schema/?format=json").json()
    assert set(urls.values()) <= set(document["paths"])
