"""Nothing but load_builtin writes the built-in library study: copies and new versions into the library are refused
through the pages and the API, even for site staff, and nothing is written. Copying out of the library still works."""

import pytest

from annotation.models import Codebook
from generation.models import Toolkit
from measures.models import Lexicon

pytestmark = pytest.mark.django_db


@pytest.fixture
def library(db):
    from annotation.builtin import builtin_specs as codebook_specs
    from generation.builtin import builtin_specs as toolkit_specs
    from measures.builtin import builtin_specs as lexicon_specs
    from stereoscope.builtin import load_builtins

    for specs in (toolkit_specs(), codebook_specs(), lexicon_specs()):
        load_builtins(specs, log=lambda *_: None)
    lexicon = Lexicon.objects.filter(study__is_library=True).first()
    return {
        "study": lexicon.study,
        "lexicon": lexicon,
        "codebook": Codebook.objects.filter(study__is_library=True).first(),
        "toolkit": Toolkit.objects.filter(study__is_library=True).first(),
    }


def counts():
    return Lexicon.objects.count(), Codebook.objects.count(), Toolkit.objects.count()


def test_staff_cannot_copy_a_lexicon_into_the_library(library, roles, api_for, client_for):
    lib, lexicon = library["study"], library["lexicon"]
    before = counts()
    api = api_for(roles["users"]["staff"]).post(f"/api/studies/{lib.pk}/lexicons/{lexicon.pk}/copy/")
    assert api.status_code == 403 and "read-only" in api.json()["detail"]
    page = client_for(roles["users"]["staff"]).post(f"/studies/{lib.pk}/measures/lexicons/{lexicon.pk}/copy/")
    assert page.status_code == 403  # the 403 page's wording is another change (the site's layout, saying why)
    assert counts() == before


def test_other_versioned_things_refuse_new_versions_and_copies_in_the_library(library, roles, api_for, client_for):
    lib = library["study"]
    api, page = api_for(roles["users"]["staff"]), client_for(roles["users"]["staff"])
    before = counts()
    cb, tk = library["codebook"], library["toolkit"]
    for url, body in [
        (f"/api/studies/{lib.pk}/codebooks/{cb.pk}/new-version/", None),
        (f"/api/studies/{lib.pk}/codebooks/copy/", {"source": cb.pk}),
        (f"/api/studies/{lib.pk}/codebooks/", {"name": "planted"}),
        (f"/api/studies/{lib.pk}/toolkits/{tk.pk}/new_version/", None),
        (f"/api/studies/{lib.pk}/toolkits/copy/", {"toolkit": tk.pk}),
        (f"/api/studies/{lib.pk}/judge-templates/", {"name": "planted", "kind": "cross_family"}),
    ]:
        response = api.post(url, body, format="json")
        assert response.status_code == 403 and "read-only" in response.json()["detail"], url
    for url, body in [
        (f"/studies/{lib.pk}/coding/codebooks/new/", {"action": "copy", "source": cb.pk}),
        (f"/studies/{lib.pk}/toolkits/{tk.pk}/new-version/", {}),
        (f"/studies/{lib.pk}/questionnaires/instruments/import/", {}),
    ]:
        response = page.post(url, body)
        assert response.status_code == 403, url
    assert counts() == before


def test_services_refuse_the_library_as_a_target(library):
    from annotation import services as annotation_services
    from measures import services as measure_services

    before = counts()
    with pytest.raises(measure_services.LexiconDataError, match="read-only"):
        measure_services.LEXICONS.copy_into(library["lexicon"], study=library["study"])
    with pytest.raises(annotation_services.AnnotationError, match="not versioned"):
        annotation_services.CODEBOOKS.new_version(library["codebook"])
    with pytest.raises(annotation_services.AnnotationError, match="read-only"):
        annotation_services.CODEBOOKS.copy_into(library["codebook"], study=library["study"])
    assert counts() == before


def test_reading_and_copying_out_of_the_library_still_work(library, roles, api_for):
    lib, lexicon = library["study"], library["lexicon"]
    staff = api_for(roles["users"]["staff"])
    highlight = staff.post(
        f"/api/studies/{lib.pk}/lexicons/{lexicon.pk}/highlight/", {"text": "a leader"}, format="json"
    )
    assert highlight.status_code == 200
    researcher = api_for(roles["users"]["researcher"])
    copied = researcher.post(f"/api/studies/{roles['a'].pk}/lexicons/{lexicon.pk}/copy/")
    assert copied.status_code == 201 and Lexicon.objects.get(pk=copied.json()["id"]).study == roles["a"]


def test_staff_cannot_set_the_librarys_spending_cap_over_the_api(library, roles, api_for):
    """The spending route is a function view that checked the role but not the library (found by a sweep of every
    write route against the library as staff): the cap and the staff limit were written."""
    lib = library["study"]
    api = api_for(roles["users"]["staff"])
    for body in ({"cap_usd": "5"}, {"cap_limit_usd": "5"}):
        response = api.post(f"/api/studies/{lib.pk}/spending/", body, format="json")
        assert response.status_code == 403 and "read-only" in response.json()["detail"], body
    lib.refresh_from_db()
    assert lib.spending_cap_usd is None and lib.spending_cap_limit_usd is None
    assert api.get(f"/api/studies/{lib.pk}/spending/").status_code == 200
