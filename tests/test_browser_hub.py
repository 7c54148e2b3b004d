"""The table control's tournament block in a real browser (Debian's chromium
through Playwright, as tests/test_browser.py): a box joined to a real hub on
real PostgreSQL, whose organiser seated round 1; the phone's "Start the
tournament table" starts that game with those players, and the box stops
offering it."""

from __future__ import annotations

import pytest

from hub_support import add_box, hub_db, hub_server, pg_server  # noqa: F401 (fixtures)
from test_browser import BLINK_MS, phones, table  # noqa: F401
from test_hub_box import organiser, view
from test_web_support import PIN, wait_until

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


def test_the_control_page_starts_the_tournament_table(hub_server, table, phones):
    from hub.box import attach

    key = add_box(hub_server.db, "t1")
    tid = organiser(hub_server.db, ["Dan", "Chloé", "Ben", "Ann"], ["t1"])
    seated = view(hub_server.db, tid)["rounds"][0]["tables"][0]["players"]
    stop = attach(table.app, table.session.store, table.session, table.app.extensions["companion"].config
                  | {"hub_url": f"http://127.0.0.1:{hub_server.port}", "hub_key": key})
    try:
        feeder = table.box.app.hub
        assert wait_until(lambda: feeder.status()["offer"] is not None, 10), feeder.status()
        phone = phones("control")
        phone.context.add_init_script(f"sessionStorage.setItem('companion.pin', {PIN!r})")
        page = phone.open("/control")
        section = page.locator("#hub-offer-section")
        expect(section).to_be_visible(timeout=BLINK_MS)
        expect(section).to_contain_text("Tournament round 1, table 1")
        expect(section).to_contain_text(", ".join(seated))
        section.get_by_role("button", name="Start the tournament table").click()
        expect(page.locator("#control-msg")).to_have_text("Started.", timeout=BLINK_MS)
        state = table.session.public()
        assert state["game"] == "third-man" and state["players"] == seated
        expect(section).to_be_hidden(timeout=BLINK_MS)          # started: offered no more
        assert feeder.status()["offer"] is None
    finally:
        stop()
