"""The provider interface. Adapters turn (messages, params) into a ChatResult or raise ProviderError."""

import asyncio
import contextvars
import importlib.util
import math
import time
from dataclasses import dataclass, field

from stereoscope.untrusted import nonfinite_path, whole_number, without_nul

from ..key_variables import key_value, key_variable_problem

# Parameters an adapter may pass on; anything else in an endpoint's defaults is rejected with a clear message.
KNOWN_PARAMS = {"temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty", "frequency_penalty", "top_k"}


MAX_REPORTED_TOKENS = 10**9  # no call uses more; beyond it a count is not believed (the columns hold 2^31 - 1)


def reported_tokens(value):
    """A provider's token count as the platform keeps it: a whole number from 0 to MAX_REPORTED_TOKENS, else None
    (unknown). Usage figures are untrusted: a negative one would lower the spending ledger and open its caps."""
    return value if type(value) is int and 0 <= value <= MAX_REPORTED_TOKENS else None


@dataclass
class ChatResult:
    text: str
    finish_reason: str
    input_tokens: int | None
    output_tokens: int | None
    raw: dict | None
    latency_ms: int
    http_status: int | None = 200
    cost_usd: float | None = field(default=None)

    def __post_init__(self):
        """The provider's figures are untrusted: text must be text, a finish reason that is not text is dropped,
        token counts are checked (reported_tokens). A model may answer with NUL characters; they are dropped."""
        if not isinstance(self.text, str):
            raise ProviderError(
                f"The provider sent a completion with content that is not text ({type(self.text).__name__}).",
                retryable=True,
                http_status=200,
            )
        self.text, self.raw = without_nul(self.text), without_nul(self.raw)
        self.finish_reason = self.finish_reason if isinstance(self.finish_reason, str) else ""
        self.input_tokens, self.output_tokens = reported_tokens(self.input_tokens), reported_tokens(self.output_tokens)


class ProviderError(Exception):
    """A failed call. `retryable` says whether another attempt may succeed (429, 5xx, timeouts, bad bodies)."""

    def __init__(self, message, *, retryable=False, retry_after=None, http_status=None, raw=None):
        super().__init__(without_nul(message))  # error texts quote provider bodies; they are stored too
        self.retryable = retryable
        self.retry_after = retry_after
        self.http_status = http_status
        self.raw = without_nul(raw)


MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a live answer's body; the longest completions are well under 1 MB


def sdk_client(client_class, http_client_class, max_body=None, **kwargs):
    """An SDK client (openai or anthropic, sync or async) that never follows a redirect. The SDKs follow redirects
    by default, and httpx keeps every header but Authorization on a redirect to another host: Anthropic's x-api-key
    (and, for a 307 or 308, the prompts) would go wherever an approved host pointed. A redirect is then an answer
    like any other status that is not a success ("HTTP 307 from the provider").

    With `max_body` (bytes), an answer's body is bounded: it is asked for unencoded, and one that is encoded anyway,
    or longer than `max_body`, is a ProviderError before more of it is read (the SDKs hold a whole body in memory)."""
    extra = {}
    if max_body:
        import httpx2  # lazy: the SDKs' HTTP library, loaded with them (0.5-1.5 s)

        asynchronous = issubclass(http_client_class, httpx2.AsyncClient)
        hook = _bounded_body_hook(httpx2, max_body, asynchronous)
        extra = {"event_hooks": {"response": [hook]}, "headers": {"Accept-Encoding": "identity"}}
    return client_class(**kwargs, http_client=http_client_class(follow_redirects=False, **extra))


def _answer_too_large(limit):
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return ProviderError(f"The provider's answer is larger than {size}; it was not read.", retryable=False)


