"""The dashboard says which part of a window is past the tenant's retention, in the gateway's words (the CLIs'
"retention:" line: tests/clients/test_retention_node_go.py)."""

from __future__ import annotations

from holistic.tenancy.tenants import hash_token
from tests.clients.test_dashboard_browser import matrix_cell, wait_for
from tests.conftest import drain
from tests.factories import prediction

TOKEN = "team-a-token"
NOTICE_START = "minute buckets before "
NOTICE_MIDDLE = " are past retention (1 hour) and gone"

NOTICE_JS = """
const cell = document.querySelector('#matrix tr[data-model="gpt"] [data-col="predictions"] .retention');
return cell ? [cell.textContent, cell.title] : null;
"""


def test_the_retention_notice_is_shown_beside_the_window(make_gateway, make_worker, make_dashboard, browser, tmp_path):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nminute = "1h"\n')
    gw = make_gateway(families="accuracy", tokens=f"team-a:sha256:{hash_token(TOKEN)}", retention_file=path)
    with gw.client(TOKEN) as team:
        team.submit([prediction("p")], model="gpt")
    drain(make_worker("accuracy"))
    dashboard = make_dashboard(gw.address, TOKEN)

    browser.get(dashboard.url + "?window=24h&model=gpt")
    text, title = wait_for(lambda: browser.execute_script(NOTICE_JS), "the retention notice")
    assert text == "part past retention"
    assert title.startswith(NOTICE_START) and NOTICE_MIDDLE in title, title
    notes = browser.execute_script("return document.querySelector('#radar-notes li').textContent")
    assert notes.endswith("; " + title), notes
    hint = wait_for(lambda: browser.execute_script("return document.querySelector('#detail p.hint')?.textContent"),
                    "the detail")  # fmt: skip
    assert hint.endswith("; " + title), hint

    browser.get(dashboard.url + "?window=1h&model=gpt")  # within the tenant's minute retention: nothing to say
    wait_for(lambda: matrix_cell(browser, "gpt", "predictions") == "1" or None, "the hour's predictions cell")
    assert browser.execute_script(NOTICE_JS) is None
