"""Every table the product serves (page and API downloads) goes through the one table writer with formula escaping:
a story, memo, code name, item, run or endpoint name starting with = + - @ arrives as text ('=...) in CSV and XLSX.

The route list is found, not typed: every URL route (pages and API) whose view mentions a table format is a download
route, and each must be covered below (or be listed as taking uploads only)."""

import csv
import inspect
import io
import re

import pytest
from django.urls import URLResolver, get_resolver, reverse
from openpyxl import load_workbook

from tests.exports.conftest import coded_study, export_root, gen_study  # noqa: F401
from tests.generation.runs.conftest import make_endpoint  # noqa: F401

pytestmark = pytest.mark.django_db

TABLE_FORMAT = re.compile(r"csv|xlsx|jsonl|ndjson|spreadsheet|table_download|workbook_download|table_text", re.I)
POISON = re.compile(r"^[=+\-@]POISON")
ESCAPED = re.compile(r"^'[=+\-@]POISON")

# Routes whose views mention a table format only to read uploads.
UPLOADS_ONLY = {
    "annotation-codebook-create": "codebook upload form",
    "api-codebook-import-": "codebook file import",
    "api-toolkit-import-file": "toolkit file import",
    "api-generation-run-import-outputs": "outputs file import",
    "api-psych-persona-set-list": "persona CSV upload",
    "api-psych-context-set-list": "context CSV upload",
}
# The agreement downloads, checked on their own below.
ELSEWHERE = {
    "agreement-export": lambda d: [
        reverse("agreement-export", args=[d["s"]]) + f"?table={t}&target=code:{d['code']}"
        for t in ("report", "disagreements")
    ]
}  # ratings: ids and numbers only


def _page(name, *args, query=""):
    return lambda d: [reverse(name, args=[d["s"], *[d[a] for a in args]]) + query]


def _api(path, *queries):
    return lambda d: [f"/api/studies/{d['s']}/" + path.format(**d) + q for q in queries]


DOWNLOADS = {
    "toolkit-export": lambda d: [reverse("toolkit-export", args=[d["s"], d["toolkit"], "csv"])],
    "run-collect-sheet": lambda d: [
        reverse("run-collect-sheet", args=[d["s"], d["manual_run"], fmt]) for fmt in ("csv", "xlsx")
    ],
    "annotation-codebook-export": _page("annotation-codebook-export", "codebook", query="?file_format=csv"),
    "annotation-codings-export": lambda d: [
        reverse("annotation-codings-export", args=[d["s"], d["codebook"]]) + q
        for q in ("?file_format=csv&include_text=1", "?file_format=jsonl&include_text=1")
    ],
    "annotation-frequencies": lambda d: [
        reverse("annotation-frequencies", args=[d["s"], d["codebook"]]) + q
        for q in ("?file_format=csv", "?file_format=csv&by=dimension")
    ],
    "judging-round-verdicts-export": lambda d: [
        reverse("judging-round-verdicts-export", args=[d["s"], d["round"], "csv"])
    ],
    "judging-weights": _page("judging-weights", query="?download=csv&method=raw"),
    "psych-run-export": lambda d: [
        reverse("psych-run-export", args=[d["s"], d["psych_run"], fmt])
        for fmt in ("responses.csv", "scores.csv", "xlsx")
    ],
    "measures-csv": lambda d: [
        reverse("measures-csv", args=[d["s"], d["measure_run"], kind]) for kind in ("outputs", "sentences")
    ],
    "api-toolkit-export": _api("toolkits/{toolkit}/export/", "?file_format=csv"),
    "api-generation-run-collection-sheet": _api("runs/{manual_run}/collection_sheet/", "?kind=csv", "?kind=xlsx"),
    "api-codebook-codings-export": _api(
        "codebooks/{codebook}/codings-export/", "?file_format=csv&include_text=1", "?file_format=jsonl&include_text=1"
    ),
    "api-codebook-export": _api("codebooks/{codebook}/export/", "?file_format=csv"),
    "api-codebook-frequencies": _api("codebooks/{codebook}/frequencies/", "?file_format=csv"),
    "api-toolkit-weights-list": _api("toolkit-weights/", "?as=csv&method=raw"),
    "agreement-variable-download": lambda d: [
        reverse("agreement-variable-download", args=[d["s"], d["variable"]]) + q
        for q in ("?table=gold&format=csv", "?table=gold&format=xlsx", "?table=all&format=xlsx&bootstrap=0")
    ],
}


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.name, pattern.callback


def _view_sources(callback):
    cls = getattr(callback, "cls", None)  # a DRF viewset route: the methods of its actions
    if cls is not None:
        functions = [getattr(cls, name) for name in set((getattr(callback, "actions", None) or {}).values())] or [cls]
    else:
        functions = [inspect.unwrap(callback)]
    for function in functions:
        try:
            yield inspect.getsource(function)
        except (OSError, TypeError):
            pass


def download_routes():
    return {
        name
        for _, name, callback in _routes(get_resolver().url_patterns)
        if any(TABLE_FORMAT.search(source) for source in _view_sources(callback))
    }


def test_every_download_route_is_covered():
    found = download_routes()
    assert {"measures-csv", "api-codebook-codings-export", "psych-run-export"} <= found  # the finder finds
    uncovered = found - set(DOWNLOADS) - set(UPLOADS_ONLY) - set(ELSEWHERE)
    assert uncovered == set(), f"download routes without an escaping check: {sorted(uncovered)}"
    assert set(DOWNLOADS) | set(UPLOADS_ONLY) | set(ELSEWHERE) <= found, "stale entries in the route lists"


