from django.urls import reverse


def navigation(request):
    """The main navigation; study-scoped links point at the current study when there is one."""
    study = getattr(request, "study", None)
    if study is None:
        return {"nav_items": [], "current_study": None}
    items = [("Studies", reverse("study-list"), "studies"), ("Dashboard", reverse("study-dashboard", args=[study.pk]), "dashboard")]
    for label, name, key in NAV_SECTIONS:
        try:
            items.append((label, reverse(name, args=[study.pk]), key))
        except Exception:
            continue
    return {"nav_items": items, "current_study": study, "current_role": getattr(request, "study_role", None)}


# (label, url name, key). Apps fill in their pages; a section whose URL does not exist yet shows the placeholder.
NAV_SECTIONS = [
    ("Toolkits", "toolkits", "toolkits"),
    ("Runs", "runs", "runs"),
    ("Coding", "coding", "coding"),
    ("Judging", "judging", "judging"),
    ("Agreement", "agreement", "agreement"),
    ("Questionnaires", "questionnaires", "questionnaires"),
    ("Measures", "measures", "measures"),
    ("Exports", "exports", "exports"),
    ("Recipe", "recipe", "recipe"),
    ("Members", "study-members", "members"),
]
