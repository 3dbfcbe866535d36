"""Builders shared by the rough-edges tests: a run over several endpoints and a codebook with several codings."""

from generation.models import GenerationRun, Output


def run_with_endpoints(study, toolkit, endpoints, done_per_endpoint):
    """A run of the toolkit's items over every endpoint; the first `done_per_endpoint` items of each are done."""
    run = GenerationRun.objects.create(study=study, name="Multi-endpoint run", toolkit=toolkit, status="completed")
    run.endpoints.set(endpoints)
    for endpoint in endpoints:
        for i, item in enumerate(toolkit.items.order_by("number")):
            Output.objects.create(
                study=study,
                run=run,
                item=item,
                endpoint=endpoint,
                model_name=endpoint.model_id,
                text="A story." if i < done_per_endpoint else "",
                status="done" if i < done_per_endpoint else "failed",
            )
    return run


def code_outputs(study, codebook, codes, outputs, coder):
    from annotation import services

    for output in outputs:
        for code in codes:
            services.create_coding(study=study, codebook=codebook, output=output, code=code, coder=coder)
