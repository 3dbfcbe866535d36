"""Blind mode everywhere: a coder in a blind assignment reads only their own memos and counts only their own codings,
in the memos API (list and detail), the frequencies API and page (by coder and the totals), the codebook page and
the workspace. Consensus shares a story's codings and memos; researchers see everyone's."""
import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Memo
from stereoscope.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def blind(roles, outputs_factory, small_codebook, make_user):
    study = roles["a"]
    cb, codes = small_codebook(study)
    outs = outputs_factory(study, ["Ana leads the team.", "Ben bakes bread.", "Shared story."])
    coder, other = roles["users"]["coder"], make_user("other")
    Membership.objects.create(study=study, user=other, role="coder")
    for user in (coder, other):
        for out in outs[:2]:
            Assignment.objects.create(study=study, codebook=cb, output=out, coder=user)
    mine = services.create_coding(study=study, codebook=cb, output=outs[0], code=codes["lead_f"], coder=coder,
                                  start=0, end=3)
    theirs = [services.create_coding(study=study, codebook=cb, output=outs[0], code=codes["lead_m"], coder=other,
                                     start=0, end=3),
              services.create_coding(study=study, codebook=cb, output=outs[1], code=codes["care_m"], coder=other,
                                     start=0, end=3)]
    own_memo = services.add_memo(study, author=coder, text="my own note", output=outs[0])
    their_memos = [services.add_memo(study, author=other, text="SECRET story note", output=outs[0]),
                   services.add_memo(study, author=other, text="SECRET code note", code=codes["lead_m"]),
                   services.add_memo(study, author=other, text="SECRET coding note", coding=theirs[0])]
    return {"study": study, "cb": cb, "codes": codes, "outs": outs, "coder": coder, "other": other, "mine": mine,
            "theirs": theirs, "own_memo": own_memo, "their_memos": their_memos, "base": f"/api/studies/{study.pk}"}


def test_memos_api_list_and_detail_show_a_blind_coder_only_their_own(blind, api_for):
    api = api_for(blind["coder"])
    listing = api.get(f"{blind['base']}/memos/")
    assert listing.status_code == 200
    assert [m["id"] for m in listing.json()["results"]] == [blind["own_memo"].pk]
    for memo in blind["their_memos"]:
        assert api.get(f"{blind['base']}/memos/{memo.pk}/").status_code == 404
        for key, target in (("output", memo.output_id), ("code", memo.code_id), ("coding", memo.coding_id)):
            if target:
                filtered = api.get(f"{blind['base']}/memos/?{key}={target}").json()["results"]
                assert all(m["author"] == "coder" for m in filtered)
    assert "SECRET" not in listing.content.decode()
    everything = api_for(blind["other"]).get(f"{blind['base']}/memos/").json()["results"]
    assert {m["text"] for m in everything} >= {"SECRET story note", "SECRET code note", "SECRET coding note"}
    researcher = api_for(blind["study"].memberships.get(role="researcher").user).get(f"{blind['base']}/memos/")
    assert len(researcher.json()["results"]) == 4


def test_consensus_shares_the_story_memos(blind, api_for):
    Assignment.objects.filter(output=blind["outs"][0]).update(mode="consensus")
    texts = {m["text"] for m in api_for(blind["coder"]).get(f"{blind['base']}/memos/").json()["results"]}
    assert texts == {"my own note", "SECRET story note", "SECRET code note", "SECRET coding note"}
    assert Memo.objects.count() == 4


def test_frequencies_api_counts_only_the_blind_coders_codings(blind, api_for):
    api = api_for(blind["coder"])
    url = f"{blind['base']}/codebooks/{blind['cb'].pk}/frequencies/"
    by_coder = api.get(url + "?by=coder").json()
    assert by_coder["columns"] == ["coder"] and by_coder["total"] == 1
    totals = {row["name"]: row["total"] for row in api.get(url).json()["rows"]}
    assert totals["F charisma"] == 1 and totals["M charisma"] == 0 and totals["M communion"] == 0
    csv = api.get(url + "?by=coder&file_format=csv").content.decode()
    assert "other" not in csv
    researcher = api_for(blind["study"].memberships.get(role="researcher").user).get(url + "?by=coder").json()
    assert researcher["columns"] == ["coder", "other"] and researcher["total"] == 3


def test_frequency_page_codebook_page_and_workspace_hide_other_coders(blind, client_for):
    c = client_for(blind["coder"])
    study, cb = blind["study"], blind["cb"]
    page = c.get(reverse("annotation-frequencies", args=[study.pk, cb.pk]) + "?by=coder")
    assert page.status_code == 200
    html = page.content.decode()
    assert ">other<" not in html and "coder" in html
    csv = c.get(reverse("annotation-frequencies", args=[study.pk, cb.pk]) + "?by=coder&file_format=csv")
    assert "other" not in csv.content.decode()
    rows = {line.split(",")[0]: line for line in csv.content.decode().splitlines()[1:]}
    assert rows["Leadership/M charisma"].split(",")[3] == "0" and rows["Leadership/F charisma"].split(",")[3] == "1"
    codebook = c.get(reverse("annotation-codebook", args=[study.pk, cb.pk]))
    assert codebook.status_code == 200 and codebook.context["flat"]
    counts = {code.name: code.n_codings for code in codebook.context["flat"] if code.codable}
    assert counts == {"M charisma": 0, "F charisma": 1, "F communion": 0, "M communion": 0}
    workspace = c.get(reverse("annotation-workspace", args=[study.pk, cb.pk, blind["outs"][0].pk]))
    assert workspace.status_code == 200
    assert "SECRET" not in workspace.content.decode() and "my own note" in workspace.content.decode()


def test_coding_home_counts_only_the_coders_own_codings(blind, client_for):
    page = client_for(blind["coder"]).get(reverse("coding", args=[blind["study"].pk]))
    assert page.status_code == 200
    assert [cb.n_codings for cb in page.context["codebooks"]] == [1]
    researcher = blind["study"].memberships.get(role="researcher").user
    page = client_for(researcher).get(reverse("coding", args=[blind["study"].pk]))
    assert [cb.n_codings for cb in page.context["codebooks"]] == [3]


def test_a_memo_on_another_studys_story_is_answered_like_a_missing_story(blind, api_for, roles, outputs_factory):
    foreign = outputs_factory(roles["b"], ["Study B's story."])[0]
    api = api_for(blind["coder"])
    before = Memo.objects.count()
    elsewhere = api.post(f"{blind['base']}/memos/", {"output": foreign.pk, "text": "probe"}, format="json")
    assert elsewhere.status_code == 400
    assert elsewhere.json()["detail"] == f"No story {foreign.pk} in this study."
    missing = api.post(f"{blind['base']}/memos/", {"output": 987654, "text": "probe"}, format="json")
    assert missing.status_code == 400 and missing.json()["detail"] == "No story 987654 in this study."
    with pytest.raises(services.AnnotationError, match=f"No story {foreign.pk} in this study"):
        services.add_memo(blind["study"], author=blind["coder"], text="probe", output=foreign)
    assert Memo.objects.count() == before
