"""Export datasets of the generation app: outputs (stories) with their provenance."""
from stereoscope.datasets import Column, register_dataset

from .models import Output

OUTPUT_COLUMNS = (
    Column("output_id", "Stereoscope id of the output (story or answer)."),
    Column("run_id", "Generation run id (see manifest.json generation_runs for every parameter)."),
    Column("run_name", "Generation run name."),
    Column("toolkit", "Toolkit name."),
    Column("toolkit_version", "Toolkit version the run used."),
    Column("item_number", "Prompt item number in the toolkit."),
    Column("dimension", "Toolkit dimension of the item."),
    Column("target_stereotype", "The stereotype the item targets."),
    Column("gender_mapping", "Expected gender mapping of the item, e.g. 'F = protected, M = challenged'."),
    Column("reversed_order", "1 if the item is a counterbalanced (reversed-order) item."),
    Column("endpoint", "Model endpoint name."),
    Column("provider", "Provider adapter (openai, anthropic, openai_compatible, transformers, manual)."),
    Column("model", "Model that wrote the text (declared model for manual or imported text)."),
    Column("trial", "Trial (repetition) number, from 1."),
    Column("context", "Key of the context (e.g. persona) the prompt was asked in; empty without contexts."),
    Column("variant_key", "Canonical slot values of this prompt variant; empty without slots."),
    Column("slot_values", "Slot values as JSON."),
    Column("prompt", "The rendered prompt sent to the model."),
    Column("text", "The output text (line endings \\n; offsets in codings count code points into it)."),
    Column("status", "pending, in_flight, done or failed."),
    Column("error", "Why the unit failed or was truncated."),
    Column("finish_reason", "Provider finish reason (stop, length, ...)."),
    Column("input_tokens", "Prompt tokens reported by the provider."),
    Column("output_tokens", "Completion tokens reported by the provider."),
    Column("cost_usd", "Cost in USD from the endpoint's prices."),
    Column("latency_ms", "Latency of the successful call in milliseconds."),
    Column("params", "The exact generation parameters of the call, as JSON."),
    Column("source", "generated, manual, or imported (with the file in provenance)."),
    Column("provenance", "Full provenance record as JSON (provider, model, params, messages, import source)."),
    Column("external_id", "Id of the text in the source it was imported from."),
    Column("created_at", "When the unit was created (ISO 8601, UTC)."),
    Column("completed_at", "When the text arrived (ISO 8601, UTC)."),
)


def filtered_outputs(study, options):
    """Outputs of a study narrowed by the export filters run_ids, models and item_numbers."""
    qs = Output.objects.filter(study=study)
    if options.get("run_ids"):
        qs = qs.filter(run_id__in=options["run_ids"])
    if options.get("models"):
        qs = qs.filter(model_name__in=options["models"])
    if options.get("item_numbers"):
        qs = qs.filter(item__number__in=options["item_numbers"])
    return qs


FIELDS = ["pk", "run_id", "run__name", "run__toolkit__name", "run__toolkit__version", "item__number",
          "item__dimension__name", "item__target_stereotype", "item__gender_mapping", "item__reversed_order",
          "endpoint__name", "endpoint__provider", "model_name", "trial", "context_key", "variant_key", "slot_values", "prompt_text",
          "text", "status", "error", "finish_reason", "input_tokens", "output_tokens", "cost_usd", "latency_ms",
          "provenance", "external_id", "created_at", "completed_at"]


@register_dataset("outputs", title="Outputs with provenance", app="generation", columns=OUTPUT_COLUMNS,
                  count=lambda study, options: filtered_outputs(study, options).count())
def output_rows(study, options):
    qs = filtered_outputs(study, options).order_by("pk").values_list(*FIELDS)
    for (pk, run_id, run_name, toolkit, toolkit_version, number, dimension, target, mapping, reversed_order, endpoint,
         provider, model, trial, context, variant_key, slot_values, prompt, text, status, error, finish_reason, input_tokens,
         output_tokens, cost, latency, provenance, external_id, created_at, completed_at) in qs.iterator(chunk_size=2000):
        provenance = provenance or {}
        yield {
            "output_id": pk, "run_id": run_id, "run_name": run_name, "toolkit": toolkit, "toolkit_version": toolkit_version,
            "item_number": number, "dimension": dimension, "target_stereotype": target, "gender_mapping": mapping,
            "reversed_order": reversed_order, "endpoint": endpoint, "provider": provider or provenance.get("provider"),
            "model": model, "trial": trial, "context": context, "variant_key": variant_key, "slot_values": slot_values, "prompt": prompt,
            "text": text, "status": status, "error": error, "finish_reason": finish_reason,
            "input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost, "latency_ms": latency,
            "params": provenance.get("params"), "source": provenance.get("source", ""), "provenance": provenance,
            "external_id": external_id, "created_at": created_at, "completed_at": completed_at,
        }
