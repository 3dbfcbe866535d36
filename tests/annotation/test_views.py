import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Code, CodeOperation, Coding, GenderAttribution, Memo

XSS = 'Ana said <script>alert(1)</script> and <img src=x onerror="alert(2)"> then left.'


@pytest.fixture
def env(roles, outputs_factory, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    outs = outputs_factory(study, [XSS, "Second story 👩‍🔬 here.", "Third."])
    u = roles["users"]
    for out in outs[:2]:
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=u["coder"], position=out.pk)
    ws = lambda out: reverse("annotation-workspace", args=[study.pk, cb.pk, out.pk])  # noqa: E731
    edit = lambda out: reverse("annotation-workspace-edit", args=[study.pk, cb.pk, out.pk])  # noqa: E731
    return {"study": study, "cb": cb, "codes": codes, "outs": outs, "u": u, "ws": ws, "edit": edit}


def test_pages_enforce_roles(env, client_for):
    s, cb, u = env["study"], env["cb"], env["u"]
    pages = {
        reverse("coding", args=[s.pk]): "viewer",
        reverse("annotation-codebook", args=[s.pk, cb.pk]): "viewer",
        reverse("annotation-frequencies", args=[s.pk, cb.pk]): "viewer",
        reverse("annotation-assignments", args=[s.pk, cb.pk]): "researcher",
        reverse("annotation-codings-export", args=[s.pk, cb.pk]): "researcher",
        env["ws"](env["outs"][0]): "coder",
    }
    for url, minimum in pages.items():
        assert client_for(u["outsider"]).get(url).status_code == 404, url
        assert client_for(u["researcher"]).get(url).status_code == 200, url
        if minimum == "researcher":
            assert client_for(u["coder"]).get(url).status_code == 403, url
        else:
            assert client_for(u["coder"]).get(url).status_code == 200, url
    # an unassigned story is not visible to a coder
    assert client_for(u["coder"]).get(env["ws"](env["outs"][2])).status_code == 404
    r = client_for(u["coder"]).post(reverse("annotation-codebook-edit", args=[s.pk, cb.pk]), {"op": "lock"})
    assert r.status_code == 403


def test_story_is_escaped(env, client_for):
    body = client_for(env["u"]["coder"]).get(env["ws"](env["outs"][0])).content.decode()
    assert "<script>alert(1)</script>" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'data-s="0" data-e="%d"' % len(XSS) in body


def test_workspace_edits(env, client_for):
    c = client_for(env["u"]["coder"])
    out = env["outs"][1]
    start = out.text.index("👩")
    hx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "ws"}
    r = c.post(
        env["edit"](out), {"op": "code", "code": env["codes"]["lead_f"].pk, "start": start, "end": start + 3}, **hx
    )
    assert r.status_code == 200 and "ws-error" not in r.content.decode()
    coding = Coding.objects.get()
    assert coding.quote == out.text[start : start + 3] and coding.coder == env["u"]["coder"]
    assert 'class="seg hl"' in r.content.decode()
    r = c.post(env["edit"](out), {"op": "code", "code": env["codes"]["lead_f"].pk, "start": "", "end": ""}, **hx)
    assert "Select some text first" in r.content.decode()
    r = c.post(env["edit"](out), {"op": "code", "code": env["codes"]["lead_f"].pk, "start": 0, "end": 999}, **hx)
    assert "past the end" in r.content.decode() and Coding.objects.count() == 1
    r = c.post(env["edit"](out), {"op": "code", "code": env["codes"]["care_m"].pk, "whole": "1"}, **hx)
    assert Coding.objects.filter(start__isnull=True).count() == 1
    c.post(env["edit"](out), {"op": "memo", "target": "coding", "target_id": coding.pk, "text": "the scientist"}, **hx)
    c.post(env["edit"](out), {"op": "memo", "target": "output", "text": "<b>bold</b> story memo"}, **hx)
    c.post(
        env["edit"](out),
        {"op": "memo", "target": "code", "target_id": env["codes"]["care_m"].pk, "text": "code memo"},
        **hx,
    )
    assert Memo.objects.count() == 3
    r = c.post(
        env["edit"](out),
        {"op": "new_code", "name": "F scientist", "parent": env["codes"]["lead"].pk, "start": 0, "end": 6},
        **hx,
    )
    new = Code.objects.get(name="F scientist")
    assert (
        new.kind == "inductive" and new.parent == env["codes"]["lead"] and Coding.objects.filter(code=new).count() == 1
    )
    body = r.content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "F scientist" in body
    r = c.post(env["edit"](out), {"op": "reassign", "coding": coding.pk, "code": env["codes"]["care_f"].pk}, **hx)
    assert Coding.objects.get(pk=coding.pk).code == env["codes"]["care_f"]
    c.post(env["edit"](out), {"op": "gender", "gender": "F", "character": "the scientist"}, **hx)
    assert GenderAttribution.objects.get().gender == "F"
    r = c.post(env["edit"](out), {"op": "gender", "gender": "robot"}, **hx)
    assert "Gender must be" in r.content.decode()
    c.post(env["edit"](out), {"op": "delete", "coding": coding.pk}, **hx)
    assert not Coding.objects.filter(pk=coding.pk).exists()
    r = c.post(env["edit"](out), {"op": "done", "next": "1"}, **hx)
    assert r.status_code == 204 and r["HX-Redirect"].endswith(f"/stories/{env['outs'][0].pk}/")
    assert Assignment.objects.get(output=out).status == "done"
    # someone else's coding cannot be removed by a coder
    theirs = services.create_coding(
        study=env["study"],
        codebook=env["cb"],
        output=out,
        code=env["codes"]["lead_m"],
        coder=env["u"]["researcher"],
        start=0,
        end=3,
    )
    r = c.post(env["edit"](out), {"op": "delete", "coding": theirs.pk}, **hx)
    assert "own codings" in r.content.decode() and Coding.objects.filter(pk=theirs.pk).exists()


