"""Every route of a study full of data, swept:
- bad input never gives a server error: malformed bodies (not JSON, JSON of the wrong shape, fields of the wrong
  types, huge or negative numbers, NaN and ±Infinity, NUL characters, junk uploads) and junk query parameters, sent
  as an admin, are answered with a status below 500; hostile uploads and texts (a YAML alias bomb, YAML nested 500
  and 100,000 deep, NaN in a recipe, XLSX and .qdpx archive bombs, an XLSX with an undefined entity) are answered
  below 500 in under a second of CPU and under 50 MB of memory on every route;
- blind mode hides another coder's work: a blind coder reading every page and API route never sees the other
  coder's memos or name (a researcher, as the control, does);
- text is escaped: with an HTML/script payload appended to every free-text column of the study's rows, no HTML page
  holds it unescaped;
- roles hold: a coder's POST, PUT, PATCH and DELETE to every route change no table but the coder's own work.
The routes come from the URL patterns, so a new route is swept without editing this file; routes that delete or
remove come last."""

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.a11y.conftest import full_study  # noqa: F401
from tests.a11y.test_axe import object_ids
from tests.bombs import MB, deep_yaml, measure, qdpx_bomb, xlsx_bomb, xlsx_undefined_entity, yaml_alias_bomb
from tests.exports.conftest import coded_study, export_root, gen_study  # noqa: F401
from tests.generation.runs.conftest import make_endpoint  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PARAM = re.compile(r"<(?:(\w+):)?(\w+)>|\(\?P<(\w+)>[^)]*\)")
SKIP = ("admin/", "api/schema", "api/docs", "accounts/logout")
LAST = ("delete", "remove", "destroy")
WORDS = {"fmt": "csv", "format": "json", "direction": "up", "kind": "bogus", "action": "bogus", "what": "bogus"}
# For a DRF detail route's <pk>: the object its route name names (first match wins), else the study.
PK_BY_NAME = [
    ("discover", "discovery_id"),
    ("dimension", "dimension_id"),
    ("item", "item_id"),
    ("toolkit", "toolkit_id"),
    ("endpoint", "endpoint_id"),
    ("output", "output_id"),
    ("codebook", "codebook_id"),
    ("variable", "variable_id"),
    ("code", "code_id"),
    ("verdict", "verdict_id"),
    ("template", "template_id"),
    ("round", "round_id"),
    ("lexicon", "lexicon_id"),
    ("instrument", "instrument_id"),
    ("export", "job_id"),
    ("member", "membership_id"),
]
JUNK_QUERY = "?page=abc&page_size=-1&level=bogus&run=abc&model=%00&code=x&limit=1e999&offset=-5&ordering=--"
BAD_FIELDS = {
    "name": ["not", "a", "name"],
    "text": {"a": 1},
    "start": "x",
    "end": -5,
    "code": "abc",
    "codes": "abc",
    "code_id": [1],
    "output": [],
    "output_id": {"x": 1},
    "value": {},
    "label": 12,
    "labels": 5,
    "items": "x",
    "item": "abc",
    "endpoints": "abc",
    "format": 7,
    "datasets": "outputs",
    "sample_size": "many",
    "seed": 1e308,
    "trials": -3,
    "weight": "heavy",
    "version": "latest",
}
BAD_FORM = {
    "name": "",
    "op": "bogus",
    "sample_size": "abc",
    "seed": "1e999",
    "endpoints": ["abc", "-1"],
    "item": "abc",
    "code": "abc",
    "output": "abc",
    "start": "x",
    "end": "-5",
    "format": "bogus",
    "datasets": ["no-such-dataset"],
    "trials": "-3",
    "file": "not a file",
    "text": "\x00",
}

HUGE_FORM = {key: "9" * 30 for key in BAD_FORM}
HUGE_FIELDS = {key: 10**30 for key in BAD_FIELDS}
NUL_FIELDS = {key: "a\x00b" for key in BAD_FIELDS}
JUNK_LISTS = {key: [None, "x", {}, -1, [2]] for key in BAD_FIELDS}
NEGATIVE = {key: -1 for key in BAD_FIELDS}
NEGATIVE_FORM = {key: "-1" for key in BAD_FORM}
JUNK_FILES = [  # every upload field is named "file"
    ("junk.json", bytes(range(256)) * 4),  # not UTF-8, not JSON
    ("list.json", b'[1, "two", null]'),  # JSON, wrong shape
    ("empty.csv", b""),
    ("notzip.qdpx", b"PK\x03\x04 not really a zip"),
    ("table.xlsx", b"a,b\n1,2\n"),  # a CSV named as a workbook
    ("lines.jsonl", b'{"text": "ok"}\n{broken\n[1]\n'),
]

