"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio) through the openai SDK."""

import json
import time
from email.utils import parsedate_to_datetime

import httpx
import openai
from openai._base_client import make_request_options

from .base import (
    MAX_ANSWER_BYTES,
    ChatProvider,
    ChatResult,
    ProviderError,
    attempt_headers,
    elapsed_ms,
    sdk_client,
    validate_params,
)


def retry_after_seconds(headers):
    """Seconds from a Retry-After (or retry-after-ms) header, or None."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def sdk_error(exc, sdk):
    """Map an SDK exception (openai or anthropic share the shapes) to a ProviderError with a clear message."""
    if isinstance(exc, ProviderError):
        return exc
    cause = exc.__cause__
    for _ in range(8):  # raised while the body was read (base.sdk_client's bound), then wrapped by the SDK
        if cause is None or isinstance(cause, ProviderError):
            break
        cause = cause.__cause__
    if isinstance(cause, ProviderError):
        return cause
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError("Timed out waiting for the provider.", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(f"Could not reach the provider: {exc.__cause__ or exc}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = str(getattr(exc, "message", "") or exc)[:500]
        retryable = status in (408, 409, 425, 429) or status >= 500
        return ProviderError(
            f"HTTP {status} from the provider: {detail}",
            retryable=retryable,
            retry_after=retry_after_seconds(exc.response.headers),
            http_status=status,
        )
    if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError, ValueError)):
        return ProviderError(
            f"The provider sent a body that is not a valid response ({type(exc).__name__}: {str(exc)[:200]}).",
            retryable=True,
            http_status=getattr(exc, "status_code", None),
        )
    if isinstance(exc, httpx.HTTPError):
        return ProviderError(f"HTTP transport error: {exc}", retryable=True)
    return ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)


def check_text(text, finish_reason):
    if text is None or not str(text).strip():
        raise ProviderError(
            f"The provider returned an empty completion (finish reason: {finish_reason or 'none'}).",
            retryable=True,
            http_status=200,
        )
    return text


class OpenAIProvider(ChatProvider):
    name = "openai"

    def __init__(self, endpoint):
        super().__init__(endpoint)
        self._client = None

    def client_kwargs(self):
        ep = self.endpoint
        compatible = ep.provider == "openai_compatible"
        if compatible and not ep.base_url:
            raise ProviderError(f"Endpoint “{ep.name}” is OpenAI-compatible but has no base URL.")
        key = self.api_key(required=not compatible) or "not-needed"
        kwargs = {"api_key": key, "max_retries": 0, "timeout": ep.timeout_seconds}
        if ep.base_url:
            kwargs["base_url"] = ep.base_url
        return kwargs

    def request(self, messages, params):
        params = validate_params(dict(params))
        body = {"model": self.endpoint.model_id, "messages": messages}
        extra = {}
        for key, value in params.items():
            if key == "top_k":
                extra["top_k"] = value  # vLLM and llama.cpp accept it; OpenAI ignores extra_body it does not know
            else:
                body[key] = value
        if extra:
            body["extra_body"] = extra
        return body

    def parse(self, completion, started):
        """A ChatResult from a completion: the provider's JSON body as a dict (the live path reads it as it came,
        without building the SDK's ChatCompletion, about 0.13 ms of CPU a call; issue 36), or an SDK object."""
        data = completion if isinstance(completion, dict) else completion.model_dump(mode="json")
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content")
            finish = choice.get("finish_reason") or ""
        except (IndexError, KeyError, TypeError, AttributeError) as exc:
            raise ProviderError(
                f"The provider sent a response without a choice ({type(exc).__name__}: {exc}).",
                retryable=True,
                http_status=200,
            ) from exc
        check_text(text, finish)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return ChatResult(
            text=text,
            finish_reason=finish,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            raw=data,
            latency_ms=elapsed_ms(started),
            http_status=200,
        )

    async def acomplete(self, messages, params):
        started = time.perf_counter()
        try:
            if self._client is None:
                self._client = sdk_client(
                    openai.AsyncOpenAI, openai.DefaultAsyncHttpxClient, MAX_ANSWER_BYTES, **self.client_kwargs()
                )
            body = self.request(messages, params)
            extra = body.pop("extra_body", None)
            # The request `chat.completions.create` would send, without its per-call walk of the body through the
            # SDK's parameter types (about 0.2 ms of CPU a call): our bodies are plain JSON with no aliased keys, so
            # that walk returns them unchanged (tests/generation/runs/test_providers.py compares the two requests).
            completion = await self._client.post(
                "/chat/completions",
                body=body,
                options=make_request_options(
                    extra_headers=attempt_headers(), extra_body=extra, security={"bearer_auth": True}
                ),
                cast_to=bytes,  # the body as it came: parsed here, without the SDK's model (see parse)
            )
            return self.parse(json.loads(completion), started)
        except Exception as exc:
            raise sdk_error(exc, openai) from exc

    def complete(self, messages, params):
        started = time.perf_counter()
        try:
            with sdk_client(
                openai.OpenAI, openai.DefaultHttpxClient, MAX_ANSWER_BYTES, **self.client_kwargs()
            ) as client:
                completion = client.chat.completions.create(**self.request(messages, params))
            return self.parse(completion, started)
        except Exception as exc:
            raise sdk_error(exc, openai) from exc

    async def aclose(self):
        if self._client is not None:
            await self._client.close()
            self._client = None
