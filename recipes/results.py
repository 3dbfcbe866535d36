"""What an applied recipe did, for the result page: each created, updated or unchanged object with a link to its
page, and the next steps (start the first run, invite coders). Reads only; kept in the session as plain data."""

from django.urls import NoReverseMatch, reverse

# kind of a Change -> (section of Outcome.objects, URL name, URL kwarg of the object's id)
LINKS = {
    "toolkit": ("toolkits", "toolkit-detail", "toolkit_id"),
    "endpoint": ("endpoints", "endpoint-edit", "endpoint_id"),
    "judge template": ("judge_templates", "judging-template", "template_id"),
    "generation run": ("runs", "run-detail", "run_id"),
    "judge round": ("judge_rounds", "judging-round", "round_id"),
    "instrument": ("instruments", "psych-instrument", "instrument_id"),
    "context set": ("context_sets", "psych-context-set", "set_id"),
    "codebook": ("codebooks", "annotation-codebook", "codebook_id"),
    "lexicon": ("lexicons", "measures-lexicon", "lexicon_id"),
    "measure run": ("measure_runs", "measures-run", "run_id"),
    "questionnaire run": ("questionnaire_runs", "psych-run", "run_id"),
}


def _url(name, study, **kwargs):
    try:
        return reverse(name, kwargs={"study_id": study.pk, **kwargs})
    except NoReverseMatch:
        return ""


def _object_for(change, objects):
    section = LINKS.get(change.kind, (None,))[0]
    for obj in (objects.get(section) or {}).values():
        if getattr(obj, "name", None) == change.name or str(obj) == change.name:
            return obj
    return None


def summary(outcome, data):
    """{"rows": [{action, kind, name, detail, url}], "counts": {action: n}, "changed": n, "next_steps": [{text, url,
    label}]} of an applied recipe."""
    study, objects = outcome.study, getattr(outcome, "objects", {})
    rows, counts = [], {}
    for change in outcome.changes:
        url = ""
        if change.kind == "study":
            url = _url("study-dashboard", study)
        elif (obj := _object_for(change, objects)) is not None and getattr(obj, "study_id", None) == study.pk:
            _section, url_name, kwarg = LINKS[change.kind]
            url = _url(url_name, study, **{kwarg: obj.pk})
        rows.append(
            {"action": change.action, "kind": change.kind, "name": change.name, "detail": change.detail, "url": url}
        )
        counts[change.action] = counts.get(change.action, 0) + 1
    return {
        "rows": rows,
        "counts": counts,
        "changed": len(outcome.changed),
        "next_steps": next_steps(study, objects, data),
    }


def next_steps(study, objects, data):
    steps = []
    runs = [r for r in (objects.get("runs") or {}).values() if not getattr(r, "is_import", False)]
    not_started = [r for r in runs if getattr(r, "started_at", None) is None]
    if not_started:
        first = not_started[0]
        steps.append(
            {
                "text": f"Start the first run, “{first.name}”: check its plan, calls and cost, then start it.",
                "url": _url("run-plan", study, run_id=first.pk),
                "label": "Start the first run",
            }
        )
    questionnaire_runs = list((objects.get("questionnaire_runs") or {}).values())
    if questionnaire_runs:
        first = questionnaire_runs[0]
        steps.append(
            {
                "text": f"Start the questionnaire run “{first.name}”.",
                "url": _url("psych-run", study, run_id=first.pk),
                "label": "Start the questionnaire run",
            }
        )
    stages = data.get("human_stages") or []
    if stages or objects.get("codebooks"):
        who = ", ".join(f"{s['name']} (after {s['after']})" for s in stages)
        steps.append(
            {
                "text": "Invite coders to the study" + (f" for its human stages: {who}." if who else "."),
                "url": _url("study-members", study),
                "label": "Invite coders",
            }
        )
    steps.append({"text": "See the study's dashboard.", "url": _url("study-dashboard", study), "label": "Dashboard"})
    return steps