NAN_RECIPE = (
    "format: stereoscope-recipe\nformat_version: 1\nstudy: {name: NaN}\n"
    "endpoints: [{name: e, provider: openai_compatible, model_id: m, params: {temperature: .nan}}]\n"
)
NONFINITE_JSON = [  # JSON bodies with NaN and ±Infinity (1e999 reads as Infinity) in every field
    "{" + ", ".join(f'"{key}": {literal}' for key in BAD_FIELDS) + ', "params": {"temperature": ' + literal + "}}"
    for literal in ("NaN", "Infinity", "-Infinity", "1e999")
]


def hostile_files():
    """(file name, content) of the bombs, each sent as an upload to every route."""
    return [
        ("bomb.yaml", yaml_alias_bomb().encode()),
        ("deep500.yaml", deep_yaml(500).encode()),
        ("deep100000.yaml", deep_yaml(100_000).encode()),
        ("nan.yaml", NAN_RECIPE.encode()),
        ("nan.json", NONFINITE_JSON[0].encode()),
        ("bomb.xlsx", xlsx_bomb()),
        ("entity.xlsx", xlsx_undefined_entity()),
        ("bomb.qdpx", qdpx_bomb()),
    ]


def hostile_texts():
    """Form and JSON fields holding the hostile recipe texts (the recipe routes read `recipe` text)."""
    return [yaml_alias_bomb(), deep_yaml(500), deep_yaml(100_000), NAN_RECIPE]


def upload(name, content):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return {"name": "Junk upload", "file": SimpleUploadedFile(name, content)}  # nothing else for the form to refuse


def routes(patterns=None, prefix=""):
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from routes(p.url_patterns, route)
        elif isinstance(p, URLPattern):
            yield route, p.name or ""


def url_of(route, name, ids):
    """A concrete URL for a route (Django converters and DRF's regex groups), or None when it cannot be filled."""
    if route.startswith(SKIP) or "format" in route and "(?P<format>" in route:
        return None

    def value(match):
        param = match.group(2) or match.group(3)
        converter = match.group(1) or ("int" if match.group(3) is None else "regex")
        if param in ("study_id", "study_pk"):
            return str(ids["study_id"])
        if param in WORDS:
            return WORDS[param]
        if param == "pk" or param.endswith("_pk"):
            key = param[:-3] + "_id" if param.endswith("_pk") else None
            if key in ids and not isinstance(ids[key], dict):
                return str(ids[key])
            found = next((ids[k] for word, k in PK_BY_NAME if word in name), ids["study_id"])
            return str(found)
        if param in ids:
            v = ids[param]
            if isinstance(v, dict):
                v = next((pk for key, pk in v.items() if name.startswith(key)), None)
                if v is None:
                    raise LookupError
            return str(v)
        if converter in ("str", "slug", "path", "regex"):
            return "bogus"
        raise LookupError

    route = route.lstrip("^").replace("$", "").replace("\\.", ".")
    try:
        url = "/" + PARAM.sub(value, route)
    except LookupError:
        return None
    return url.replace("^", "").replace("/?", "/")


