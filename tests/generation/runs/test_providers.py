"""Adapters through the real openai and anthropic SDKs against the fake server on 127.0.0.1."""

import asyncio
import json
import threading

import pytest

from generation.runs.providers import ProviderError, get_provider

pytestmark = pytest.mark.django_db
MESSAGES = [
    {"role": "system", "content": "You write short stories."},
    {"role": "user", "content": "Write about a nurse."},
]


@pytest.mark.parametrize("provider", ["openai", "openai_compatible", "anthropic"])
def test_completion_text_usage_and_key_header(study, make_endpoint, fake_provider, provider):
    endpoint = make_endpoint(study, provider, default_params={"temperature": 0.7})
    fake_provider.script([{"text": "Once upon a time.", "usage": {"input": 11, "output": 5}}])
    result = get_provider(endpoint).complete(MESSAGES, {"temperature": 0.3, "max_tokens": 50, "seed": 7})
    assert result.text == "Once upon a time."
    assert (result.input_tokens, result.output_tokens, result.finish_reason) == (11, 5, "stop")
    assert result.http_status == 200 and result.raw and result.latency_ms >= 0
    request = fake_provider.requests[-1]
    assert "sk-fake-secret-123" in request["auth"]  # the key travels only in the header
    body = request["body"]
    assert body["model"] == endpoint.model_id and body["temperature"] == 0.3 and body["max_tokens"] == 50
    if provider == "anthropic":
        assert body["system"] == "You write short stories." and [m["role"] for m in body["messages"]] == ["user"]
        assert "seed" not in body
    else:
        assert body["seed"] == 7 and body["messages"][0]["role"] == "system"


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
def test_async_twin_runs_inside_an_event_loop_thread(study, make_endpoint, fake_provider, provider):
    endpoint = make_endpoint(study, provider)
    box = {}

    def run():
        async def go():
            p = get_provider(endpoint)
            try:
                return await asyncio.gather(
                    *[p.acomplete([{"role": "user", "content": f"story {i}"}], {}) for i in range(5)]
                )
            finally:
                await p.aclose()

        box["results"] = asyncio.run(go())

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    assert sorted(r.text.split("Answer to: ")[1] for r in box["results"]) == [f"story {i}" for i in range(5)]


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
@pytest.mark.parametrize(
    "spec,retryable,status,text",
    [
        ({"status": 429, "retry_after": 2}, True, 429, "HTTP 429"),
        ({"status": 500}, True, 500, "HTTP 500"),
        ({"status": 503}, True, 503, "HTTP 503"),
        ({"status": 400, "message": "bad request shape"}, False, 400, "bad request shape"),
        ({"malformed": True}, True, None, "not a valid response"),
        ({"empty": True}, True, 200, "empty completion"),
    ],
)
def test_errors_are_classified_with_clear_messages(
    study, make_endpoint, fake_provider, provider, spec, retryable, status, text
):
    endpoint = make_endpoint(study, provider)
    fake_provider.script([spec])
    with pytest.raises(ProviderError) as info:
        get_provider(endpoint).complete(MESSAGES, {})
    err = info.value
    assert err.retryable is retryable and text in str(err)
    if status:
        assert err.http_status == status
    if "retry_after" in spec:
        assert err.retry_after == 2.0


def test_timeout_is_retryable(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, timeout_seconds=0.3)
    fake_provider.script([{"hang": 2}])
    with pytest.raises(ProviderError) as info:
        get_provider(endpoint).complete(MESSAGES, {})
    assert info.value.retryable and "Timed out" in str(info.value)


def test_missing_key_variable_is_named_and_nothing_is_sent(study, make_endpoint, fake_provider, monkeypatch):
    endpoint = make_endpoint(study, "openai", api_key_env="NOT_SET_ANYWHERE_KEY")
    monkeypatch.delenv("NOT_SET_ANYWHERE_KEY", raising=False)
    with pytest.raises(ProviderError, match="NOT_SET_ANYWHERE_KEY .* is not set"):
        get_provider(endpoint).complete(MESSAGES, {})
    assert fake_provider.requests == []


