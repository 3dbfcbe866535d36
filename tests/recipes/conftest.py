import copy

import pytest

BASE = {
    "format": "stereoscope-recipe",
    "format_version": 1,
    "study": {"name": "Recipe study", "description": "Built from a recipe."},
    "toolkits": [
        {
            "name": "Mini care",
            "slots": {"name": ["Kelly", "Joseph"]},
            "dimensions": [{"name": "Care", "description": "", "order": 0}],
            "items": [
                {
                    "number": 1,
                    "text": "Write a story about {name}, a nurse.",
                    "dimension": "Care",
                    "target_stereotype": "nurturing",
                    "gender_mapping": "F = nurturing",
                },
                {
                    "number": 2,
                    "text": "Write a story about {name}, an engineer.",
                    "dimension": "Care",
                    "target_stereotype": "technical",
                    "gender_mapping": "M = technical",
                },
            ],
        }
    ],
    "endpoints": [
        {
            "name": "alpha",
            "provider": "openai_compatible",
            "model_id": "model-alpha",
            "connection": "Lab server",
            "params": {"temperature": 0.7, "max_tokens": 200},
            "limits": {"max_concurrency": 2},
            "prices": {"input_per_mtok": 1.5, "output_per_mtok": 2},
        },
        {
            "name": "beta",
            "provider": "openai_compatible",
            "model_id": "model-beta",
            "connection": "Lab server",
        },
    ],
    "judge_templates": [{"name": "Structured", "builtin": "structured-json-binary", "version": "1"}],
    "runs": [{"name": "Stories", "toolkit": "Mini care", "endpoints": ["alpha", "beta"], "trials": 3}],
    "judge_rounds": [
        {
            "name": "Cross judging",
            "source_run": "Stories",
            "template": "Structured",
            "judges": ["alpha", "beta"],
            "policy": "rotation",
            "batch_size": 2,
            "seed": 7,
        }
    ],
    "human_stages": [
        {
            "name": "Coding",
            "kind": "coding",
            "after": "Cross judging",
            "coders": {"role": "coder"},
            "overlap": 2,
            "strategy": "random_balanced",
            "message": "Code the stories in Annotate.",
        }
    ],
}


@pytest.fixture
def recipe():
    return copy.deepcopy(BASE)


@pytest.fixture(autouse=True)
def lab_server(request):
    """The connection staff approved for the lab's OpenAI-compatible server, which the test recipes name."""
    marker = request.node.get_closest_marker("django_db")
    names = request.fixturenames
    if "transactional_db" in names or (marker and marker.kwargs.get("transaction")):
        request.getfixturevalue("transactional_db")
    elif "db" in names or marker is not None:
        request.getfixturevalue("db")
    else:
        return None
    from tests.generation.runs.conftest import approved_connection

    return approved_connection("openai_compatible", "http://127.0.0.1:9/v1", "", name="Lab server")
