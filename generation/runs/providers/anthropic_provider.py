"""Anthropic through the anthropic SDK (messages API). System messages move to the `system` field."""

import time

import anthropic

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
from .openai_provider import check_text, sdk_error

DEFAULT_MAX_TOKENS = 1024


class AnthropicProvider(ChatProvider):
    name = "anthropic"

    def __init__(self, endpoint):
        super().__init__(endpoint)
        self._client = None

    def client_kwargs(self):
        ep = self.endpoint
        kwargs = {"api_key": self.api_key(), "max_retries": 0, "timeout": ep.timeout_seconds}
        if ep.base_url:
            kwargs["base_url"] = ep.base_url
        return kwargs

    def request(self, messages, params):
        params = validate_params(dict(params))
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body = {
            "model": self.endpoint.model_id,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"],
            "max_tokens": params.pop("max_tokens", DEFAULT_MAX_TOKENS),
        }
        if system:
            body["system"] = system
        stop = params.pop("stop", None)
        if stop:
            body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        params.pop("seed", None)  # the messages API has no seed; the attempt record keeps what was asked
        params.pop("presence_penalty", None)
        params.pop("frequency_penalty", None)
        if params:  # temperature, top_p, top_k: sent as-is; this SDK version leaves them out of its signature
            body["extra_body"] = params
        return body

    def parse(self, message, started):
        try:
            text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        except (AttributeError, TypeError) as exc:
            raise ProviderError(
                f"The provider sent a message without text content ({exc}).", retryable=True, http_status=200
            ) from exc
        finish = message.stop_reason if isinstance(message.stop_reason, str) else ""  # untrusted: text or nothing
        check_text(text, finish)
        finish = {"end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}.get(finish, finish)
        usage = getattr(message, "usage", None)
        return ChatResult(
            text=text,
            finish_reason=finish,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            raw=message.model_dump(mode="json"),
            latency_ms=elapsed_ms(started),
            http_status=200,
        )

    async def acomplete(self, messages, params):
        started = time.perf_counter()
        try:
            if self._client is None:
                self._client = sdk_client(
                    anthropic.AsyncAnthropic,
                    anthropic.DefaultAsyncHttpxClient,
                    MAX_ANSWER_BYTES,
                    **self.client_kwargs(),
                )
            message = await self._client.messages.create(
                **self.request(messages, params), extra_headers=attempt_headers()
            )
            return self.parse(message, started)
        except Exception as exc:
            raise sdk_error(exc, anthropic) from exc

    def complete(self, messages, params):
        started = time.perf_counter()
        try:
            with sdk_client(
                anthropic.Anthropic, anthropic.DefaultHttpxClient, MAX_ANSWER_BYTES, **self.client_kwargs()
            ) as client:
                message = client.messages.create(**self.request(messages, params))
            return self.parse(message, started)
        except Exception as exc:
            raise sdk_error(exc, anthropic) from exc

    async def aclose(self):
        if self._client is not None:
            await self._client.close()
            self._client = None