def test_bad_parameters_are_rejected_before_a_call(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study)
    with pytest.raises(ProviderError, match="Unknown parameter"):
        get_provider(endpoint).complete(MESSAGES, {"temprature": 1})
    with pytest.raises(ProviderError, match="max_tokens must be an integer"):
        get_provider(endpoint).complete(MESSAGES, {"max_tokens": "lots"})
    assert fake_provider.requests == []


def test_truncated_completion_keeps_finish_reason(study, make_endpoint, fake_provider):
    for provider in ("openai_compatible", "anthropic"):
        fake_provider.script([{"text": "Once upon", "finish_reason": "length"}])
        result = get_provider(make_endpoint(study, provider)).complete(MESSAGES, {"max_tokens": 2})
        assert result.finish_reason == "length"


def test_manual_endpoint_is_never_called(study, make_endpoint):
    endpoint = make_endpoint(study, "manual")
    with pytest.raises(ProviderError, match="manual endpoint"):
        get_provider(endpoint).complete(MESSAGES, {})


def test_provider_error_texts_drop_nul_characters():
    """An error quotes the provider's body, and errors are stored: a NUL in it must not make the save fail."""
    from generation.runs.providers.base import ProviderError

    error = ProviderError("HTTP 500: bad\x00 body", raw={"body": "x\x00y"})
    assert str(error) == "HTTP 500: bad body" and error.raw == {"body": "xy"}


@pytest.mark.parametrize("provider", ["openai", "openai_compatible"])
@pytest.mark.parametrize(
    "params",
    [{}, {"temperature": 0.3, "max_tokens": 50, "seed": 7, "stop": ["\n\n", "END"], "top_p": 0.9, "top_k": 40}],
)
def test_openai_request_is_the_one_create_sends_without_its_type_walk(
    study, make_endpoint, monkeypatch, provider, params
):
    """The adapter posts the request `chat.completions.create` sends (URL, headers, body), without walking the
    body through the SDK's parameter types on every call (0.2 ms of CPU each; issue 36)."""
    import httpx2
    import openai
    from openai.resources.chat.completions import completions as sdk_completions

    from generation.runs.providers.base import current_attempt

    endpoint = make_endpoint(study, provider, base_url="http://provider.test/v1")
    sent = []

    def answer(request):
        sent.append(request)
        return httpx2.Response(
            200,
            json={
                "id": "c1",
                "object": "chat.completion",
                "created": 1,
                "model": endpoint.model_id,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            },
        )

    adapter = get_provider(endpoint)
    kwargs = adapter.client_kwargs()
    walks = []
    walk = sdk_completions.async_maybe_transform

    async def counted(*args, **kw):
        walks.append(args)
        return await walk(*args, **kw)

    monkeypatch.setattr(sdk_completions, "async_maybe_transform", counted)

    async def both():
        http_client = openai.DefaultAsyncHttpxClient(transport=httpx2.MockTransport(answer))
        adapter._client = openai.AsyncOpenAI(**kwargs, http_client=http_client)
        named = current_attempt.set(41)
        try:
            mine = await adapter.acomplete(MESSAGES, params)
            assert walks == []  # no walk of the body through the SDK's types
            await adapter._client.chat.completions.create(
                **adapter.request(MESSAGES, params), extra_headers={"X-Stereoscope-Attempt": "41"}
            )
        finally:
            current_attempt.reset(named)
            await adapter.aclose()
        return mine

    result = asyncio.run(both())
    assert result.text == "Hi." and (result.input_tokens, result.output_tokens) == (3, 2)
    ours, sdks = sent
    assert (
        (ours.method, str(ours.url))
        == (sdks.method, str(sdks.url))
        == ("POST", "http://provider.test/v1/chat/completions")
    )
    assert dict(ours.headers) == dict(sdks.headers)
    assert json.loads(ours.content) == json.loads(sdks.content)  # the same body; its keys may come in another order
    assert ours.headers["authorization"] == "Bearer sk-fake-secret-123"
    assert ours.headers["x-stereoscope-attempt"] == "41"


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
@pytest.mark.parametrize("finish", [5, {"a": 1}, ["stop"]])
def test_a_finish_reason_that_is_not_text_is_dropped(
    study, make_endpoint, make_toolkit, fake_provider, provider, finish
):
    """A finish reason is a provider's word; one that is not text is dropped, not stored or mapped (it broke the
    attempt row's slicing and stopped the run)."""
    from generation.models import Output
    from generation.runs import services as runs

    endpoint = make_endpoint(study, provider, max_attempts=1)
    fake_provider.script([{"text": "Once.", "finish_reason": finish}])
    result = get_provider(endpoint).complete(MESSAGES, {})
    assert (result.text, result.finish_reason) == ("Once.", "")
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[endpoint])
    fake_provider.script([{"text": "Twice.", "finish_reason": finish}])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert list(Output.objects.filter(run=run).values_list("status", "text")) == [("done", "Twice.")]