def _check_answer_headers(response, limit):
    """Refuse an answer that is encoded (none was asked for) or declares a length over `limit`."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise ProviderError(
            f"The provider sent an encoded answer ({encoding[:40]}) though none was asked for.", retryable=False
        )
    declared = whole_number(response.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise _answer_too_large(limit)


def _counted(chunks, limit):
    """The chunks of a body, refused once more than `limit` bytes have come."""
    read = 0
    for chunk in chunks:
        read += len(chunk)
        if read > limit:
            raise _answer_too_large(limit)
        yield chunk


async def _acounted(chunks, limit):
    read = 0
    async for chunk in chunks:
        read += len(chunk)
        if read > limit:
            raise _answer_too_large(limit)
        yield chunk


def _bounded_body_hook(httpx2, limit, asynchronous):
    """An httpx response hook that checks an answer's headers, then wraps its body's stream in one that counts."""

    class AsyncBounded(httpx2.AsyncByteStream):
        def __init__(self, stream):
            self.stream = stream

        def __aiter__(self):
            return _acounted(self.stream, limit)

        async def aclose(self):
            await self.stream.aclose()

    class SyncBounded(httpx2.SyncByteStream):
        def __init__(self, stream):
            self.stream = stream

        def __iter__(self):
            return _counted(self.stream, limit)

        def close(self):
            self.stream.close()

    async def async_hook(response):
        _check_answer_headers(response, limit)
        response.stream = AsyncBounded(response.stream)

    def sync_hook(response):
        _check_answer_headers(response, limit)
        response.stream = SyncBounded(response.stream)

    return async_hook if asynchronous else sync_hook


LOCAL_EXTRA_PACKAGES = ("torch", "transformers")


def missing_local_extra():
    """The packages of the 'local' extra this server lacks (found without importing them: torch is slow to load)."""
    return [name for name in LOCAL_EXTRA_PACKAGES if not _importable(name)]


def _importable(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False


def local_extra_message(missing):
    return (
        f"The transformers backend needs the 'local' extra on this server ({', '.join(missing)} not installed): "
        "pip install -e .[local]"
    )


def require_local_extra():
    missing = missing_local_extra()
    if missing:
        raise ProviderError(local_extra_message(missing), retryable=False)


class ChatProvider:
    """Base adapter. Subclasses implement `acomplete` (async) and may override `complete` (sync)."""

    name = "base"

    def __init__(self, endpoint):
        self.endpoint = endpoint

    def api_key(self, required=True):
        """The key from the environment variable of the endpoint's connection; never stored anywhere else. Asked
        whenever a client is built, so no request (with or without a key) goes to a host staff did not approve."""
        connection = getattr(self.endpoint, "connection", None)
        if connection is None:
            raise ProviderError(
                f"Endpoint “{self.endpoint.name}” has no provider connection; choose one staff approved.",
                retryable=False,
            )
        if getattr(connection, "status", "") != "approved":
            raise ProviderError(
                f"The connection “{connection.name}” of “{self.endpoint.name}” is waiting for approval by site staff.",
                retryable=False,
            )
        var = (self.endpoint.api_key_env or "").strip()
        if not var:
            if required:
                raise ProviderError(f"Endpoint “{self.endpoint.name}” names no API key variable.", retryable=False)
            return None
        problem = key_variable_problem(var)
        if problem:  # the allow-list may have changed since the endpoint was saved: never send such a value
            raise ProviderError(f"Endpoint “{self.endpoint.name}”: {problem}", retryable=False)
        value = key_value(var)
        if not value:
            if required:
                raise ProviderError(
                    f"The environment variable {var} (API key of “{self.endpoint.name}”) is not set.", retryable=False
                )
            return None
        return value

    def complete(self, messages, params):
        """Synchronous call. Runs the async twin on a private loop in a thread, so it works under any event loop."""
        box = {}

        def target():
            try:
                box["result"] = asyncio.run(self._complete_once(messages, params))
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        import threading

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]

    async def _complete_once(self, messages, params):
        try:
            return await self.acomplete(messages, params)
        finally:
            await self.aclose()

    async def acomplete(self, messages, params):  # pragma: no cover - abstract
        raise NotImplementedError

    async def aclose(self):
        """Release clients (connection pools) held by the adapter."""


def merged_params(endpoint, overrides=None):
    """The endpoint's default parameters updated by per-run or per-call overrides (None values drop a key)."""
    params = dict(endpoint.default_params or {})
    for key, value in (overrides or {}).items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = value
    return params


def validate_params(params):
    """Raise ProviderError for unknown or ill-typed parameters before any call is spent."""
    unknown = sorted(set(params) - KNOWN_PARAMS)
    if unknown:
        raise ProviderError(f"Unknown parameter(s): {', '.join(unknown)}. Known: {', '.join(sorted(KNOWN_PARAMS))}.")
    for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        if key in params and not isinstance(params[key], (int, float)):
            raise ProviderError(f"Parameter {key} must be a number, got {params[key]!r}.")
        if key in params and not math.isfinite(params[key]):
            raise ProviderError(f"Parameter {key} must be a finite number, got {params[key]!r}.")
    for key, value in params.items():  # NaN or ±Infinity anywhere is no JSON
        if nonfinite_path(value) is not None:
            raise ProviderError(f"Parameter {key} holds NaN or Infinity; write a finite number.")
    for key in ("max_tokens", "seed", "top_k"):
        if key in params and (not isinstance(params[key], int) or isinstance(params[key], bool)):
            raise ProviderError(f"Parameter {key} must be an integer, got {params[key]!r}.")
    if "stop" in params and not isinstance(params["stop"], (str, list)):
        raise ProviderError("Parameter stop must be a string or a list of strings.")
    return params


def elapsed_ms(started):
    return int((time.perf_counter() - started) * 1000)


# Each request names its attempt row (ProviderCall id) in this header, so the product's attempts can be reconciled
# with a provider's or gateway's request log: after a worker was killed, an attempt left "unknown" whose id the
# provider never received is one written in the instant before its request would have gone out.
ATTEMPT_HEADER = "X-Stereoscope-Attempt"
current_attempt = contextvars.ContextVar("current_attempt", default=None)


def attempt_headers():
    """The header naming the attempt row of the request being sent (set by the runner), or none."""
    attempt = current_attempt.get()
    return {ATTEMPT_HEADER: str(attempt)} if attempt is not None else {}


NETWORK_ADAPTERS = ("openai_provider", "anthropic_provider")


def preload():
    """Import the network providers' adapters and their SDKs now. Each SDK takes 0.5–1.5 s to import; a worker
    that imports it lazily does so on the event loop of its first job, while that job's requests wait."""
    for name in NETWORK_ADAPTERS:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ImportError:  # an SDK missing here fails the endpoints that need it, with its own message
            pass


def get_provider(endpoint):
    """The adapter for an endpoint's provider."""
    provider = endpoint.provider
    if provider in ("openai", "openai_compatible"):
        from .openai_provider import OpenAIProvider

        return OpenAIProvider(endpoint)
    if provider == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(endpoint)
    if provider == "transformers":
        from .transformers_provider import TransformersProvider

        return TransformersProvider(endpoint)
    if provider == "manual":
        from .manual import ManualProvider

        return ManualProvider(endpoint)
    raise ProviderError(f"Unknown provider {provider!r}.")