def test_codebook_page_merge_undo_and_frequencies(env, client_for):
    s, cb, codes = env["study"], env["cb"], env["codes"]
    services.create_coding(
        study=s, codebook=cb, output=env["outs"][0], code=codes["lead_m"], coder=env["u"]["coder"], start=0, end=3
    )
    c = client_for(env["u"]["researcher"])
    url = reverse("annotation-codebook-edit", args=[s.pk, cb.pk])
    hx = {"HTTP_HX_REQUEST": "true"}
    r = c.post(
        url,
        {
            "op": "merge",
            "sources": [codes["lead_m"].pk, codes["care_m"].pk],
            "new_name": "M any",
            "new_parent": codes["care"].pk,
        },
        **hx,
    )
    assert r.status_code == 200 and "M any" in r.content.decode()
    freq = c.get(reverse("annotation-frequencies", args=[s.pk, cb.pk]) + "?level=dimension", **hx).content.decode()
    assert 'data-label="Care"' in freq and 'data-label="Leadership"' not in freq
    op = CodeOperation.objects.get(kind="merge")
    r = c.post(url, {"op": "undo", "operation": op.pk}, **hx)
    assert Coding.objects.get().code == codes["lead_m"]
    r = c.post(url, {"op": "merge", "sources": [codes["lead_m"].pk], "target": codes["lead"].pk}, **hx)
    assert "dimension or group" in r.content.decode()
    r = c.post(url, {"op": "create", "name": "Family", "codable": "", "color": "#f76707"}, **hx)
    assert Code.objects.get(name="Family").codable is False
    r = c.post(url, {"op": "create", "name": "bad", "color": "javascript:alert(1)"}, **hx)
    assert "not #rrggbb" in r.content.decode()
    csv = c.get(reverse("annotation-frequencies", args=[s.pk, cb.pk]) + "?file_format=csv&by=model")
    assert (
        csv["Content-Type"].startswith("text/csv")
        and "Leadership/M charisma,Leadership,M,1,1,1" in csv.content.decode()
    )


def test_home_and_assignment_pages(env, client_for, make_user):
    from stereoscope.models import Membership

    s, cb = env["study"], env["cb"]
    c = client_for(env["u"]["researcher"])
    body = c.get(reverse("coding", args=[s.pk])).content.decode()
    assert "Stereotypes" in body
    coder2 = make_user("coder2")
    Membership.objects.create(study=s, user=coder2, role="coder")
    url = reverse("annotation-assignments", args=[s.pk, cb.pk])
    r = c.post(
        url,
        {"coders": [env["u"]["coder"].pk, coder2.pk], "k": 2, "strategy": "stratified", "mode": "consensus"},
        follow=True,
    )
    assert "4 assignments created" in r.content.decode()
    assert Assignment.objects.filter(coder=coder2, mode="consensus").count() == 3
    r = c.post(url, {"coders": [coder2.pk], "k": 3, "strategy": "random_balanced"}, follow=True)
    assert "needs at least 3 coders" in r.content.decode()
    a = Assignment.objects.filter(coder=coder2).first()
    r = c.post(url, {"op": "reassign", "assignment": a.pk, "coder": env["u"]["researcher"].pk}, follow=True)
    assert Assignment.objects.get(pk=a.pk).coder == env["u"]["researcher"]
    body = client_for(env["u"]["coder"]).get(reverse("coding", args=[s.pk])).content.decode()
    assert "Continue coding" in body
    r = client_for(env["u"]["coder"]).get(reverse("annotation-next", args=[s.pk, cb.pk]))
    assert r.status_code == 302 and "/stories/" in r["Location"]


def test_split_page(env, client_for):
    s, cb, codes = env["study"], env["cb"], env["codes"]
    a = services.create_coding(
        study=s, codebook=cb, output=env["outs"][0], code=codes["care_f"], coder=env["u"]["coder"], start=0, end=3
    )
    b = services.create_coding(
        study=s, codebook=cb, output=env["outs"][1], code=codes["care_f"], coder=env["u"]["coder"], start=0, end=5
    )
    url = reverse("annotation-split", args=[s.pk, cb.pk, codes["care_f"].pk])
    assert client_for(env["u"]["coder"]).get(url).status_code == 403
    c = client_for(env["u"]["researcher"])
    assert "<q>Ana</q>" in c.get(url).content.decode()
    r = c.post(url, {"codings": [b.pk], "new_name": "F nurturing"}, follow=True)
    assert "F nurturing" in r.content.decode()
    assert (
        Coding.objects.get(pk=b.pk).code.name == "F nurturing" and Coding.objects.get(pk=a.pk).code == codes["care_f"]
    )
    r = c.post(url, {"codings": [], "new_name": "x"}, follow=True)
    assert "Choose the codings" in r.content.decode()