@pytest.mark.parametrize("content", [["a", "b"], {"x": "y"}, 42, True])
def test_a_completion_whose_content_is_not_text_is_a_clear_retryable_error(
    study, make_endpoint, fake_provider, content
):
    endpoint = make_endpoint(study, "openai_compatible")
    fake_provider.script([{"text": content}])
    with pytest.raises(ProviderError) as info:
        get_provider(endpoint).complete(MESSAGES, {})
    error = info.value
    assert error.retryable and error.http_status == 200
    assert f"content that is not text ({type(content).__name__})" in str(error)


def _both_ways(endpoint, fake_provider, spec):
    """The adapter's sync and async answers (or errors) to the same scripted response."""

    async def go():
        adapter = get_provider(endpoint)
        try:
            return await adapter.acomplete(MESSAGES, {})
        finally:
            await adapter.aclose()

    got = []
    for call in (lambda: get_provider(endpoint).complete(MESSAGES, {}), lambda: asyncio.run(go())):
        fake_provider.script([spec])
        try:
            got.append(call())
        except ProviderError as exc:
            got.append(exc)
    return got


@pytest.mark.parametrize("provider", ["openai", "openai_compatible", "anthropic"])
@pytest.mark.parametrize(
    "spec",
    [
        {"text": "Once upon a time.", "usage": {"input": 11, "output": 5}, "finish_reason": "length"},
        {"status": 429, "retry_after": 2},
        {"status": 400, "message": "bad request shape"},
        {"malformed": True},
        {"empty": True},
        {"text": ["a"]},
        {"text": "Twice.", "usage": {"input": -3, "output": "x"}},
    ],
)
def test_the_async_path_reads_answers_and_errors_as_the_sync_path(study, make_endpoint, fake_provider, provider, spec):
    """The runner's async path reads the provider's JSON itself (without the SDK's model, issue 36): the same
    results and the same errors as the SDK's sync path, whatever the answer."""
    endpoint = make_endpoint(study, provider, max_attempts=1)
    sync, async_ = _both_ways(endpoint, fake_provider, spec)
    assert type(sync) is type(async_)
    if isinstance(sync, ProviderError):
        assert (str(sync), sync.retryable, sync.http_status, sync.retry_after) == (
            str(async_),
            async_.retryable,
            async_.http_status,
            async_.retry_after,
        )
    else:
        fields = ("text", "finish_reason", "input_tokens", "output_tokens", "http_status")
        assert [getattr(sync, f) for f in fields] == [getattr(async_, f) for f in fields]
        # the async path keeps the provider's body as it came; the SDK's model adds its empty fields
        if provider == "anthropic":
            assert sync.raw["content"] == async_.raw["content"]
        else:
            assert sync.raw["choices"][0]["message"]["content"] == async_.raw["choices"][0]["message"]["content"]
