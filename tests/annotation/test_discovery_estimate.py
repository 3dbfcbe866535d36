"""Before a discovery starts, the researcher sees what it will cost: requests, estimated tokens and price per
model (live and batch), from the same sample and prompts the discovery would send. Nothing is created."""

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import CodeDiscovery
from generation.runs.limits import estimate_tokens

from .test_discovery import discovery_env  # noqa: F401
from .test_discovery_jobs import _batch_endpoints

pytestmark = pytest.mark.django_db


def test_estimate_matches_the_requests_the_discovery_then_writes(discovery_env, make_endpoint):  # noqa: F811
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    args = dict(endpoints=endpoints, item=e["item"], sample_size=3, seed=3, story_groups=2)
    estimate = services.estimate_discovery(e["study"], e["cb"], **args)
    assert CodeDiscovery.objects.count() == 0, "an estimate creates nothing"
    discovery = services.start_discovery(e["study"], e["cb"], **args, actor=e["u"]["researcher"])
    requests = list(discovery.requests.select_related("endpoint"))
    assert estimate["requests"] == len(requests) == 4 and estimate["stories"] == 6 and estimate["groups"] == 2
    for row, endpoint in zip(estimate["endpoints"], endpoints, strict=True):
        mine = [r for r in requests if r.endpoint_id == endpoint.pk]
        tokens_in = sum(estimate_tokens(str(m["content"])) for r in mine for m in r.messages)
        assert (row["endpoint"], row["requests"]) == (endpoint.name, 2)
        assert row["input_tokens"] == tokens_in and row["output_tokens"] == 2 * 900  # the endpoint's max_tokens
        # $2 and $8 per million tokens; batch mode at half price
        live = (Decimal(tokens_in) * 2 + Decimal(1800) * 8) / Decimal(1_000_000)
        assert Decimal(row["cost_usd"]) == live.quantize(Decimal("0.000001"))
        assert Decimal(row["batch_cost_usd"]) == (live / 2).quantize(Decimal("0.000001"))
    assert Decimal(estimate["cost_usd"]) == sum(Decimal(r["cost_usd"]) for r in estimate["endpoints"])


def test_estimate_refuses_what_start_refuses(discovery_env):  # noqa: F811
    e = discovery_env
    with pytest.raises(services.AnnotationError, match="sample size"):
        services.estimate_discovery(e["study"], e["cb"], endpoint=e["endpoint"], item=e["item"], sample_size=99)
    e["endpoint"].input_price_per_mtok = None
    e["endpoint"].save()
    unpriced = services.estimate_discovery(e["study"], e["cb"], endpoint=e["endpoint"], item=e["item"])
    assert unpriced["cost_usd"] is None and unpriced["endpoints"][0]["cost_usd"] is None


def test_estimate_on_the_page_and_in_the_api(discovery_env, client_for, api_for):  # noqa: F811
    e = discovery_env
    e["endpoint"].input_price_per_mtok, e["endpoint"].output_price_per_mtok = 3, 15
    e["endpoint"].save()
    url = reverse("annotation-discover", args=[e["study"].pk, e["cb"].pk])
    form = {"op": "estimate", "endpoints": e["endpoint"].pk, "item": e["item"].pk, "sample_size": 4, "seed": 7}
    assert client_for(e["u"]["coder"]).post(url, form).status_code == 403
    body = client_for(e["u"]["researcher"]).post(url, form).content.decode()
    expected = services.estimate_discovery(e["study"], e["cb"], endpoint=e["endpoint"], item=e["item"], sample_size=4)
    assert "Estimated cost" in body and f"${expected['cost_usd']}" in body
    assert 'name="sample_size" value="4"' in body and 'name="seed" value="7"' in body, "the form keeps its values"
    assert CodeDiscovery.objects.count() == 0
    base = f"/api/studies/{e['study'].pk}/code-discoveries/estimate/"
    body = {"codebook": e["cb"].pk, "endpoints": [e["endpoint"].pk], "item": e["item"].pk, "sample_size": 4}
    assert api_for(e["u"]["coder"]).post(base, body, format="json").status_code == 403
    r = api_for(e["u"]["researcher"]).post(base, body, format="json")
    assert r.status_code == 200 and r.json()["cost_usd"] == expected["cost_usd"] and r.json()["requests"] == 1
    r = api_for(e["u"]["researcher"]).post(base, {**body, "story_groups": "many"}, format="json")
    assert r.status_code == 400 and "number of story groups" in r.json()["detail"]
    assert CodeDiscovery.objects.count() == 0
