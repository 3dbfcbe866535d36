"""The one versioning base (stereoscope/versioning.py) as used by all five versioned things."""

import pytest

from stereoscope.models import ActivityEvent
from stereoscope.services import library_study
from stereoscope.versioning import VersionedModel


def make_toolkit(study, builtin_key=""):
    from generation.models import Toolkit

    toolkit = Toolkit.objects.create(study=study, name="Kit", builtin_key=builtin_key, slots={"name": ["Kelly"]})
    dim = toolkit.dimensions.create(name="Care", order=1)
    first = toolkit.items.create(number=1, text="A {name}", dimension=dim)
    toolkit.items.create(number=2, text="B {name}", dimension=dim, counterfactual_of=first)
    return toolkit


def toolkit_children(toolkit):
    items = toolkit.items.order_by("number")
    assert all(i.dimension.toolkit_id == toolkit.pk for i in items)
    assert items[1].counterfactual_of == items[0]
    return [(i.number, i.text, i.dimension.name) for i in items]


def make_codebook(study, builtin_key=""):
    from annotation.models import Codebook

    codebook = Codebook.objects.create(study=study, name="Codes", builtin_key=builtin_key)
    root = codebook.codes.create(name="Care", codable=False, order=1)
    codebook.codes.create(name="Protected", parent=root, gender_tag="F", order=2)
    return codebook


def codebook_children(codebook):
    return sorted((c.name, c.parent.name if c.parent_id else None, c.gender_tag) for c in codebook.codes.all())


def make_template(study, builtin_key=""):
    from judging.models import JudgeTemplate

    return JudgeTemplate.objects.create(
        study=study, name="Judge", builtin_key=builtin_key, text="{target_stereotype} {stories}", kind="structured_json"
    )


def template_children(template):
    return [template.text, template.kind]


def make_lexicon(study, builtin_key=""):
    from measures.models import Lexicon

    lexicon = Lexicon.objects.create(study=study, name="Words", builtin_key=builtin_key, count_policy="per_entry")
    warm = lexicon.categories.create(key="warm", name="Warm", words=["kind", "warm"], direction="female")
    lexicon.exclusions.create(phrase="kind of", category=warm)
    lexicon.exclusions.create(phrase="warmup")
    return lexicon


def lexicon_children(lexicon):
    cats = [(c.key, c.words, c.direction) for c in lexicon.categories.all()]
    exclusions = sorted((e.phrase, e.category.key if e.category_id else None) for e in lexicon.exclusions.all())
    assert all(e.category.lexicon_id == lexicon.pk for e in lexicon.exclusions.all() if e.category_id)
    return [cats, exclusions, lexicon.count_policy]


def make_instrument(study, builtin_key=""):
    from psychometrics.models import Instrument

    instrument = Instrument.objects.create(
        study=study, name="ASI", builtin_key=builtin_key, scale_min=0, scale_max=5, subscales=["HS"], label="1"
    )
    instrument.items.create(item_id="Q1", position=0, text="Women are...", subscale="HS")
    instrument.items.create(item_id="Q2", position=1, text="Men are...", subscale="HS", reverse=True)
    return instrument


def instrument_children(instrument):
    return [(i.item_id, i.text, i.reverse) for i in instrument.items.all()] + [instrument.subscales, instrument.label]


def versioning(kind):
    if kind == "toolkit":
        from generation.toolkits.services import TOOLKITS as policy
    elif kind == "codebook":
        from annotation.services import CODEBOOKS as policy
    elif kind == "judge template":
        from judging.services import JUDGE_TEMPLATES as policy
    elif kind == "lexicon":
        from measures.services import LEXICONS as policy
    else:
        from psychometrics.services import INSTRUMENTS as policy
    return policy


KINDS = {
    "toolkit": (make_toolkit, toolkit_children),
    "codebook": (make_codebook, codebook_children),
    "judge template": (make_template, template_children),
    "lexicon": (make_lexicon, lexicon_children),
    "instrument": (make_instrument, instrument_children),
}


@pytest.fixture(params=list(KINDS))
def kind(request):
    return request.param


def test_all_five_models_share_the_base(kind):
    policy = versioning(kind)
    assert issubclass(policy.model, VersionedModel) and policy.noun == kind
    names = {f.name for f in policy.model._meta.get_fields()}
    assert {"study", "name", "version", "parent", "locked", "builtin_key", "created_by", "created_at"} <= names


