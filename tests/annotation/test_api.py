import json
import threading

import pytest
from django.db import connection

from annotation import services
from annotation.models import Assignment, Code, Codebook, Coding, Memo

STORY = "Zoë 👩‍🔬 led the lab; José\u0301 baked bread."


@pytest.fixture
def env(roles, outputs_factory, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    outs = outputs_factory(study, [STORY, "Another story.", "Unassigned story."])
    u = roles["users"]
    for out in outs[:2]:
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=u["coder"])
    return {"study": study, "cb": cb, "codes": codes, "outs": outs, "u": u, "base": f"/api/studies/{study.pk}"}


def test_roles_on_every_endpoint(env, api_for):
    u, base = env["u"], env["base"]
    for path in [
        "codebooks/",
        "codes/",
        "code-operations/",
        "codings/",
        "memos/",
        "assignments/",
        "gender-attributions/",
    ]:
        assert api_for(u["outsider"]).get(f"{base}/{path}").status_code == 404, path
        assert api_for(u["researcher"]).get(f"{base}/{path}").status_code == 200, path
    assert api_for(u["coder"]).post(f"{base}/codebooks/", {"name": "X"}, format="json").status_code == 403
    assert (
        api_for(u["coder"])
        .post(f"{base}/codes/merge/", {"sources": [env["codes"]["lead_m"].pk]}, format="json")
        .status_code
        == 403
    )
    assert api_for(u["coder"]).post(f"{base}/assignments/plan/", {}, format="json").status_code == 403
    assert api_for(u["coder"]).get(f"{base}/codebooks/{env['cb'].pk}/codings-export/").status_code == 403
    assert api_for(u["researcher"]).post(f"{base}/codebooks/", {"name": "X"}, format="json").status_code == 201


def test_coder_codes_with_utf16_offsets_and_bad_input(env, api_for):
    api, base = api_for(env["u"]["coder"]), env["base"]
    start = STORY.index("José")
    u16 = len(STORY[:start].encode("utf-16-le")) // 2
    r = api.post(
        f"{base}/codings/",
        {
            "codebook": env["cb"].pk,
            "output": env["outs"][0].pk,
            "code": env["codes"]["care_m"].pk,
            "start": u16,
            "end": u16 + 5,
            "offset_unit": "utf16",
        },
        format="json",
    )
    assert r.status_code == 201, r.content
    assert (r.json()["start"], r.json()["quote"]) == (start, "José\u0301")
    bad = [
        ({"start": 0, "end": 9999}, "past the end"),
        ({"output": env["outs"][2].pk, "start": 0, "end": 2}, "not in your queue"),
        ({"code": env["codes"]["lead"].pk, "start": 0, "end": 2}, "dimension or group"),
        ({"code": 999999, "start": 0, "end": 2}, "No code"),
        ({"start": 1, "end": 1}, "empty"),
    ]
    for patch, message in bad:
        body = {"codebook": env["cb"].pk, "output": env["outs"][0].pk, "code": env["codes"]["care_m"].pk, **patch}
        r = api.post(f"{base}/codings/", body, format="json")
        assert r.status_code == 400 and message in r.json()["detail"], (patch, r.content)
    assert Coding.objects.count() == 1