def sweep(client, url):
    """(method, what was sent, status or the exception) of every request that failed with a server error."""
    failures = []
    requests = [
        ("GET", "junk query", lambda: client.get(url + JUNK_QUERY)),
        ("POST", "form of wrong values", lambda: client.post(url, BAD_FORM)),
        ("POST", "not JSON", lambda: client.post(url, "{not json", content_type="application/json")),
        ("POST", "JSON list", lambda: client.post(url, "[1, null]", content_type="application/json")),
        ("POST", "fields of wrong types", lambda: client.post(url, BAD_FIELDS, content_type="application/json")),
        ("PATCH", "fields of wrong types", lambda: client.patch(url, BAD_FIELDS, content_type="application/json")),
        ("PUT", "not JSON", lambda: client.put(url, "{", content_type="application/json")),
        ("POST", "form of huge numbers", lambda: client.post(url, HUGE_FORM)),
        ("POST", "JSON of huge numbers", lambda: client.post(url, HUGE_FIELDS, content_type="application/json")),
        ("POST", "JSON strings with NUL", lambda: client.post(url, NUL_FIELDS, content_type="application/json")),
        ("POST", "JSON lists of junk", lambda: client.post(url, JUNK_LISTS, content_type="application/json")),
        ("POST", "JSON negative numbers", lambda: client.post(url, NEGATIVE, content_type="application/json")),
        ("POST", "form of negative numbers", lambda: client.post(url, NEGATIVE_FORM)),
    ]
    for file_name, content in JUNK_FILES:
        requests.append(
            ("POST", f"junk file {file_name}", lambda n=file_name, c=content: client.post(url, upload(n, c)))
        )
    for body in NONFINITE_JSON:
        requests.append(
            ("POST", "JSON with NaN/Infinity", lambda b=body: client.post(url, b, content_type="application/json"))
        )
    hostile = []  # last, so the route's own imports are warm; each is also timed and metered
    for file_name, content in hostile_files():
        hostile.append(
            ("POST", f"hostile file {file_name}", lambda n=file_name, c=content: client.post(url, upload(n, c)))
        )
    for i, text in enumerate(hostile_texts()):
        hostile.append(("POST", f"hostile recipe text {i}", lambda t=text: client.post(url, {"recipe": t, "text": t})))
        hostile.append(
            (
                "POST",
                f"hostile recipe JSON {i}",
                lambda t=text: client.post(url, {"recipe": t}, content_type="application/json"),
            )
        )
    post_allowed = True
    for entry in [(*r, False) for r in requests] + [(*h, True) for h in hostile]:
        method, what, send, metered = entry
        if metered and not post_allowed:
            break  # the route refused POST (405) without reading a body: the hostile bodies would be refused alike
        try:
            if metered:
                response, seconds, growth = measure(send)
                if isinstance(response, Exception):
                    raise response
                if seconds > BOMB_SECONDS or growth > BOMB_BYTES:
                    failures.append(f"{method} {url} ({what}): {seconds:.2f} s of CPU, {growth / MB:.0f} MB")
            else:
                response = send()
        except Exception as exc:  # the test client re-raises what the view raised
            failures.append(f"{method} {url} ({what}): {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if response.status_code >= 500:
            failures.append(f"{method} {url} ({what}): {response.status_code}")
        if what == "form of wrong values":
            post_allowed = response.status_code != 405
    return failures


BOMB_SECONDS = 1.0  # CPU seconds of the test process for one hostile request
BOMB_BYTES = 50 * MB  # peak RSS growth for one hostile request


SWEEP_PARTS = 3  # the sweep is split so pytest-xdist can spread it over its workers


@pytest.fixture
def pdf_layout_stubbed(monkeypatch):
    """The study report's PDF is laid out by WeasyPrint in an export job: in a worker in production, but here
    (Celery eager) in this process, where the sweep meters each request's CPU. The layout (seconds, whatever the
    request held) is replaced by a stub; the route, the job and its file are still swept."""
    import reports.render

    monkeypatch.setattr(reports.render, "pdf", lambda doc: b"%PDF-1.7 stub")


@pytest.mark.parametrize("part", range(SWEEP_PARTS))
def test_malformed_input_never_gives_a_server_error(full_study, part, pdf_layout_stubbed):  # noqa: F811
    admin = full_study["roles"]["users"]["admin"]
    client = Client()
    client.force_login(admin)
    ids = object_ids(full_study)
    urls = [url_of(route, name, ids) for route, name in routes()]
    urls = sorted({u for u in urls if u})
    assert len(urls) > 150, urls
    mine = sorted(urls[part::SWEEP_PARTS], key=lambda u: any(word in u for word in LAST))  # deleting routes last
    failures = []
    for url in mine:
        failures += sweep(client, url)
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures)


def test_the_sweep_fills_api_and_page_routes(full_study):  # noqa: F811
    ids = object_ids(full_study)
    urls = {url_of(route, name, ids) for route, name in routes()}
    study = full_study["study"].pk
    assert f"/api/studies/{study}/toolkits/{ids['toolkit_id']}/" in urls
    assert f"/studies/{study}/coding/codebooks/{ids['codebook_id']}/discover/" in urls
    assert json.dumps(sorted(u for u in urls if u and u.startswith("/admin/"))) == "[]"


