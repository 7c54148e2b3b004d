"""The step-through of a long stored game in a real browser (Debian's
chromium through Playwright, as tests/browser/test_browser.py, whose fixtures and
skip rules these tests share): the page carries the first page of steps,
its script fetches the others (docs/api.md, "One game") and steps through
all of them."""

from __future__ import annotations

import json

import pytest

from test_browser import phones, table  # noqa: F401  (fixtures; the skip rules come with them)
from web_support import http, pin_headers

from companion.limits import HISTORY_PAGE_STEPS
from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]      # the one browser of the run (its ``browser`` fixture)
pytestmark = pytest.mark.browser


def test_a_game_longer_than_one_page_steps_through_every_step(table, phones):
    total = 2 * HISTORY_PAGE_STEPS + 33
    lines = [json.dumps({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})]
    lines += [json.dumps({"type": "add", "seat": n % 2, "points": 1}) for n in range(total - 1)]
    status, _, body = http(table.server.port, "POST", "/api/history/import",
                           ("\n".join(lines) + "\n").encode(), pin_headers())
    assert status == 200, body
    page = phones("history").open(f"/history/{body['id']}")
    where = page.locator("#where")
    expect(where).to_contain_text(f"Step {total} of {total}")
    page.locator("#first").click()
    expect(where).to_contain_text(f"Step 1 of {total}")
    page.locator("#last").click()
    page.locator("#prev").click()
    expect(where).to_contain_text(f"Step {total - 1} of {total}")
    expect(page.locator("#step-board")).to_contain_text(str((total - 1) // 2))   # a score from the last page


def test_resuming_a_stored_game_asks_once_and_names_the_game_the_table_leaves(table, phones):
    # A stored, unfinished scoreboard game; then a Third Man match at the table, in its round 1.
    lines = [json.dumps({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]}),
             json.dumps({"type": "add", "seat": 0, "points": 4})]
    status, _, body = http(table.server.port, "POST", "/api/history/import",
                           ("\n".join(lines) + "\n").encode(), pin_headers())
    assert status == 200, body
    table.post({"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]})
    page = phones("history").open(f"/history/{body['id']}")
    page.evaluate("Companion.pin.set('%s')" % pin_headers()["X-Table-Pin"])
    page.locator("#resume-button").click()
    question = page.locator("#resume-confirm")
    expect(question).to_contain_text("Resume this game?")
    expect(question).to_contain_text("The Third Man (Ann, Ben, Chloé, Dan), round 1, stays in History as unfinished")
    page.locator("#resume-no").click()                  # Cancel: nothing changes
    expect(question).to_have_count(0)
    assert table.session.public()["game"] == "third-man"
    page.locator("#resume-button").click()
    page.locator("#resume-yes").click()
    expect(page.locator("#msg")).to_contain_text("Resumed")
    assert table.session.public()["game"] == "scoreboard"