def test_blind_mode_in_the_api(env, api_for, make_user):
    from stereoscope.models import Membership

    base = env["base"]
    coder2 = make_user("coder2")
    Membership.objects.create(study=env["study"], user=coder2, role="coder")
    Assignment.objects.create(study=env["study"], codebook=env["cb"], output=env["outs"][0], coder=coder2)
    for user in (env["u"]["coder"], coder2):
        r = api_for(user).post(
            f"{base}/codings/",
            {
                "codebook": env["cb"].pk,
                "output": env["outs"][0].pk,
                "code": env["codes"]["lead_m"].pk,
                "start": 0,
                "end": 3,
            },
            format="json",
        )
        assert r.status_code == 201
    mine = api_for(env["u"]["coder"]).get(f"{base}/codings/?output={env['outs'][0].pk}").json()["results"]
    assert [c["coder"] for c in mine] == ["coder"]
    theirs = Coding.objects.get(coder=coder2)
    assert api_for(env["u"]["coder"]).delete(f"{base}/codings/{theirs.pk}/").status_code == 404
    assert (
        api_for(env["u"]["coder"])
        .patch(f"{base}/codings/{theirs.pk}/", {"code": env["codes"]["lead_f"].pk}, format="json")
        .status_code
        == 404
    )
    Assignment.objects.filter(coder=env["u"]["coder"], output=env["outs"][0]).update(mode="consensus")
    both = api_for(env["u"]["coder"]).get(f"{base}/codings/?output={env['outs'][0].pk}").json()["results"]
    assert sorted(c["coder"] for c in both) == ["coder", "coder2"]
    # consensus shows, but a coder still cannot change someone else's coding
    r = api_for(env["u"]["coder"]).delete(f"{base}/codings/{theirs.pk}/")
    assert r.status_code == 400 and "own codings" in r.json()["detail"]
    assert len(api_for(env["u"]["researcher"]).get(f"{base}/codings/").json()["results"]) == 2


def test_codebook_import_export_and_merge_undo_over_api(env, api_for):
    from django.core.files.uploadedfile import SimpleUploadedFile

    api, base, cb = api_for(env["u"]["researcher"]), env["base"], env["cb"]
    qdc = api.get(f"{base}/codebooks/{cb.pk}/export/?file_format=qdc")
    assert qdc.status_code == 200 and b"urn:QDA-XML:codebook:1.0" in qdc.content
    r = api.post(
        f"{base}/codebooks/import/",
        {"file": SimpleUploadedFile("mine.qdc", qdc.content), "name": "Imported"},
        format="multipart",
    )
    assert r.status_code == 201, r.content
    assert r.json()["code_count"] == 4
    before = Codebook.objects.count()
    r = api.post(f"{base}/codebooks/import/", {"file": SimpleUploadedFile("bad.qdc", b"<CodeBook")}, format="multipart")
    assert r.status_code == 400 and "well-formed" in r.json()["detail"]
    r = api.post(
        f"{base}/codebooks/import/",
        {"file": SimpleUploadedFile("bad.csv", b"name,color\nA,#nothex\n")},
        format="multipart",
    )
    assert r.status_code == 400 and "#nothex" in r.json()["detail"]
    assert Codebook.objects.count() == before
    csv_r = api.get(f"{base}/codebooks/{cb.pk}/export/?file_format=csv")
    assert csv_r.status_code == 200 and b"Leadership/M charisma" in csv_r.content

    services.create_coding(
        study=env["study"],
        codebook=cb,
        output=env["outs"][0],
        code=env["codes"]["lead_m"],
        coder=env["u"]["coder"],
        start=0,
        end=3,
    )
    c = env["codes"]
    r = api.post(
        f"{base}/codes/merge/",
        {"sources": [c["lead_m"].pk, c["lead_f"].pk], "new_name": "Charisma", "new_parent": c["lead"].pk},
        format="json",
    )
    assert r.status_code == 200, r.content
    op_id = r.json()["id"]
    freq = api.get(f"{base}/codebooks/{cb.pk}/frequencies/?level=code").json()
    assert {row["name"]: row["total"] for row in freq["rows"] if row["total"]} == {"Charisma": 1}
    assert api.post(f"{base}/code-operations/{op_id}/undo/").status_code == 200
    freq = api.get(f"{base}/codebooks/{cb.pk}/frequencies/?level=code").json()
    assert {row["name"]: row["total"] for row in freq["rows"] if row["total"]} == {"M charisma": 1}
    assert api.get(f"{base}/codebooks/{cb.pk}/frequencies/?by=bogus").status_code == 400
    # a code from another study cannot be merged in
    from stereoscope.models import Study

    other = Code.objects.create(
        codebook=Codebook.objects.create(study=Study.objects.get(name="Study B"), name="Z"), name="z"
    )
    r = api.post(
        f"{base}/codes/merge/", {"sources": [c["lead_m"].pk, other.pk], "target": c["care_f"].pk}, format="json"
    )
    assert r.status_code == 400 and "not codes of this study" in r.json()["detail"]


