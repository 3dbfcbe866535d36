"""The providers' batch APIs through the official SDKs: OpenAI (a JSONL file uploaded with purpose "batch", then a
batch on /v1/chat/completions; OpenAI-compatible servers that implement it too) and Anthropic (message batches).

Request bodies come from the live adapters' `request()`, so batch mode sends exactly what live mode would.
Every result comes back keyed by its custom_id as a ChatResult or a ProviderError (`expired` marks requests that
were never run: batch expiry or cancellation).
"""

import io
import json
import time
from dataclasses import dataclass, field

from ..batch_format import wire_body
from .base import ProviderError, sdk_client

OPENAI_OPEN = {
    "validating": "submitted",
    "in_progress": "in_progress",
    "finalizing": "in_progress",
    "cancelling": "cancelling",
}
OPENAI_ENDED = {"completed": "ended", "expired": "expired", "cancelled": "cancelled", "failed": "failed"}


@dataclass
class BatchState:
    status: str  # one of generation.models.BatchStatus (never "submitting")
    provider_status: str
    counts: dict = field(default_factory=dict)
    ended: bool = False
    error: str = ""


@dataclass
class BatchResult:
    custom_id: str
    result: object = None  # ChatResult
    error: ProviderError | None = None
    expired: bool = False
    raw: dict | None = None


class OpenAIBatchAPI:
    url = "/v1/chat/completions"

    def __init__(self, endpoint):
        from .openai_provider import OpenAIProvider  # lazy: its module imports the SDK (0.5-1.5 s)

        self.live = OpenAIProvider(endpoint)

    def client(self):
        import openai  # lazy: an SDK takes 0.5-1.5 s to import; workers warm it up

        kwargs = self.live.client_kwargs()
        kwargs["max_retries"] = 2
        return sdk_client(openai.OpenAI, openai.DefaultHttpxClient, **kwargs)

    def line(self, cid, messages, params):
        body = wire_body(self.live.request(messages, params))
        return {"custom_id": cid, "method": "POST", "url": self.url, "body": body}

    @staticmethod
    def body(line):
        return line["body"]

    def submit(self, lines, metadata):
        """(provider batch id, input file id)."""
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        with self.client() as client:
            upload = client.files.create(file=("stereoscope-batch.jsonl", io.BytesIO(data)), purpose="batch")
            batch = client.batches.create(
                input_file_id=upload.id, endpoint=self.url, completion_window="24h", metadata=metadata
            )
        return batch.id, upload.id

    def find(self, metadata):
        """The id of a batch created with this metadata (a submission cut short by a crash), or None."""
        with self.client() as client:
            for batch in client.batches.list(limit=100).data:
                if all((batch.metadata or {}).get(k) == v for k, v in metadata.items()):
                    return batch.id
        return None

    def retrieve(self, batch_id):
        with self.client() as client:
            batch = client.batches.retrieve(batch_id)
        counts = batch.request_counts.model_dump() if batch.request_counts else {}
        errors = "; ".join(e.message or "" for e in (batch.errors.data or [])) if batch.errors else ""
        if batch.status in OPENAI_ENDED:
            return BatchState(OPENAI_ENDED[batch.status], batch.status, counts, True, errors)
        return BatchState(OPENAI_OPEN.get(batch.status, "in_progress"), batch.status, counts, False, errors)

    def results(self, batch_id):
        import openai  # lazy: an SDK takes 0.5-1.5 s to import; workers warm it up

        with self.client() as client:
            batch = client.batches.retrieve(batch_id)
            texts = [client.files.content(fid).text for fid in (batch.output_file_id, batch.error_file_id) if fid]
        for text in texts:
            for raw_line in text.splitlines():
                if not raw_line.strip():
                    continue
                row = json.loads(raw_line)
                yield self.one(row, openai)

    def one(self, row, openai):
        cid = row.get("custom_id", "")
        error, response = row.get("error"), row.get("response")
        if error:
            code = error.get("code") or ""
            expired = code in ("batch_expired", "batch_cancelled")
            return BatchResult(
                cid,
                error=ProviderError(f"{code}: {error.get('message', '')}", retryable=True),
                expired=expired,
                raw=row,
            )
        status = (response or {}).get("status_code")
        body = (response or {}).get("body") or {}
        if status != 200:
            message = (body.get("error") or {}).get("message") if isinstance(body, dict) else str(body)
            return BatchResult(
                cid,
                error=ProviderError(
                    f"HTTP {status} from the provider: {message}", retryable=True, http_status=status, raw=body
                ),
                raw=row,
            )
        try:
            completion = openai.types.chat.ChatCompletion.model_validate(body)
            result = self.live.parse(completion, time.perf_counter())
        except ProviderError as exc:
            return BatchResult(cid, error=exc, raw=row)
        except Exception as exc:
            return BatchResult(cid, error=ProviderError(f"Unreadable batch result: {exc}", retryable=True), raw=row)
        result.http_status = status
        return BatchResult(cid, result=result, raw=row)

    def cancel(self, batch_id):
        with self.client() as client:
            client.batches.cancel(batch_id)


