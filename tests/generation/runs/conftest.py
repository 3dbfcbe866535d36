import pytest


@pytest.fixture
def study(db):
    from stereoscope.models import Study

    return Study.objects.create(name="Generation study")


def approved_connection(provider, base_url="", api_key_env="", **extra):
    """The approved connection of a (provider, base URL, key variable) triple, made once (what staff would set up)."""
    from generation.models import ProviderConnection

    connection, _ = ProviderConnection.objects.get_or_create(
        provider=provider,
        base_url=base_url,
        api_key_env=api_key_env,
        defaults={"name": f"{provider} {base_url} {api_key_env}".strip()[:200], "status": "approved", **extra},
    )
    return connection


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

        if "connection" not in fields:
            fields["connection"] = approved_connection(
                provider, fields.pop("base_url", ""), fields.pop("api_key_env", "")
            )
        return ModelEndpoint.objects.create(
            study=study, name=fields.pop("name", f"endpoint {n}"), provider=provider, **fields
        )

    return make


@pytest.fixture
def make_toolkit():
    def make(study, n_items=3, slots=None, texts=None):
        from generation.models import Dimension, PromptItem, Toolkit

        toolkit = Toolkit.objects.create(study=study, name=f"Toolkit {Toolkit.objects.count() + 1}", slots=slots or {})
        dim = Dimension.objects.create(toolkit=toolkit, name="Care")
        for i in range(1, n_items + 1):
            text = texts[i - 1] if texts else f"Write a short story about item {i}."
            PromptItem.objects.create(toolkit=toolkit, number=i, text=text, dimension=dim)
        return toolkit

    return make
