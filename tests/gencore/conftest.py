import pytest


@pytest.fixture
def study(db):
    from stereoscope.models import Study

    return Study.objects.create(name="Generation study")


@pytest.fixture
def make_endpoint(fake_provider, monkeypatch):
    """Endpoints pointed at the fake server. Keys come from environment variables set here."""
    counter = iter(range(1, 10_000))

    def make(study, provider="openai_compatible", **fields):
        n = next(counter)
        if provider == "anthropic":
            fields.setdefault("base_url", fake_provider.anthropic_base_url)
        elif provider in ("openai", "openai_compatible"):
            fields.setdefault("base_url", fake_provider.openai_base_url)
        if provider in ("openai", "anthropic", "openai_compatible"):
            monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
            fields.setdefault("api_key_env", "FAKE_KEY_ENV")
        fields.setdefault("model_id", f"model-{n}")
        fields.setdefault("backoff_base_s", 0.05)
        fields.setdefault("backoff_max_s", 1.0)
        fields.setdefault("timeout_seconds", 10)
        from generation.models import ModelEndpoint

        return ModelEndpoint.objects.create(study=study, name=fields.pop("name", f"endpoint {n}"), provider=provider, **fields)

    return make
