import pytest
from django.db import IntegrityError, transaction

from annotation.models import Code, Codebook, Coding, Memo


@pytest.mark.django_db
def test_code_path_and_dimension(roles, outputs_factory):
    study = roles["a"]
    cb = Codebook.objects.create(study=study, name="CB")
    dim = Code.objects.create(codebook=cb, name="Leadership", codable=False)
    group = Code.objects.create(codebook=cb, name="Charisma", codable=False, parent=dim)
    leaf = Code.objects.create(codebook=cb, name="M charisma", parent=group, gender_tag="M")
    loose = Code.objects.create(codebook=cb, name="loose")
    assert leaf.path() == "Leadership/Charisma/M charisma"
    assert leaf.dimension() == dim
    assert loose.dimension() is None
    assert dim.dimension() == dim
    out = outputs_factory(study, ["Hello world"])[0]
    coding = Coding.objects.create(
        output=out, code=leaf, coder=roles["users"]["coder"], codebook=cb, start=0, end=5, quote="Hello"
    )
    assert not coding.is_document_level
    with pytest.raises(IntegrityError), transaction.atomic():
        Memo.objects.create(study=study, author=roles["users"]["coder"], coding=coding, output=out, text="two targets")
    with pytest.raises(IntegrityError), transaction.atomic():
        Codebook.objects.create(study=study, name="CB")
