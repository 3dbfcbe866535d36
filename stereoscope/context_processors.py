from functools import lru_cache

from django.conf import settings
from django.urls import NoReverseMatch, Resolver404, get_urlconf, resolve, reverse

from .permissions import VIEWER, has_role, role_for


def navigation(request):
    """The main navigation; study-scoped links point at the current study when there is one."""
    study = getattr(request, "study", None)
    if study is None:
        return {"nav_items": [], "current_study": None}
    items = [
        ("Studies", reverse("study-list"), "studies"),
        ("Dashboard", reverse("study-dashboard", args=[study.pk]), "dashboard"),
    ]
    user, urlconf = request.user, get_urlconf() or settings.ROOT_URLCONF
    for label, name, key in NAV_SECTIONS:
        minimum = section_minimum_role(name, urlconf)
        if minimum is not None and has_role(user, study, minimum):
            items.append((label, reverse(name, args=[study.pk]), key))
    role = role_for(user, study)
    return {"nav_items": items, "current_study": study, "current_role": role}


@lru_cache(maxsize=64)
def section_minimum_role(name, urlconf):
    """The minimum role that the view of a study section declares (see study_role_required), or None when the
    section has no page. Looked up once per URL configuration: resolving a URL scans every pattern."""
    try:
        view = resolve(reverse(name, args=[0], urlconf=urlconf), urlconf).func
    except (NoReverseMatch, Resolver404):
        return None
    return getattr(view, "study_minimum_role", VIEWER)


# (label, url name, key). Apps fill in their pages; a section whose URL does not exist is left out.
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
    ("Report", "report", "report"),
    ("Members", "study-members", "members"),
]