def test_lock_on_first_use(roles, kind):
    policy, (make, _) = versioning(kind), KINDS[kind]
    obj = make(roles["a"])
    assert not policy.is_locked(obj)
    policy.lock(obj)
    obj.refresh_from_db()
    assert obj.locked and policy.is_locked(obj)
    with pytest.raises(ValueError, match="locked"):
        policy.ensure_editable(obj)


def test_new_version_copies_children(roles, kind):
    policy, (make, children) = versioning(kind), KINDS[kind]
    obj = make(roles["a"])
    policy.lock(obj)
    copy = policy.new_version(obj, actor=roles["users"]["researcher"])
    assert (copy.study, copy.name, copy.version, copy.parent, copy.locked) == (obj.study, obj.name, 2, obj, False)
    assert copy.created_by == roles["users"]["researcher"]
    assert children(copy) == children(obj)  # the same content, in rows of its own
    obj.refresh_from_db()
    assert obj.locked and children(obj) == children(copy)
    assert ActivityEvent.objects.filter(study=roles["a"], verb=f"created a new {kind} version").exists()


def test_writable_gives_itself_or_a_new_version(roles, kind):
    policy, (make, _) = versioning(kind), KINDS[kind]
    obj = make(roles["a"])
    assert policy.writable(obj) == (obj, False)
    policy.lock(obj)
    target, created = policy.writable(obj)
    assert created and target.parent == obj and target.version == 2


def test_copy_into_another_study(roles, kind):
    policy, (make, children) = versioning(kind), KINDS[kind]
    builtin = make(library_study(), builtin_key="shipped")
    type(builtin).objects.filter(pk=builtin.pk).update(locked=True)
    builtin.refresh_from_db()
    make(roles["a"])  # version 1 of the same name already there
    copy = policy.copy_into(builtin, study=roles["a"])
    assert (copy.study, copy.version, copy.parent, copy.locked) == (roles["a"], 2, None, False)
    assert children(copy) == children(builtin)
    assert copy.builtin_key == ("shipped" if kind == "toolkit" else "")


def test_the_library_is_never_written(roles, kind):
    policy, (make, _) = versioning(kind), KINDS[kind]
    library = library_study()
    builtin = make(library, builtin_key="shipped")
    own = make(roles["a"])
    before = type(builtin).objects.filter(study=library).count()
    with pytest.raises(ValueError, match="read-only"):
        policy.copy_into(own, study=library)
    with pytest.raises(ValueError, match="copied into a study, not versioned"):
        policy.new_version(builtin)
    with pytest.raises(ValueError, match="read-only"):
        policy.writable(builtin)
    with pytest.raises(ValueError, match="read-only"):
        policy.ensure_editable(builtin)
    policy.lock(builtin)
    builtin.refresh_from_db()
    assert not builtin.locked  # lock() leaves library rows alone (load_builtin locks them)
    assert type(builtin).objects.filter(study=library).count() == before


def test_copy_routes_do_not_write_the_library(roles, client_for):
    """Even staff (admin everywhere) cannot copy into the built-in library through the pages or the API."""
    from django.urls import reverse

    from annotation.models import Codebook
    from measures.models import Lexicon

    library = library_study()
    lexicon, codebook = make_lexicon(library, "shipped"), make_codebook(library, "shipped")
    staff = client_for(roles["users"]["staff"])
    responses = [
        staff.post(reverse("measures-lexicon-copy", args=[library.pk, lexicon.pk])),
        staff.post(reverse("annotation-codebook-create", args=[library.pk]), {"action": "copy", "source": codebook.pk}),
        staff.post(f"/api/studies/{library.pk}/lexicons/{lexicon.pk}/copy/"),
        staff.post(f"/api/studies/{library.pk}/codebooks/copy/", {"source": codebook.pk}),
    ]
    assert [r.status_code < 500 for r in responses] == [True] * 4
    assert [r.status_code for r in responses[2:]] == [403, 403]  # the permission layer refuses library writes
    assert Lexicon.objects.filter(study=library).count() == 1 and Codebook.objects.filter(study=library).count() == 1
