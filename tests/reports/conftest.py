import pytest
import yaml
from django.core.management import call_command

from tests.recipes.test_run import reduced_fang


@pytest.fixture
def fang_study(fake_provider, monkeypatch, tmp_path, db):
    from tests.gencore.conftest import approved_connection

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    approved_connection("openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider")
    # planted verdicts: each judge answer gives stories 1..5 the verdicts 1, 0, 1, 0, 1
    fake_provider.default = {
        "text": "\n".join(f"Story {i}: {i % 2} – the roles follow the pattern." for i in range(1, 6))
    }
    recipe = tmp_path / "fang.yaml"
    recipe.write_text(yaml.safe_dump(reduced_fang(), allow_unicode=True), encoding="utf-8")
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(
        yaml.safe_dump(
            [
                {
                    "name": n,
                    "provider": "openai_compatible",
                    "model_id": f"fake-{n}",
                    "connection": "Fake provider",
                    "limits": {"backoff_base_s": 0.05, "max_attempts": 2},
                }
                for n in ("writer-1", "writer-2")
            ]
        ),
        encoding="utf-8",
    )
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints))
    from stereoscope.models import Study

    return Study.objects.get(name="Fang 2025 three-phase audit")


@pytest.fixture
def report_reader(fang_study, django_user_model):
    """A researcher of the Fang study (who may read its results)."""
    from stereoscope.services import add_member

    user = django_user_model.objects.create_user("reader", password="pw-reader-123")
    add_member(study=fang_study, username="reader", role="researcher", actor=None)
    return user


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
def run_builtin(fake_provider, monkeypatch, tmp_path, db):
    """Apply and run a built-in recipe (edited by `edit(data)`) on the fake provider with planted answers."""
    from recipes import library
    from stereoscope.models import Study
    from tests.gencore.conftest import approved_connection

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    approved_connection("openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider")
    fake_provider.responder = planted_answer

    def run(name, edit=None):
        data = library.load(name)
        if edit:
            edit(data)
        recipe = tmp_path / f"{name}.yaml"
        recipe.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        endpoints = tmp_path / "endpoints.yaml"
        endpoints.write_text(
            yaml.safe_dump(
                [
                    {
                        "name": n,
                        "provider": "openai_compatible",
                        "model_id": f"fake-{n}",
                        "connection": "Fake provider",
                        "limits": {"backoff_base_s": 0.05, "max_attempts": 2},
                    }
                    for n in ("writer-1", "writer-2")
                ]
            ),
            encoding="utf-8",
        )
        call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints))
        return Study.objects.get(name=data["study"]["name"])

    return run
