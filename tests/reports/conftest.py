import pytest
import yaml
from django.core.management import call_command

from tests.recipes.test_run import reduced_fang

WRITERS = ("writer-1", "writer-2")


def run_recipe(data, folder):
    """`manage.py recipe run` on the recipe `data` with two writers on the fake provider; the study it built."""
    from stereoscope.models import Study

    recipe = folder / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    endpoints = folder / "endpoints.yaml"
    endpoints.write_text(
        yaml.safe_dump(
            [
                {
                    "name": name,
                    "provider": "openai_compatible",
                    "model_id": f"fake-{name}",
                    "connection": "Fake provider",
                    "limits": {"backoff_base_s": 0.05, "max_attempts": 2},
                }
                for name in WRITERS
            ]
        ),
        encoding="utf-8",
    )
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints))
    return Study.objects.get(name=data["study"]["name"])


@pytest.fixture
def fake_connection(fake_provider, monkeypatch, db):
    from tests.generation.runs.conftest import approved_connection

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    return approved_connection("openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider")


@pytest.fixture
def fang_study(fake_connection, fake_provider, tmp_path):
    """The built-in Fang recipe cut to 3 items, run; judges give stories 1..5 the verdicts 1, 0, 1, 0, 1."""
    fake_provider.default = {
        "text": "\n".join(f"Story {i}: {i % 2} – the roles follow the pattern." for i in range(1, 6))
    }
    return run_recipe(reduced_fang(), tmp_path)


def planted_answer(request):
    """Deterministic planted answers: a questionnaire answer (an option number from the prompt's hash, varying over
    contexts and items), or a reference letter whose pronouns and words depend on the prompt (so the lexicon's
    categories differ between letters about women and men)."""
    import hashlib

    prompt = request["prompt"] or ""
    digest = int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16)
    if "letter" in prompt.lower():
        if digest % 2:
            return {"text": "She is warm, caring, kind and helpful; she supports her team. I recommend her."}
        return {"text": "He is ambitious, confident, a leader and independent; he leads with skill. I recommend him."}
    return {"text": str(1 + digest % 5)}


@pytest.fixture
def run_builtin(fake_connection, fake_provider, tmp_path):
    """Apply and run a built-in recipe (edited by `edit(data)`) on the fake provider with planted answers."""
    from recipes import library

    fake_provider.responder = planted_answer

    def run(name, edit=None):
        data = library.load(name)
        if edit:
            edit(data)
        return run_recipe(data, tmp_path)

    return run