@pytest.fixture
def poisoned(coded_study, make_endpoint, fake_provider, export_root):  # noqa: F811
    """coded_study with text that a spreadsheet would run, in every kind of served cell; plus a manual collection
    run, a measures run and a questionnaire run."""
    from annotation.models import Memo
    from generation.runs import services as generation_runs
    from judging.models import Verdict
    from measures import scoring
    from measures import services as measure_services
    from psychometrics import runs as psych_runs
    from psychometrics import services as psych_services
    from tests.psychometrics.helpers import load_library

    study, outputs, codes = coded_study["study"], coded_study["outputs"], coded_study["codes"]
    toolkit = coded_study["toolkit"]
    toolkit.name = "=POISON toolkit"
    toolkit.save()
    dimension = toolkit.dimensions.get(name="Leadership")
    dimension.name = "-POISON dimension"
    dimension.save()
    item = coded_study["items"][0]
    item.text, item.target_stereotype = "+POISON item text", "@POISON stereotype"
    item.save()
    for key, name in [("charisma", "=POISON code"), ("loose", "+POISON code")]:
        codes[key].name = name
        codes[key].save()
    codes["caring"].description = "@POISON description"
    codes["caring"].save()
    coder = coded_study["roles"]["users"]["coder"]
    coder.username = "-POISON-coder"  # rater labels head the agreement tables' columns
    coder.save()
    Memo.objects.filter(study=study).update(text="=POISON memo")
    outputs[5].text = "=POISON story. She is kind and caring."
    outputs[5].save()
    Verdict.objects.filter(round=coded_study["round"]).update(rationale="@POISON rationale")

    manual = make_endpoint(study, "manual", model_id="chatgpt-web", name="-POISON manual endpoint")
    manual_run = generation_runs.create_run(study, name="=POISON manual run", toolkit=toolkit, endpoints=[manual])
    generation_runs.start(manual_run)

    lexicon = measure_services.create_lexicon(
        study,
        measure_services.validate_lexicon_data(
            {
                "name": "Care words",
                "categories": [
                    {
                        "key": "care",
                        "name": "Care",
                        "direction": "female",
                        "words": ["kind", "caring"],
                        "color": "#e8590c",
                    }
                ],
            }
        ),
    )
    measure_run = scoring.create_run(study, name="measures", lexicons=[lexicon], classifier="vader")
    scoring.start(measure_run)

    asi, personas = load_library()
    contexts = psych_services.contexts_from_personas(study, "two", personas, n=2, seed=1)
    endpoint = make_endpoint(study, name="-POISON questionnaire endpoint", model_id="m-1")
    fake_provider.default = {"text": "3"}
    psych_run = psych_runs.create_run(
        study, name="=POISON questionnaire run", instrument=asi, context_set=contexts, endpoints=[endpoint]
    )
    psych_runs.start(psych_run)
    variable = _poisoned_variable(study, outputs[:2], coded_study["roles"]["users"])
    return {
        "s": study.pk,
        "toolkit": toolkit.pk,
        "codebook": coded_study["codebook"].pk,
        "round": coded_study["round"].pk,
        "manual_run": manual_run.pk,
        "measure_run": measure_run.pk,
        "psych_run": psych_run.pk,
        "admin": coded_study["roles"]["users"]["admin"],
        "code": codes["charisma"].pk,
        "variable": variable.pk,
    }


def _poisoned_variable(study, outputs, users):
    """A story variable with a poisoned value name, coded by two coders (its gold labels name the value)."""
    from annotation import services
    from annotation.models import Assignment

    codebook = services.import_codebook(
        study,
        {
            "name": "Regard",
            "codes": [
                {
                    "name": "Regard",
                    "codable": False,
                    "variable": "story",
                    "children": [{"name": "=POISON value"}, {"name": "plain"}],
                }
            ],
        },
    )
    values = {c.name: c for c in codebook.codes.filter(codable=True)}
    for output in outputs:
        Assignment.objects.create(study=study, codebook=codebook, output=output, coder=users["coder"])
        for user in (users["coder"], users["researcher"]):
            services.create_coding(
                study=study, codebook=codebook, output=output, code=values["=POISON value"], coder=user
            )
    return codebook.codes.get(name="Regard")


def _cells(response):
    """The text cells of a CSV or XLSX download (JSONL is lossless: nothing to check)."""
    body = b"".join(response.streaming_content) if response.streaming else response.content
    content_type = response["Content-Type"]
    if "spreadsheetml" in content_type:
        book = load_workbook(io.BytesIO(body))
        cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
        assert not [c.coordinate for c in cells if c.data_type == "f"], "a formula cell in the workbook"
        return [c.value for c in cells if isinstance(c.value, str)]
    if "csv" in content_type:
        return [cell for row in csv.reader(io.StringIO(body.decode("utf-8-sig"))) for cell in row]
    assert "ndjson" in content_type, content_type
    return None


def _problems(client, url):
    response = client.get(url)
    if response.status_code != 200:
        return [f"{url}: status {response.status_code}"]
    cells = _cells(response)
    if cells is None:
        return []
    raw = [cell for cell in cells if POISON.match(cell)]
    if raw:
        return [f"{url}: unescaped {raw[:3]}"]
    if not any(ESCAPED.match(cell) for cell in cells):
        return [f"{url}: no poisoned cell reached this table (the check would prove nothing)"]
    return []


def test_every_download_escapes_formulas(poisoned, client_for):
    client = client_for(poisoned["admin"])
    problems = [problem for urls in DOWNLOADS.values() for url in urls(poisoned) for problem in _problems(client, url)]
    assert problems == [], "\n".join(problems)


def test_agreement_download_escapes_formulas(poisoned, client_for):
    client = client_for(poisoned["admin"])
    problems = [problem for urls in ELSEWHERE.values() for url in urls(poisoned) for problem in _problems(client, url)]
    assert problems == [], "\n".join(problems)
