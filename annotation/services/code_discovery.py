"""LLM-assisted code discovery: sample stories, ask a model for codes, decide its suggestions."""

from django.db import transaction
from django.utils import timezone

from generation import selectors as generation
from stereoscope.services import record_activity

from ..models import (
    CodeKind,
)
from .codebooks import CODEBOOKS, create_code
from .errors import AnnotationError, _to_int

# --- AI-assisted code discovery ------------------------------------------------------------------------

STALE_DISCOVERY_SECONDS = 600


@transaction.atomic
def start_discovery(study, codebook, *, endpoint, item, sample_size=5, seed=0, actor=None, run=None):
    """Sample N finished stories of one prompt item and queue the model call. Returns the CodeDiscovery."""
    import random

    from generation.models import ModelEndpoint, Provider

    from .. import discovery as disc
    from ..models import CodeDiscovery

    CODEBOOKS.ensure_editable(codebook)
    if codebook.study_id != study.pk:
        raise AnnotationError("That codebook belongs to another study.")
    if not isinstance(endpoint, ModelEndpoint) or endpoint.study_id != study.pk:
        raise AnnotationError("Choose a model endpoint of this study.")
    if endpoint.provider == Provider.MANUAL:
        raise AnnotationError("A manual endpoint cannot be called; choose an API or local model.")
    if item is None or (item.toolkit.study_id != study.pk):
        raise AnnotationError("Choose a prompt item of this study's toolkits.")
    n = _to_int(sample_size, "The sample size") or 0
    if not 1 <= n <= 50:
        raise AnnotationError("The sample size must be between 1 and 50 stories.")
    pool = generation.finished_outputs(study, item=item, run_ids=[run.pk] if run is not None else None)
    ids = sorted(pool.values_list("pk", flat=True))
    if not ids:
        raise AnnotationError(f"Item {item.number} has no finished stories yet.")
    rng = random.Random(_to_int(seed, "Seed") or 0)
    chosen = sorted(rng.sample(ids, min(n, len(ids))))
    texts = generation.output_texts(chosen)
    messages = disc.build_messages(item.text, item.target_stereotype, [texts[pk] for pk in chosen])
    discovery = CodeDiscovery.objects.create(
        study=study,
        codebook=codebook,
        endpoint=endpoint,
        item=item,
        sample_size=n,
        seed=_to_int(seed, "Seed") or 0,
        output_ids=chosen,
        messages=messages,
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    record_activity(study, actor, "asked for code suggestions", f"item {item.number} via {endpoint.name}")
    from ..tasks import run_code_discovery

    transaction.on_commit(lambda: run_code_discovery.delay(discovery.pk))
    return discovery


def run_discovery(discovery_id):
    """Claim a pending (or stale running) discovery, call the model through the shared runner, store suggestions."""
    from datetime import timedelta

    from django.db.models import Q

    from generation.providers.base import merged_params
    from generation.runner import CallbackSink, CallUnit, execute_units

    from .. import discovery as disc
    from ..models import CodeDiscovery, CodeSuggestion, DiscoveryStatus

    stale = timezone.now() - timedelta(seconds=STALE_DISCOVERY_SECONDS)
    claimed = CodeDiscovery.objects.filter(
        Q(status=DiscoveryStatus.PENDING) | Q(status=DiscoveryStatus.RUNNING, finished_at__lt=stale),
        pk=discovery_id,
    ).update(status=DiscoveryStatus.RUNNING, finished_at=timezone.now())
    if not claimed:
        return None
    discovery = CodeDiscovery.objects.select_related("endpoint", "study").get(pk=discovery_id)
    if discovery.endpoint is None:
        CodeDiscovery.objects.filter(pk=discovery.pk).update(
            status=DiscoveryStatus.FAILED, error="The endpoint was deleted.", finished_at=timezone.now()
        )
        return discovery
    unit = CallUnit(
        unit_ref=f"discovery:{discovery.pk}",
        endpoint=discovery.endpoint,
        messages=discovery.messages,
        params=merged_params(discovery.endpoint),
        purpose="discovery",
        payload=discovery.pk,
    )
    outcome = {}
    execute_units(
        discovery.study,
        [unit],
        CallbackSink(
            on_success=lambda u, r: outcome.update(text=r.text), on_failure=lambda u, e: outcome.update(error=e)
        ),
    )
    call = generation.last_unit_call(discovery.study, "discovery", unit.unit_ref)
    with transaction.atomic():
        discovery = CodeDiscovery.objects.select_for_update().get(pk=discovery.pk)
        discovery.provider_call = call
        discovery.finished_at = timezone.now()
        if "text" in outcome:
            discovery.response_text = outcome["text"]
            try:
                suggestions = disc.parse_suggestions(outcome["text"])
            except disc.DiscoveryParseError as exc:
                discovery.status, discovery.error = DiscoveryStatus.FAILED, str(exc)
            else:
                discovery.suggestions.all().delete()
                CodeSuggestion.objects.bulk_create(
                    [
                        CodeSuggestion(
                            discovery=discovery,
                            order=i,
                            name=s["name"],
                            description=s["description"],
                            gender_tag=s["gender_tag"],
                            example=s["example"],
                        )
                        for i, s in enumerate(suggestions)
                    ]
                )
                discovery.status, discovery.error = DiscoveryStatus.DONE, ""
                if not disc.MIN_CODES <= len(suggestions) <= disc.MAX_CODES:
                    discovery.error = (
                        f"Note: the model proposed {len(suggestions)} codes "
                        f"(asked for {disc.MIN_CODES}–{disc.MAX_CODES})."
                    )
        else:
            discovery.status, discovery.error = DiscoveryStatus.FAILED, outcome.get("error", "The call did not finish.")
        discovery.save()
    return discovery


@transaction.atomic
def decide_suggestion(suggestion, *, accept, actor=None, name=None, description=None, gender_tag=None, parent=None):
    """Accept (optionally edited) into the codebook as an inductive code, or reject. Deciding twice is refused."""
    from ..models import CodeSuggestion, SuggestionStatus

    suggestion = (
        CodeSuggestion.objects.select_for_update(of=("self",))
        .select_related("discovery__codebook", "discovery__item")
        .get(pk=suggestion.pk)
    )
    if suggestion.status != SuggestionStatus.PENDING:
        raise AnnotationError(f"“{suggestion.name}” was already {suggestion.status}.")
    if accept:
        discovery = suggestion.discovery
        code = create_code(
            discovery.codebook,
            actor=actor,
            name=name if name is not None else suggestion.name,
            description=description if description is not None else suggestion.description,
            gender_tag=gender_tag if gender_tag is not None else suggestion.gender_tag,
            kind=CodeKind.INDUCTIVE,
            parent=parent,
            item=discovery.item,
            stereotype=discovery.item.target_stereotype if discovery.item_id else "",
            color="#f08c00",
        )
        suggestion.code = code
        suggestion.status = SuggestionStatus.ACCEPTED
    else:
        suggestion.status = SuggestionStatus.REJECTED
    suggestion.decided_by = actor if getattr(actor, "pk", None) else None
    suggestion.decided_at = timezone.now()
    suggestion.save()
    return suggestion
