"""The batch half of the fake provider (tests/fake_provider.py serves it on the same port): OpenAI files + batches
and Anthropic message batches, driven through the real `openai` and `anthropic` SDKs.

OpenAI: POST /v1/files (multipart, purpose "batch"), GET /v1/files/{id}/content, POST /v1/batches (endpoint
/v1/chat/completions), GET /v1/batches[/{id}], POST /v1/batches/{id}/cancel. Statuses move validating ->
in_progress -> completed (or expired / cancelling -> cancelled) each time a batch is retrieved.
Anthropic: POST /v1/messages/batches, GET /v1/messages/batches/{id}[/results], POST .../cancel; processing_status
in_progress -> ended (or canceling -> ended).

Each request's answer comes from the provider's script (FakeProvider.script, matched on the prompt), so a scripted
{"status": 500} becomes a per-request error and {"expire": True} an expired request. `hold = True` keeps every
batch in progress until the test sets it back (`release()`); `expire_all()` makes open batches expire on their next
retrieve (requests without an answer come back expired).
"""
import itertools
import json
import re
import threading
import time
from datetime import datetime, timezone

OPENAI_OPEN = ("validating", "in_progress", "finalizing", "cancelling")


def _iso(ts):
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


def parse_multipart(headers, body):
    """{field name: bytes} of a multipart/form-data body (enough for the SDKs' file uploads)."""
    match = re.search(r'boundary="?([^";]+)"?', headers.get("content-type", ""))
    if not match:
        return {}
    boundary = b"--" + match.group(1).encode()
    fields = {}
    for part in body.split(boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name:
            fields[name.group(1).decode()] = content[:-2] if content.endswith(b"\r\n") else content
    return fields


class FakeBatches:
    def __init__(self, provider):
        self.provider = provider
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.files = {}          # id -> {"bytes", "purpose"}
        self.openai = {}         # id -> batch dict (+ "_lines")
        self.anthropic = {}      # id -> batch dict (+ "_requests", "_results")
        self.created = []        # (provider, batch id, [request bodies]) in creation order
        self.cancelled = []
        self.hold = False
        self._expire = False

    # -- test controls ---------------------------------------------------------------------------------------
    def release(self):
        self.hold = False

    def expire_all(self):
        self._expire = True

    def bodies(self):
        """Every request body submitted in any batch, keyed by custom_id."""
        with self.lock:
            return {cid: body for _, _, items in self.created for cid, body in items}

    # -- routing ---------------------------------------------------------------------------------------------
    def route(self, method, path, headers, body):
        """(status, payload or raw bytes) for a batch route, or None when the path is not one."""
        parts = path.strip("/").split("/")
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        if parts[:2] == ["messages", "batches"]:
            return self.anthropic_route(method, parts[2:], body)
        if parts[:1] == ["files"]:
            return self.files_route(method, parts[1:], headers, body)
        if parts[:1] == ["batches"]:
            return self.openai_route(method, parts[1:], body)
        return None

    def new_id(self, prefix):
        return f"{prefix}_{next(self.ids):05d}"

    # -- OpenAI ----------------------------------------------------------------------------------------------
    def files_route(self, method, rest, headers, body):
        if method == "POST" and not rest:
            fields = parse_multipart(headers, body)
            if fields.get("purpose", b"").decode() != "batch":
                return 400, {"error": {"message": "purpose must be batch"}}
            data = fields.get("file", b"")
            fid = self.new_id("file")
            with self.lock:
                self.files[fid] = {"bytes": data, "purpose": "batch"}
            return 200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                         "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}
        if method == "GET" and len(rest) == 2 and rest[1] == "content":
            f = self.files.get(rest[0])
            return (200, f["bytes"]) if f else (404, {"error": {"message": "no such file"}})
        return 404, {"error": {"message": "no such file route"}}

    def openai_route(self, method, rest, body):
        if method == "POST" and not rest:
            request = json.loads(body or b"{}")
            if request.get("endpoint") != "/v1/chat/completions":
                return 400, {"error": {"message": "only /v1/chat/completions batches are served"}}
            f = self.files.get(request.get("input_file_id", ""))
            if f is None:
                return 400, {"error": {"message": "input file not found"}}
            lines = [json.loads(line) for line in f["bytes"].decode().splitlines() if line.strip()]
            bid = self.new_id("batch")
            now = int(time.time())
            batch = {"id": bid, "object": "batch", "endpoint": request["endpoint"], "errors": None,
                     "input_file_id": request["input_file_id"], "completion_window": request.get("completion_window"),
                     "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": now,
                     "expires_at": now + 86400, "metadata": request.get("metadata"),
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "_lines": lines}
            with self.lock:
                self.openai[bid] = batch
                self.created.append(("openai", bid, [(ln["custom_id"], ln["body"]) for ln in lines]))
            return 200, self.public(batch)
        if method == "GET" and not rest:
            with self.lock:
                data = [self.public(b) for b in reversed(list(self.openai.values()))]
            return 200, {"object": "list", "data": data, "has_more": False}
        batch = self.openai.get(rest[0]) if rest else None
        if batch is None:
            return 404, {"error": {"message": "no such batch"}}
        if method == "POST" and rest[1:] == ["cancel"]:
            if batch["status"] in OPENAI_OPEN:
                batch["status"] = "cancelling"
                self.cancelled.append(batch["id"])
            return 200, self.public(batch)
        if method == "GET" and len(rest) == 1:
            self.advance_openai(batch)
            return 200, self.public(batch)
        return 404, {"error": {"message": "no such batch route"}}

    @staticmethod
    def public(batch):
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def advance_openai(self, batch):
        status = batch["status"]
        if status == "validating":
            batch["status"] = "in_progress"
        elif status == "in_progress" and (self._expire or not self.hold):
            self.end_openai(batch, "expired" if self._expire else "completed")
        elif status == "cancelling":
            self.end_openai(batch, "cancelled")

    def end_openai(self, batch, final):
        out, err = [], []
        for line in batch["_lines"]:
            cid, body = line["custom_id"], line["body"]
            if final in ("expired", "cancelled"):
                code = "batch_expired" if final == "expired" else "batch_cancelled"
                err.append({"id": self.new_id("req"), "custom_id": cid, "response": None,
                            "error": {"code": code, "message": f"This request was not run: the batch is {final}."}})
                continue
            spec, prompt, n = self.answer(body)
            if spec.get("expire"):
                err.append({"id": self.new_id("req"), "custom_id": cid, "response": None, "error": {
                    "code": "batch_expired", "message": "This request could not be executed in time."}})
            elif spec.get("status", 200) != 200:
                message = spec.get("message", f"scripted {spec['status']}")
                err.append({"id": self.new_id("req"), "custom_id": cid, "error": None, "response": {
                    "status_code": spec["status"], "request_id": f"r{n}",
                    "body": {"error": {"message": message, "type": "server_error"}}}})
            else:
                completion = self.provider.completion(body, spec, prompt, n, anthropic=False)
                out.append({"id": self.new_id("req"), "custom_id": cid, "error": None,
                            "response": {"status_code": 200, "request_id": f"r{n}", "body": completion}})
        batch["status"] = final
        batch[f"{final}_at" if final != "cancelled" else "cancelled_at"] = int(time.time())
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(out), "failed": len(err)}
        for key, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = self.new_id("file")
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                self.files[fid] = {"bytes": data, "purpose": "batch_output"}
                batch[key] = fid

    def answer(self, body):
        messages = body.get("messages") or []
        user = [m for m in messages if m.get("role") == "user"]
        content = user[-1]["content"] if user else ""
        prompt = content if isinstance(content, str) else json.dumps(content)
        responder = getattr(self.provider, "responder", None)
        spec = responder({"prompt": prompt, "body": body}) if responder else self.provider.next_response(prompt)
        return spec, prompt, next(self.provider.counter)

    # -- Anthropic -------------------------------------------------------------------------------------------
    def anthropic_route(self, method, rest, body):
        if method == "POST" and not rest:
            request = json.loads(body or b"{}")
            requests = request.get("requests") or []
            if not requests:
                return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "no requests"}}
            bid = self.new_id("msgbatch")
            now = time.time()
            batch = {"id": bid, "type": "message_batch", "processing_status": "in_progress", "created_at": _iso(now),
                     "expires_at": _iso(now + 86400), "ended_at": None, "archived_at": None,
                     "cancel_initiated_at": None, "results_url": None,
                     "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                                        "expired": 0}, "_requests": requests, "_results": None}
            with self.lock:
                self.anthropic[bid] = batch
                self.created.append(("anthropic", bid, [(r["custom_id"], r["params"]) for r in requests]))
            return 200, self.public(batch)
        if method == "GET" and not rest:
            with self.lock:
                data = [self.public(b) for b in reversed(list(self.anthropic.values()))]
            return 200, {"data": data, "has_more": False, "first_id": None, "last_id": None}
        batch = self.anthropic.get(rest[0]) if rest else None
        if batch is None:
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}}
        if method == "POST" and rest[1:] == ["cancel"]:
            if batch["processing_status"] == "in_progress":
                batch["processing_status"] = "canceling"
                batch["cancel_initiated_at"] = _iso(time.time())
                self.cancelled.append(batch["id"])
            return 200, self.public(batch)
        if method == "GET" and rest[1:] == ["results"]:
            if batch["_results"] is None:
                return 404, {"type": "error", "error": {"type": "not_found_error", "message": "not ended"}}
            return 200, "".join(json.dumps(r) + "\n" for r in batch["_results"]).encode()
        if method == "GET" and len(rest) == 1:
            self.advance_anthropic(batch)
            return 200, self.public(batch)
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": "no such route"}}

    def advance_anthropic(self, batch):
        status = batch["processing_status"]
        if status == "in_progress" and (self._expire or not self.hold):
            self.end_anthropic(batch, "expired" if self._expire else None)
        elif status == "canceling":
            self.end_anthropic(batch, "canceled")

    def end_anthropic(self, batch, forced):
        results = []
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for request in batch["_requests"]:
            cid, params = request["custom_id"], request["params"]
            if forced:
                result = {"type": forced}
            else:
                spec, prompt, n = self.answer(params)
                if spec.get("expire"):
                    result = {"type": "expired"}
                elif spec.get("status", 200) != 200:
                    result = {"type": "errored", "error": {"type": "error", "error": {
                        "type": "api_error", "message": spec.get("message", f"scripted {spec['status']}")}}}
                else:
                    result = {"type": "succeeded",
                              "message": self.provider.completion(params, spec, prompt, n, anthropic=True)}
            counts[result["type"]] += 1
            results.append({"custom_id": cid, "result": result})
        batch.update(processing_status="ended", ended_at=_iso(time.time()), request_counts=counts, _results=results,
                     results_url=f"{self.provider.anthropic_base_url}/v1/messages/batches/{batch['id']}/results")

