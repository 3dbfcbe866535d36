"""Built-in recipes for the seed studies (recipes/builtin_recipes/*.yaml), each ready to `plan` against the
endpoints the user names: `with_endpoints` puts the user's endpoints in place of the recipe's example ones."""

from pathlib import Path

from .loader import RecipeError, RecipeProblem, parse_text

DIRECTORY = Path(__file__).resolve().parent / "builtin_recipes"
JOB_ENDPOINTS = (("runs", "endpoints"), ("questionnaire_runs", "endpoints"), ("judge_rounds", "judges"))


def names():
    return sorted(p.stem for p in DIRECTORY.glob("*.yaml"))


def text(name):
    path = DIRECTORY / f"{name}.yaml"
    if name not in names():
        raise RecipeError([RecipeProblem("", f"No built-in recipe {name!r}; choose one of {', '.join(names())}.")])
    return path.read_text(encoding="utf-8")


def load(name):
    return parse_text(text(name))


def with_endpoints(data, endpoints):
    """The recipe with `endpoints` (a list of endpoint entries) instead of its own; every job uses all of them."""
    if not isinstance(endpoints, list) or not endpoints or not all(isinstance(e, dict) for e in endpoints):
        raise RecipeError(
            [RecipeProblem("endpoints", "give a non-empty list of endpoints (name, provider, model_id, …)")]
        )
    data = dict(data, endpoints=endpoints)
    everyone = [e.get("name") for e in endpoints]
    for section, key in JOB_ENDPOINTS:
        data[section] = [dict(job, **{key: list(everyone)}) for job in data.get(section) or []]
    return data