def test_codebook_copy_refuses_a_source_that_is_not_an_id(env, api_for):
    """`source` went to the ORM as given: a text, a list or an object was a ValueError, a 500 (found by schemathesis);
    it is read as a whole number like every id from a request, and anything else is the copy's own 400."""
    api, base = api_for(env["u"]["admin"]), env["base"]
    before = Codebook.objects.count()
    for source in ("abc", "²", [1], {"id": 1}, "1.5", True):
        r = api.post(f"{base}/codebooks/copy/", {"source": source}, format="json")
        assert r.status_code == 400 and "No such codebook" in r.json()["detail"], source
    for name in (["a"], {"a": 1}, 5):  # an AttributeError (a 500) before
        r = api.post(f"{base}/codebooks/copy/", {"source": env["cb"].pk, "name": name}, format="json")
        assert r.status_code == 400 and "name must be text" in r.json()["detail"], name
    assert Codebook.objects.count() == before
    r = api.post(f"{base}/codebooks/copy/", {"source": str(env["cb"].pk), "name": "Copy"}, format="json")
    assert r.status_code == 201 and r.json()["name"] == "Copy", r.content


def test_codings_export_csv_and_jsonl(env, api_for):
    api, base, cb = api_for(env["u"]["researcher"]), env["base"], env["cb"]
    coding = services.create_coding(
        study=env["study"],
        codebook=cb,
        output=env["outs"][0],
        code=env["codes"]["care_m"],
        coder=env["u"]["coder"],
        start=STORY.index("José"),
        end=STORY.index("José") + 5,
    )
    services.add_memo(env["study"], author=env["u"]["coder"], text="accent kept", coding=coding)
    r = api.get(f"{base}/codebooks/{cb.pk}/codings-export/?file_format=jsonl&include_text=1")
    rows = [json.loads(line) for line in b"".join(r.streaming_content).decode().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row["quote"], row["code_path"], row["coder"], row["memo"], row["story_text"]) == (
        "José\u0301",
        "Care/M communion",
        "coder",
        "accent kept",
        STORY,
    )
    assert row["story_text"][row["start"] : row["end"]] == row["quote"]
    csv_text = b"".join(api.get(f"{base}/codebooks/{cb.pk}/codings-export/?file_format=csv").streaming_content).decode()
    assert csv_text.splitlines()[0].startswith("codebook,coding_guid,output_id") and "Care/M communion" in csv_text


def test_assignment_plan_reassign_and_progress(env, api_for, make_user):
    from stereoscope.models import Membership

    api, base = api_for(env["u"]["researcher"]), env["base"]
    coder2 = make_user("coder2")
    Membership.objects.create(study=env["study"], user=coder2, role="coder")
    r = api.post(
        f"{base}/assignments/plan/",
        {"codebook": env["cb"].pk, "coders": ["coder", "coder2"], "k": 2, "strategy": "stratified"},
        format="json",
    )
    assert r.status_code == 201, r.content
    assert len(r.json()) == 4  # coder already had 2 of the 3 stories
    r = api.post(f"{base}/assignments/plan/", {"codebook": env["cb"].pk, "coders": ["coder"], "k": 2}, format="json")
    assert r.status_code == 400 and "needs at least 2 coders" in r.json()["detail"]
    r = api.post(f"{base}/assignments/plan/", {"codebook": env["cb"].pk, "coders": ["nobody"], "k": 1}, format="json")
    assert r.status_code == 400 and "nobody" in r.json()["detail"]
    mine = api_for(coder2).get(f"{base}/assignments/").json()["results"]
    assert len(mine) == 3 and {a["coder"] for a in mine} == {"coder2"}
    theirs = Assignment.objects.filter(coder=env["u"]["coder"]).first()
    assert (
        api_for(coder2).patch(f"{base}/assignments/{theirs.pk}/", {"status": "done"}, format="json").status_code == 404
    )
    r = api_for(coder2).patch(f"{base}/assignments/{mine[0]['id']}/", {"status": "done"}, format="json")
    assert r.status_code == 200 and r.json()["status"] == "done"
    progress = api.get(f"{base}/assignments/progress/?codebook={env['cb'].pk}").json()["coders"]
    assert {p["coder"]: (p["assigned"], p["done"]) for p in progress} == {"coder": (3, 0), "coder2": (3, 1)}
    r = api.post(f"{base}/assignments/{mine[0]['id']}/reassign/", {"coder": "coder"}, format="json")
    assert r.status_code == 400 and "already has" in r.json()["detail"]


