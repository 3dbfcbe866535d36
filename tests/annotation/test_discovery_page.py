"""The code-discovery page labels toolkit versions in its item list and refreshes a pending discovery by itself."""

import re

import pytest

from annotation.models import CodeDiscovery, CodeSuggestion, DiscoveryRequest
from generation.toolkits.services import TOOLKITS
from tests.annotation.test_discovery import discovery_env  # noqa: F401


@pytest.mark.django_db
def test_item_list_labels_toolkit_versions(discovery_env, client_for):  # noqa: F811
    e = discovery_env
    newer = TOOLKITS.new_version(e["item"].toolkit)
    html = client_for(e["u"]["researcher"]).get(f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/")
    select = re.search(r'<select name="item">(.*?)</select>', html.content.decode(), re.S).group(1)
    groups = re.findall(r'<optgroup label="([^"]+)">', select)
    toolkit = e["item"].toolkit
    assert groups == [f"{toolkit.name} v{newer.version}", f"{toolkit.name} v{toolkit.version}"]  # newest first
    options = [re.sub(r"\s+", " ", o).strip() for o in re.findall(r"<option[^>]*>(.*?)</option>", select, re.S)]
    assert len(options) == len(set(options)) == 4  # two items in each of two versions, none repeated unlabelled
    assert all(re.match(r"v\d+ #\d", o) for o in options)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pending_discovery_refreshes_itself(discovery_env, page, login):  # noqa: F811
    e = discovery_env
    discovery = CodeDiscovery.objects.create(
        study=e["study"], codebook=e["cb"], item=e["item"], sample_size=2, status="queued"
    )
    discovery.endpoints.add(e["endpoint"])
    request = DiscoveryRequest.objects.create(discovery=discovery, endpoint=e["endpoint"], output_ids=[1, 2])
    login("researcher")
    page.goto(f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/")
    page.wait_for_selector(f"#discovery-{discovery.pk} h2 .tag:has-text('queued')")
    url = page.url
    CodeSuggestion.objects.create(
        discovery=discovery, request=request, name="Protective fathers", description="Fathers shield girls."
    )
    DiscoveryRequest.objects.filter(pk=request.pk).update(status="done")
    CodeDiscovery.objects.filter(pk=discovery.pk).update(status="completed")
    page.wait_for_selector(f"#discovery-{discovery.pk} input[value='Protective fathers']")
    assert page.url == url
    assert page.locator(f"#discovery-{discovery.pk} h2 .tag").first.inner_text() == "completed"
