from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from .permissions import VIEWER, has_role, role_for


def navigation(request):
    """The main navigation; study-scoped links point at the current study when there is one."""
    study = getattr(request, "study", None)
    if study is None:
        return {"nav_items": [], "current_study": None}
    items = [("Studies", reverse("study-list"), "studies"), ("Dashboard", reverse("study-dashboard", args=[study.pk]), "dashboard")]
    for label, name, key in NAV_SECTIONS:
        try:
            url = reverse(name, args=[study.pk])
        except NoReverseMatch:
            continue
        if can_open(request.user, study, url):
            items.append((label, url, key))
    role = role_for(request.user, study)
    return {"nav_items": items, "current_study": study, "current_role": role}


def can_open(user, study, url):
    """Whether the user's role meets the minimum that the page's view declares (see study_role_required)."""
    try:
        view = resolve(url).func
    except Resolver404:
        return False
    minimum = getattr(view, "study_minimum_role", VIEWER)
    return has_role(user, study, minimum)


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