def test_memos_and_gender_attribution(env, api_for):
    api, base = api_for(env["u"]["coder"]), env["base"]
    r = api.post(f"{base}/memos/", {"output": env["outs"][0].pk, "text": "Zoë is the lead"}, format="json")
    assert r.status_code == 201
    r = api.post(
        f"{base}/memos/", {"output": env["outs"][0].pk, "code": env["codes"]["lead_m"].pk, "text": "x"}, format="json"
    )
    assert r.status_code == 400 and "exactly one" in r.json()["detail"]
    assert Memo.objects.count() == 1
    r = api.post(
        f"{base}/gender-attributions/", {"output": env["outs"][0].pk, "gender": "F", "character": "Zoë"}, format="json"
    )
    assert r.status_code == 201 and r.json()["gender"] == "F"
    r = api.post(f"{base}/gender-attributions/", {"output": env["outs"][0].pk, "gender": "woman"}, format="json")
    assert r.status_code == 400
    for character in (["Zoë"], {"name": "Zoë"}, 5, True):  # a TypeError on len() (a 500) before
        body = {"output": env["outs"][0].pk, "gender": "M", "character": character}
        r = api.post(f"{base}/gender-attributions/", body, format="json")
        assert r.status_code == 400 and "character name must be text" in r.json()["detail"], character
    assert api.get(f"{base}/gender-attributions/").json()["results"][0]["character"] == "Zoë"


def test_renaming_a_codebook_onto_another_ones_name_is_a_400(env, api_for):
    """Names are unique per study and version: renaming a codebook to the name of another of the same version was
    an IntegrityError (a 500; found by swapping fields of valid API bodies)."""
    api, base = api_for(env["u"]["researcher"]), env["base"]
    other = services.create_codebook(env["study"], name="Regard")
    r = api.patch(f"{base}/codebooks/{env['cb'].pk}/", {"name": "Regard"}, format="json")
    assert r.status_code == 400 and "already has a codebook" in r.json()["detail"], r.content
    env["cb"].refresh_from_db()
    assert env["cb"].name == "Stereotypes" and other.version == env["cb"].version
    assert api.patch(f"{base}/codebooks/{env['cb'].pk}/", {"name": "Stereotypes"}, format="json").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_two_coders_in_parallel_lose_nothing(roles, outputs_factory, small_codebook, make_user):
    from rest_framework.test import APIClient

    from stereoscope.models import Membership

    study = roles["a"]
    cb, codes = small_codebook(study)
    out = outputs_factory(study, ["x" * 400])[0]
    coder2 = make_user("coder2")
    Membership.objects.create(study=study, user=coder2, role="coder")
    coders = [roles["users"]["coder"], coder2]
    for coder in coders:
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
    per_coder = 40
    barrier = threading.Barrier(2)
    failures = []

    def work(coder, offset):
        client = APIClient()
        client.force_authenticate(coder)
        barrier.wait()
        try:
            for i in range(per_coder):
                r = client.post(
                    f"/api/studies/{study.pk}/codings/",
                    {
                        "codebook": cb.pk,
                        "output": out.pk,
                        "code": codes["lead_m" if i % 2 else "care_f"].pk,
                        "start": i * 5 + offset,
                        "end": i * 5 + offset + 3,
                    },
                    format="json",
                )
                if r.status_code != 201:
                    failures.append(r.content)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(coder, n)) for n, coder in enumerate(coders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert Coding.objects.filter(output=out).count() == 2 * per_coder
    for n, coder in enumerate(coders):
        starts = sorted(Coding.objects.filter(coder=coder).values_list("start", flat=True))
        assert starts == [i * 5 + n for i in range(per_coder)]
