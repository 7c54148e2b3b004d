"""The table control's tournament block in a real browser (Debian's chromium
through Playwright, as tests/browser/test_browser.py): a box joined to a real hub on
real PostgreSQL, whose organiser seated round 1; the phone's "Start the
tournament table" starts that game with those players, and the box stops
offering it."""

from __future__ import annotations

import re

import pytest

from hub_support import add_box, hub_db, hub_server, pg_server  # noqa: F401 (fixtures)
from test_browser import BLINK_MS, phones, table  # noqa: F401
from test_hub_box import organiser, view
from web_support import PIN, wait_until

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


# -- the big screen ------------------------------------------------------------------

def _club(hub_server, count=51):
    """``count`` boxes live-1 … live-N with a table each (live-3 finished,
    live-5 quiet for an hour, stored straight in the database)."""
    from hub.db import connect
    from web_support import http

    players = ["Ann", "Ben", "Chloé", "Dan"]
    for n in range(1, count + 1):
        key = add_box(hub_server.db, f"live-{n}")
        state = {"game": "third-man", "players": players, "tokens": [n % 3, 0, 1, 0], "scores": [0, 0, 0, 0]}
        if n == 3:
            state.update(finished=True, winner=[0], tokens=[3, 0, 1, 0])
        if n == 5:
            continue
        assert http(hub_server.port, "PUT", "/api/box/state", {"game": n, "state": state},
                    {"Authorization": f"Bearer {key}"})[0] == 200
    with connect(hub_server.db) as conn:
        conn.execute("UPDATE boxes SET state = %s, state_updated = now() - interval '1 hour' WHERE name = 'live-5'",
                     (__import__("json").dumps({"game": "third-man", "players": players, "tokens": [0, 0, 0, 0]}),))


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_the_big_screen_shows_fifty_one_tables(hub_server, browser, size):
    _club(hub_server)
    context = browser.new_context(viewport={"width": size[0], "height": size[1]}, locale="fr-FR")
    try:
        page = context.new_page()
        missing = []
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
        page.goto(f"http://127.0.0.1:{hub_server.port}/tables?lang=fr&page_seconds=1")
        cards = page.locator("#tables .live-table")
        expect(cards.first).to_be_visible(timeout=BLINK_MS)
        pages = int(page.locator("#tables").get_attribute("data-pages"))
        shown = {}                      # page number -> its boxes, each read in one go
        for _ in range(60):
            now = page.evaluate(
                "() => { const root = document.getElementById('tables');"
                " const cards = [...root.querySelectorAll('.live-table')];"
                " return {page: root.dataset.page, boxes: cards.map(e => e.dataset.box),"
                " font: parseFloat(getComputedStyle(root).fontSize),"
                " inside: cards.every(e => { const r = e.getBoundingClientRect();"
                " return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 1 && r.right <= innerWidth + 1; })}; }")
            # every card of the page lies inside the window, readable (>= 14 px)
            assert now["inside"] and now["font"] >= 14, (size, now)
            shown[now["page"]] = now["boxes"]
            if len(shown) == pages:
                break
            page.wait_for_timeout(300)
        seen = [b for n in sorted(shown, key=int) for b in shown[n]]
        # natural order: live-2 before live-10; all 51, each once
        assert seen == [f"live-{n}" for n in range(1, 52)], seen[:12]
        if pages > 1:
            expect(page.locator("#pager")).to_contain_text("sur")
        first = page.locator('#tables .live-table[data-box="live-1"]')
        if first.count() == 0:
            page.wait_for_selector('#tables .live-table[data-box="live-1"]', timeout=15_000)
        expect(first).to_contain_text("Le 3e Homme")                 # the title, in the page's language
        if pages > 1:
            page.wait_for_selector('#tables .live-table[data-box="live-3"]', timeout=15_000)
        done = page.locator('#tables .live-table[data-box="live-3"]')
        expect(done).to_have_class(re.compile("finished"))
        expect(done).to_contain_text("Terminée")
        quiet = page.locator('#tables .live-table[data-box="live-5"]')
        expect(quiet).to_have_class(re.compile("quiet"))
        expect(quiet).to_contain_text("Calme depuis")
        assert not missing, missing                                   # the favicon too
        assert page.evaluate("fetch('/favicon.ico').then(r => r.status)") == 200
    finally:
        context.close()