def test_a_json_body_that_is_not_an_object_is_a_400_that_says_so(roles, api_for):
    study = roles["a"]
    client = api_for(roles["users"]["researcher"])
    for body, kind in (("[1, null]", "list"), ('"text"', "string"), ("7", "number"), ("null", "null")):
        response = client.post(f"/api/studies/{study.pk}/memos/", body, content_type="application/json")
        assert response.status_code == 400, (body, response.status_code)
        assert response.json()["detail"] == f"The request body must be a JSON object with named fields, not a {kind}."


def test_numbers_too_large_for_the_database_are_a_400_that_says_so(roles, client_for, api_for):
    study, researcher = roles["a"], roles["users"]["researcher"]
    page = client_for(researcher).post(f"/studies/{study.pk}/runs/new/", {"toolkit": "9" * 30, "endpoints": "9" * 30})
    # SQLite cannot even look such an id up (OverflowError): the 400 page says why. PostgreSQL looks it up, finds
    # nothing, and the form says so.
    expected = "a number out of range" if connection.vendor == "sqlite" else "Unknown toolkit"
    assert page.status_code == 400 and expected in page.content.decode()
    api = api_for(researcher).post(
        f"/api/studies/{study.pk}/codes/move/", {"codes": [10**30], "new_parent": 10**30}, format="json"
    )
    expected = "a number out of range" if connection.vendor == "sqlite" else "Some codes are not codes of this study."
    assert api.status_code == 400 and expected in api.json()["detail"]


def test_a_judge_template_created_without_a_kind_takes_the_default(roles, api_for):
    from judging.models import JudgeTemplate

    study = roles["a"]
    text = "Does this story show {target_stereotype}? {stories} Answer as JSON."
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/judge-templates/", {"name": "No kind", "text": text}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == JudgeTemplate._meta.get_field("kind").default


def test_a_blind_coder_never_sees_another_coders_work_on_any_route(full_study, make_user):  # noqa: F811
    """Blind mode on every route: another coder of the same stories codes them and writes story, code and coding
    memos (marked SECRET) under a name of their own; the blind coder GETs every page and API route and finds
    neither the notes nor the name, while their own note shows where memos are listed."""
    from annotation import services
    from annotation.models import Assignment
    from stereoscope.models import Membership

    study, users = full_study["study"], full_study["roles"]["users"]
    coder, other = users["coder"], make_user("hidden-coder-7")
    Membership.objects.create(study=study, user=other, role="coder")
    codebook, code = full_study["codebook"], full_study["codes"]["charisma"]
    for out in full_study["outputs"][:3]:
        Assignment.objects.get_or_create(study=study, codebook=codebook, output=out, coder=other)
        coding = services.create_coding(
            study=study, codebook=codebook, output=out, code=code, coder=other, start=0, end=5
        )
        services.add_memo(study, author=other, text=f"SECRET story note {out.pk}", output=out)
        services.add_memo(study, author=other, text="SECRET coding note", coding=coding)
    services.add_memo(study, author=other, text="SECRET code note", code=code)
    services.add_memo(study, author=coder, text="OWN story note", output=full_study["outputs"][0])
    ids = object_ids(full_study)
    urls = sorted({u for u in (url_of(route, name, ids) for route, name in routes()) if u})
    leaks, readable, own_seen = read_every_route(coder, urls, "OWN story note")
    assert readable > 20 and own_seen >= 1, (readable, own_seen)
    assert not leaks, f"another coder's work shows on {len(leaks)} routes: {leaks}"
    # The control: a researcher sees everyone's work, so the same sweep finds it (the markers are visible at all).
    seen_by_researcher, _, _ = read_every_route(users["researcher"], urls, "OWN story note")
    base = f"/api/studies/{study.pk}"
    assert {f"{base}/memos/", f"{base}/codings/"} <= set(seen_by_researcher), seen_by_researcher


def read_every_route(user, urls, own_marker):
    """GET every URL as `user`: (URLs showing the other coder's notes or name, readable pages, own_marker pages)."""
    client = Client()
    client.force_login(user)
    leaks, readable, own_seen = [], 0, 0
    for url in urls:
        response = client.get(url)
        if response.status_code != 200:
            continue
        readable += 1
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", errors="replace")
        own_seen += own_marker in text
        if "SECRET" in text or "hidden-coder-7" in text:
            leaks.append(url)
    return leaks, readable, own_seen


