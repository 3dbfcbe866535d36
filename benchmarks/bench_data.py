"""The coded study the PostgreSQL benchmarks load (export_speed.py, coding_workspace.py): two coders, a toolkit of
30 items in 6 dimensions, 5 manual endpoints, one completed run, and its stories loaded with COPY.

Call these inside one `transaction.atomic()` block, so that a load that fails leaves nothing behind to be reused."""

import json
import uuid


def coded_study(name, coder_prefix, *, item_fields=None):
    """The study, its coders, items, endpoints and run (rows created through the ORM: they are few)."""
    from django.contrib.auth import get_user_model

    from generation.models import Dimension, GenerationRun, ModelEndpoint, PromptItem, Toolkit
    from stereoscope.models import Membership, Study

    study = Study.objects.create(name=name)
    coders = []
    for n in (1, 2):
        user, _ = get_user_model().objects.get_or_create(username=f"{coder_prefix}_{n}")
        Membership.objects.create(study=study, user=user, role="coder")
        coders.append(user)
    toolkit = Toolkit.objects.create(study=study, name="Bench toolkit")
    dims = [Dimension.objects.create(toolkit=toolkit, name=f"Dimension {d}", order=d) for d in range(6)]
    items = [
        PromptItem.objects.create(
            toolkit=toolkit,
            number=i + 1,
            text=f"Prompt {i + 1}",
            dimension=dims[i % 6],
            **(item_fields(i + 1) if item_fields else {}),
        )
        for i in range(30)
    ]
    endpoints = [
        ModelEndpoint.objects.create(study=study, name=f"model {m}", provider="manual", model_id=f"model-{m}")
        for m in range(5)
    ]
    run = GenerationRun.objects.create(study=study, name="Bench run", toolkit=toolkit, trials=1, status="completed")
    run.endpoints.set(endpoints)
    return {"study": study, "coders": coders, "items": items, "endpoints": endpoints, "run": run}


def copy_outputs(cursor, data, texts, n_outputs, now, provenance=None):
    """COPY `n_outputs` done stories into the run (item n % 30, endpoint by blocks of 30, texts in turn); returns
    their ids in order."""
    study, run, items, endpoints = data["study"], data["run"], data["items"], data["endpoints"]
    provenance = json.dumps(provenance or {})
    with cursor.connection.cursor().copy(
        "COPY generation_output (study_id, run_id, item_id, endpoint_id, model_name, trial, context_key, variant_key, "
        "slot_values, prompt_text, text, external_id, status, error, finish_reason, provenance, created_at) FROM STDIN"
    ) as copy:
        for n in range(n_outputs):
            item, endpoint = items[n % 30], endpoints[(n // 30) % 5]
            copy.write_row(
                (
                    study.pk,
                    run.pk,
                    item.pk,
                    endpoint.pk,
                    endpoint.model_id,
                    n // 150 + 1,
                    "",
                    "",
                    "{}",
                    item.text,
                    texts[n % len(texts)],
                    "",
                    "done",
                    "",
                    "stop",
                    provenance,
                    now,
                )
            )
    cursor.execute("SELECT id FROM generation_output WHERE study_id = %s ORDER BY id", [study.pk])
    return [row[0] for row in cursor.fetchall()]


def copy_codings(cursor, data, book, codes, output_ids, texts, per_output, now, rng, *, is_span, max_len):
    """COPY `per_output` codings per story, codes in turn, the two coders alternating: the k-th a span of up to
    `max_len` characters when `is_span(k)`, else document level."""
    coders = data["coders"]
    with cursor.connection.cursor().copy(
        'COPY annotation_coding (output_id, code_id, coder_id, codebook_id, start, "end", quote, guid, created_at, '
        "updated_at) FROM STDIN"
    ) as copy:
        for index, output_id in enumerate(output_ids):
            text = texts[index % len(texts)]
            for k in range(per_output):
                code, coder = codes[(index + k * 7) % len(codes)], coders[k % 2]
                start = end = None
                quote = ""
                if is_span(k):
                    start = rng.randrange(0, max(1, len(text) - max_len))
                    end = start + rng.randrange(5, max_len)
                    quote = text[start:end]
                copy.write_row((output_id, code.pk, coder.pk, book.pk, start, end, quote, uuid.uuid4(), now, now))
