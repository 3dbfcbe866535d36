"""A fake LLM provider: a real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions and the Anthropic
messages wire formats, so tests drive the real `openai` and `anthropic` SDKs against it.

Scriptable per test (in-process through methods, or from another process through /_control/*):

    server.script([{"status": 429, "retry_after": 1}, {"text": "Once upon a time"}], match="nurse")

queues responses for requests whose last user message contains "nurse" (any request without `match`). A response
may set: text, delay (s), status, retry_after, finish_reason, usage, empty (no content), malformed (a non-JSON
body), hang (sleep this long before answering: a client timeout), close (drop the connection).
Unscripted requests get `default` after `default_delay` seconds; a test may set `responder(request)` to compute
each answer instead. The server counts requests in flight (overall and per model) so tests assert concurrency
limits from the server's side, not from wall-clock timings.

The batch APIs are served by tests/fake_batch.py (`server.batches`).

Run standalone (used by the benchmark): python tests/fake_provider.py --port 0 --delay 0.25
"""

import argparse
import asyncio
import itertools
import json
import threading
import time

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    408: "Request Timeout",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


class FakeProvider:
    def __init__(self, host="127.0.0.1", port=0, default_delay=0.0, record=True):
        self.host, self.port = host, port
        self.default_delay = default_delay
        self.record = record
        self.lock = threading.Lock()
        self.loop = None
        self.thread = None
        self._server = None
        self.reset()

    # -- scripting and inspection ------------------------------------------------------------------------------
    def reset(self):
        with self.lock:
            self.rules = []  # [match, [responses]]
            self.requests = []  # one dict per request, in arrival order
            self.in_flight = 0
            self.max_in_flight = 0
            self.in_flight_by_model = {}
            self.max_in_flight_by_model = {}
            self.counter = itertools.count(1)
            self.default = {}
            self.responder = None  # optional fn({"prompt", "body"}) -> response: answers computed per request
        try:  # the batch APIs (OpenAI files + batches, Anthropic message batches)
            from tests.fake_batch import FakeBatches
        except ImportError:  # run standalone from tests/
            from fake_batch import FakeBatches

        self.batches = FakeBatches(self)

    def script(self, responses, match=None):
        with self.lock:
            self.rules.append([match, list(responses)])

    def stats(self):
        with self.lock:
            return {
                "requests": len(self.requests),
                "max_in_flight": self.max_in_flight,
                "max_in_flight_by_model": dict(self.max_in_flight_by_model),
                "in_flight": self.in_flight,
            }

    def requests_for(self, match):
        with self.lock:
            return [r for r in self.requests if match in r["prompt"]]

    @property
    def openai_base_url(self):
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic_base_url(self):
        return f"http://{self.host}:{self.port}"

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self):
        ready = threading.Event()

        def run():
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            self._server = self.loop.run_until_complete(
                asyncio.start_server(self.handle, self.host, self.port, backlog=1024, reuse_address=True)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self._server.close()
            self.loop.run_until_complete(self._server.wait_closed())
            self.loop.close()

        self.thread = threading.Thread(target=run, name="fake-provider", daemon=True)
        self.thread.start()
        ready.wait(10)
        return self

    def stop(self):
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    # -- HTTP ------------------------------------------------------------------------------------------------
    async def handle(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                keep = await self.respond(method, path, headers, body, writer)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def send(self, writer, status, payload, extra_headers=None, raw=None):
        data = raw if raw is not None else json.dumps(payload).encode()
        head = [
            f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
            "content-type: application/json",
            f"content-length: {len(data)}",
            "connection: keep-alive",
        ]
        head += [f"{k}: {v}" for k, v in (extra_headers or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    def next_response(self, prompt):
        with self.lock:
            for match, responses in self.rules:
                if responses and (match is None or match in prompt):
                    return dict(responses.pop(0))
            return dict(self.default)

    async def respond(self, method, path, headers, body, writer):
        path = path.split("?")[0]
        if path.startswith("/_control/"):
            return await self.control(path, body, writer)
        routed = self.batches.route(method, path, headers, body)
        if routed is not None:
            status, payload = routed
            if isinstance(payload, bytes):
                self.send(writer, status, None, raw=payload)
            else:
                self.send(writer, status, payload)
            await writer.drain()
            return True
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/messages", "/chat/completions", "/messages"):
            self.send(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return True
        anthropic = path.endswith("/messages")
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self.send(writer, 400, {"error": {"message": "request body is not JSON"}})
            return True
        messages = request.get("messages") or []
        user = [m for m in messages if m.get("role") == "user"]
        content = user[-1]["content"] if user else ""
        prompt = content if isinstance(content, str) else json.dumps(content)
        model = request.get("model", "")
        spec = self.responder({"prompt": prompt, "body": request}) if self.responder else self.next_response(prompt)
        n = next(self.counter)
        entry = {
            "n": n,
            "t": time.monotonic(),
            "path": path,
            "model": model,
            "prompt": prompt,
            "body": request,
            "auth": headers.get("authorization") or headers.get("x-api-key", ""),
            "attempt": headers.get("x-stereoscope-attempt", ""),  # the product's attempt row id
            "status": spec.get("status", 200),
        }
        with self.lock:
            if self.record:
                self.requests.append(entry)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            now = self.in_flight_by_model[model] = self.in_flight_by_model.get(model, 0) + 1
            self.max_in_flight_by_model[model] = max(self.max_in_flight_by_model.get(model, 0), now)
        try:
            delay = spec.get("hang", spec.get("delay", self.default_delay))
            if delay:
                await asyncio.sleep(delay)
            if spec.get("close"):
                return False
            status = spec.get("status", 200)
            extra = {}
            if "retry_after" in spec:
                extra["retry-after"] = str(spec["retry_after"])
            if spec.get("malformed"):
                self.send(writer, status, None, extra, raw=b'{"id": "broken", "choices": [ {"mess')
            elif status != 200:
                message = spec.get("message", f"scripted {status}")
                payload = (
                    {
                        "type": "error",
                        "error": {"type": "rate_limit_error" if status == 429 else "api_error", "message": message},
                    }
                    if anthropic
                    else {"error": {"message": message, "type": "server_error", "code": status}}
                )
                self.send(writer, status, payload, extra)
            else:
                self.send(writer, 200, self.completion(request, spec, prompt, n, anthropic), extra)
            await writer.drain()
            entry["t_end"] = time.monotonic()
            return True
        finally:
            with self.lock:
                self.in_flight = max(0, self.in_flight - 1)  # a reset() may have happened meanwhile
                self.in_flight_by_model[model] = max(0, self.in_flight_by_model.get(model, 0) - 1)

    def completion(self, request, spec, prompt, n, anthropic):
        text = "" if spec.get("empty") else spec.get("text", f"Story {n}. Answer to: {prompt}")
        finish = spec.get("finish_reason", "stop")
        usage = spec.get("usage") or {"input": max(1, len(prompt) // 4), "output": max(1, len(str(text)) // 4)}
        model = request.get("model", "")
        if anthropic:
            stop = (
                {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish) if isinstance(finish, str) else finish
            )
            return {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": usage["input"], "output_tokens": usage["output"]},
            }
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": usage["input"],
                "completion_tokens": usage["output"],
                "total_tokens": usage["input"] + usage["output"]
                if all(type(usage[k]) is int for k in ("input", "output"))
                else None,  # a test's implausible usage figures are sent as they are
            },
        }

    async def control(self, path, body, writer):
        data = json.loads(body or b"{}")
        if path == "/_control/reset":
            self.reset()
            if "default_delay" in data:
                self.default_delay = float(data["default_delay"])
        elif path == "/_control/script":
            self.script(data.get("responses", []), data.get("match"))
        self.send(writer, 200, self.stats())
        return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--no-record", action="store_true", help="keep no per-request log (long benchmarks)")
    args = parser.parse_args()
    server = FakeProvider(port=args.port, default_delay=args.delay, record=not args.no_record).start()
    print(f"PORT {server.port}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
