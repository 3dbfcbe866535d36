"""Each discovery made before discoveries were jobs becomes a job with one request (its endpoint, sample, prompt,
answer and call); its suggestions belong to that request. Statuses map to the job's: done -> completed,
failed -> failed, pending or running -> cancelled (Resume asks the model)."""

from django.db import migrations

STATUS = {"done": ("completed", "done"), "failed": ("failed", "failed")}


def forwards(apps, schema_editor):
    CodeDiscovery = apps.get_model("annotation", "CodeDiscovery")
    DiscoveryRequest = apps.get_model("annotation", "DiscoveryRequest")
    CodeSuggestion = apps.get_model("annotation", "CodeSuggestion")
    for d in CodeDiscovery.objects.order_by("pk").iterator():
        job_status, request_status = STATUS.get(d.status, ("cancelled", "pending"))
        request = DiscoveryRequest.objects.create(
            discovery=d,
            number=1,
            endpoint_id=d.endpoint_id,
            group=1,
            output_ids=d.output_ids,
            messages=d.messages,
            status=request_status,
            error=d.error,
            response_text=d.response_text,
            provider_call_id=d.provider_call_id,
            finished_at=d.finished_at if request_status != "pending" else None,
        )
        if d.endpoint_id:
            d.endpoints.add(d.endpoint_id)
        CodeSuggestion.objects.filter(discovery=d).update(request=request)
        message = d.error if job_status == "failed" else ""
        if job_status == "cancelled":
            message = "Interrupted before discoveries were jobs; resume to ask the model."
        CodeDiscovery.objects.filter(pk=d.pk).update(
            status=job_status, message=message, started_at=d.created_at, started_by_id=d.created_by_id
        )


def backwards(apps, schema_editor):
    CodeDiscovery = apps.get_model("annotation", "CodeDiscovery")
    DiscoveryRequest = apps.get_model("annotation", "DiscoveryRequest")
    back = {"completed": "done", "failed": "failed"}
    for d in CodeDiscovery.objects.order_by("pk").iterator():
        request = DiscoveryRequest.objects.filter(discovery=d).order_by("number").first()
        fields = {"status": back.get(d.status, "pending")}
        if request is not None:
            fields.update(
                endpoint_id=request.endpoint_id,
                output_ids=request.output_ids,
                messages=request.messages,
                error=request.error or d.message,
                response_text=request.response_text,
                provider_call_id=request.provider_call_id,
            )
        CodeDiscovery.objects.filter(pk=d.pk).update(**fields)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0009_discovery_job")]

    operations = [migrations.RunPython(forwards, backwards)]
