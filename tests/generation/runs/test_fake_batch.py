"""The fake batch service speaks the providers' batch APIs well enough for the real SDKs: uploads, creation,
status changes, per-request errors, expiry and cancellation."""

import io
import json

import anthropic
import openai


def openai_client(fake):
    return openai.OpenAI(api_key="sk-test", base_url=fake.openai_base_url, max_retries=0)


def anthropic_client(fake):
    return anthropic.Anthropic(api_key="sk-test", base_url=fake.anthropic_base_url, max_retries=0)


def jsonl(lines):
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def chat_line(cid, prompt):
    return {
        "custom_id": cid,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": prompt}], "seed": 7},
    }


def test_openai_batch_through_the_sdk_with_a_per_request_error(fake_provider):
    fake_provider.script([{"status": 500, "message": "boom"}], match="bad")
    client = openai_client(fake_provider)
    upload = client.files.create(
        file=("b.jsonl", io.BytesIO(jsonl([chat_line("output:1", "good one"), chat_line("output:2", "bad one")]))),
        purpose="batch",
    )
    batch = client.batches.create(
        input_file_id=upload.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"stereoscope_batch": "1"},
    )
    assert batch.status == "validating" and batch.request_counts.total == 2
    assert client.batches.retrieve(batch.id).status == "in_progress"
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed" and done.request_counts.completed == 1 and done.request_counts.failed == 1
    out = [json.loads(x) for x in client.files.content(done.output_file_id).text.splitlines()]
    err = [json.loads(x) for x in client.files.content(done.error_file_id).text.splitlines()]
    assert [o["custom_id"] for o in out] == ["output:1"]
    assert out[0]["response"]["body"]["choices"][0]["message"]["content"].endswith("good one")
    assert err[0]["custom_id"] == "output:2" and err[0]["response"]["status_code"] == 500
    assert fake_provider.batches.bodies()["output:1"]["seed"] == 7
    assert [b.id for b in client.batches.list().data] == [batch.id]


def test_openai_batch_expiry_and_cancel(fake_provider):
    client = openai_client(fake_provider)
    fake_provider.batches.hold = True
    ids = []
    for n in range(2):
        f = client.files.create(file=("b.jsonl", io.BytesIO(jsonl([chat_line(f"output:{n}", "x")]))), purpose="batch")
        ids.append(
            client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h").id
        )
    for bid in ids:
        assert client.batches.retrieve(bid).status == "in_progress"
    assert client.batches.retrieve(ids[0]).status == "in_progress"  # held
    assert client.batches.cancel(ids[0]).status == "cancelling"
    cancelled = client.batches.retrieve(ids[0])
    assert cancelled.status == "cancelled" and cancelled.output_file_id is None
    fake_provider.batches.expire_all()
    expired = client.batches.retrieve(ids[1])
    assert expired.status == "expired"
    err = json.loads(client.files.content(expired.error_file_id).text)
    assert err["error"]["code"] == "batch_expired" and err["custom_id"] == "output:1"


def test_openai_upload_needs_batch_purpose(fake_provider):
    client = openai_client(fake_provider)
    try:
        client.files.create(file=("b.jsonl", io.BytesIO(b"{}\n")), purpose="fine-tune")
    except openai.BadRequestError as exc:
        assert "purpose" in str(exc)
    else:
        raise AssertionError("a non-batch upload was accepted")


def test_anthropic_message_batch_through_the_sdk(fake_provider):
    fake_provider.script([{"status": 500}], match="bad")
    fake_provider.script([{"expire": True}], match="late")
    client = anthropic_client(fake_provider)
    requests = [
        {
            "custom_id": f"output:{i}",
            "params": {"model": "claude", "max_tokens": 50, "messages": [{"role": "user", "content": p}]},
        }
        for i, p in enumerate(["fine", "bad", "late"], 1)
    ]
    batch = client.messages.batches.create(requests=requests)
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 3
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert (ended.request_counts.succeeded, ended.request_counts.errored, ended.request_counts.expired) == (1, 1, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["output:1"].type == "succeeded" and results["output:1"].message.content[0].text.endswith("fine")
    assert results["output:2"].type == "errored" and results["output:3"].type == "expired"


def test_anthropic_cancel(fake_provider):
    client = anthropic_client(fake_provider)
    fake_provider.batches.hold = True
    batch = client.messages.batches.create(
        requests=[
            {
                "custom_id": "output:9",
                "params": {"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            }
        ]
    )
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
    assert [r.result.type for r in client.messages.batches.results(batch.id)] == ["canceled"]
    assert fake_provider.batches.cancelled == [batch.id]