class AnthropicBatchAPI:
    def __init__(self, endpoint):
        from .anthropic_provider import AnthropicProvider  # lazy: its module imports the SDK (0.5-1.5 s)

        self.live = AnthropicProvider(endpoint)

    def client(self):
        import anthropic  # lazy: an SDK takes 0.5-1.5 s to import; workers warm it up

        kwargs = self.live.client_kwargs()
        kwargs["max_retries"] = 2
        return sdk_client(anthropic.Anthropic, anthropic.DefaultHttpxClient, **kwargs)

    def line(self, cid, messages, params):
        return {"custom_id": cid, "params": wire_body(self.live.request(messages, params))}

    @staticmethod
    def body(line):
        return line["params"]

    def submit(self, lines, metadata):
        with self.client() as client:
            batch = client.messages.batches.create(requests=lines)
        return batch.id, ""

    def find(self, metadata, created_after=None, request_count=None, known=()):
        """Anthropic batches carry no metadata: adopt the one batch created after the submission began with the
        same request count that no row knows yet (None when there is not exactly one)."""
        with self.client() as client:
            found = [
                b.id
                for b in client.messages.batches.list(limit=100).data
                if b.id not in known
                and (created_after is None or b.created_at >= created_after)
                and (request_count is None or sum(b.request_counts.model_dump().values()) == request_count)
            ]
        return found[0] if len(found) == 1 else None

    def retrieve(self, batch_id):
        with self.client() as client:
            batch = client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts.model_dump()
        if batch.processing_status == "ended":
            if batch.cancel_initiated_at is not None:
                status = "cancelled"
            elif counts.get("expired") and not counts.get("succeeded") and not counts.get("errored"):
                status = "expired"
            else:
                status = "ended"
            return BatchState(status, "ended", counts, True)
        status = "cancelling" if batch.processing_status == "canceling" else "in_progress"
        return BatchState(status, batch.processing_status, counts, False)

    def results(self, batch_id):
        with self.client() as client:
            rows = list(client.messages.batches.results(batch_id))
        for row in rows:
            yield self.one(row)

    def one(self, row):
        cid, result = row.custom_id, row.result
        raw = row.model_dump(mode="json")
        if result.type == "succeeded":
            try:
                chat = self.live.parse(result.message, time.perf_counter())
            except ProviderError as exc:
                return BatchResult(cid, error=exc, raw=raw)
            return BatchResult(cid, result=chat, raw=raw)
        if result.type == "errored":
            detail = raw.get("result", {}).get("error", {}).get("error", {})
            return BatchResult(
                cid,
                error=ProviderError(f"{detail.get('type', 'error')}: {detail.get('message', '')}", retryable=True),
                raw=raw,
            )
        return BatchResult(
            cid, error=ProviderError(f"{result.type}: the request was not run.", retryable=True), expired=True, raw=raw
        )

    def cancel(self, batch_id):
        with self.client() as client:
            client.messages.batches.cancel(batch_id)


def batch_api(endpoint):
    if endpoint.provider in ("openai", "openai_compatible"):
        return OpenAIBatchAPI(endpoint)
    if endpoint.provider == "anthropic":
        return AnthropicBatchAPI(endpoint)
    raise ProviderError(f"“{endpoint.name}” ({endpoint.provider}) has no batch API.")