PAYLOAD = '"><img src=x onerror=alert(1)></script><script>alert(2)</script>'
TEXT_FIELDS = {
    "name",
    "text",
    "description",
    "raw_text",
    "quote",
    "note",
    "notes",
    "persona",
    "title",
    "stereotype",
    "target_stereotype",
    "reason",
    "example",
    "answer_text",
    "explanation",
    "rationale",
    "error",
}


def test_text_from_models_and_users_is_escaped_on_every_page(full_study):  # noqa: F811
    """Every free-text column of the study's rows (names, stories, memos, quotes, verdict texts, personas, ...)
    gets an HTML/script payload appended; no HTML page of any route then holds the payload unescaped."""
    from django.apps import apps
    from django.db import models

    touched = 0
    for model in apps.get_models():
        fields = [
            f.name
            for f in model._meta.get_fields()
            if isinstance(f, (models.CharField, models.TextField)) and f.name in TEXT_FIELDS and not f.choices
        ]
        if not fields or not any(f.name == "study" for f in model._meta.get_fields()):
            continue
        for obj in model.objects.filter(study=full_study["study"]):
            for name in fields:
                value = getattr(obj, name) or ""
                limit = model._meta.get_field(name).max_length
                setattr(obj, name, (value + PAYLOAD)[-limit:] if limit else value + PAYLOAD)
            model.objects.filter(pk=obj.pk).update(**{name: getattr(obj, name) for name in fields})
            touched += 1
    assert touched > 30, touched
    client = Client()
    client.force_login(full_study["roles"]["users"]["admin"])
    ids = object_ids(full_study)
    urls = sorted(
        {u for u in (url_of(route, name, ids) for route, name in routes()) if u and not u.startswith("/api/")}
    )
    raw, pages, escaped = [], 0, 0
    for url in urls:
        response = client.get(url)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", "") or response.streaming:
            continue
        pages += 1
        html = response.content.decode()
        escaped += "&lt;img src=x onerror=alert(1)&gt;" in html
        if "<img src=x onerror" in html or "<script>alert(2)" in html:
            raw.append(url)
    assert pages > 50 and escaped > 20, (pages, escaped)
    assert not raw, f"the payload is unescaped on {len(raw)} pages: {raw}"


CODERS_OWN_WORK = {
    ("annotation", "coding"),
    ("annotation", "memo"),
    ("annotation", "assignment"),
    ("annotation", "genderattribution"),
    ("auth", "user"),  # last_login
    ("sessions", "session"),
}


def snapshot(skip):
    """Every row of every model but those in `skip`, as {"app.model": [row values, ...]} (ordered by pk)."""
    from django.apps import apps

    rows = {}
    for model in apps.get_models():
        meta = model._meta
        if (meta.app_label, meta.model_name) in skip or not meta.managed or meta.proxy:
            continue
        rows[meta.label_lower] = list(model.objects.order_by("pk").values_list())
    return rows


def test_a_coders_writes_to_every_route_change_nothing_but_their_own_work(full_study):  # noqa: F811
    """Roles on every route: a coder sends POST (empty form and empty JSON), PUT, PATCH and DELETE to every page and
    API route of the study; afterwards every table but the coder's own work (codings, memos, assignments, gender
    attributions) holds exactly what it held before."""
    before = snapshot(CODERS_OWN_WORK)
    assert sum(len(rows) for rows in before.values()) > 300
    client = Client()
    client.force_login(full_study["roles"]["users"]["coder"])
    ids = object_ids(full_study)
    urls = sorted({u for u in (url_of(route, name, ids) for route, name in routes()) if u})
    allowed = 0
    as_json = {"content_type": "application/json"}
    for url in urls:
        for method, args in (("post", ()), ("post", ({},)), ("put", ({},)), ("patch", ({},)), ("delete", ())):
            kwargs = as_json if args else {}
            allowed += getattr(client, method)(url, *args, **kwargs).status_code < 400
    after = snapshot(CODERS_OWN_WORK)
    changed = {label: (len(before[label]), len(after[label])) for label in before if before[label] != after[label]}
    assert not changed, f"a coder's requests changed these tables (rows before, after): {changed}"
    assert allowed > 0  # some routes are the coder's own (coding, memos), so the sweep reached past the role checks
