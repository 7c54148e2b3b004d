"""One PIN per phone: a phone that gave the table PIN once keeps it for the
box's address (localStorage), so every page and every tab uses it without
asking again, until the box refuses it (a new PIN was drawn): then it is
forgotten and the page asks again.  Another phone (another browser context:
its own storage) knows nothing of it.  docs/security.md, "Seats and tokens",
says why keeping it is no weakening: the PIN is on the panel for all to read.
"""

from __future__ import annotations

import json

import pytest

from test_browser import PIN, Phone, table  # noqa: F401  (fixtures; the skip rules come with them)
from web_support import wait_until

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

LOG = [{"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]},
       {"type": "add", "seat": 0, "points": 3}]


def log_file() -> dict:
    text = "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in LOG)
    return {"name": "game.jsonl", "mimeType": "application/x-ndjson", "buffer": text.encode()}


def kept(page) -> str | None:
    return page.evaluate("localStorage.getItem('companion.pin')")


def import_once(page, pin=None):
    page.set_input_files("#import-file", files=[log_file()])
    if pin is not None:
        page.locator("#import-form [data-testid=pin]").fill(pin)
    page.locator("#import-form button[type=submit]").click()


def test_a_phone_gives_the_pin_once_for_every_page_until_the_box_refuses_it(browser, table):
    phone = Phone(browser, table.base, "pin")
    try:
        page = phone.open("/history")
        pin_field = page.locator("#import-form [data-testid=pin]")
        expect(pin_field).to_be_visible()                    # never given: asked
        import_once(page, PIN)
        expect(page.locator("#import-msg")).to_contain_text("Imported as game")
        assert kept(page) == PIN

        # Another tab of the same phone, another page: not asked again.
        other = phone.context.new_page()
        other.goto(table.base + "/history")
        expect(other.locator("#import-pin-kept")).to_be_visible()
        expect(other.locator("#import-form [data-testid=pin]")).to_be_hidden()
        import_once(other)
        expect(other.locator("#import-msg")).to_contain_text("Imported as game")
        other.goto(table.base + "/seat")
        assert other.evaluate("window.Companion.pin.get()") == PIN     # what every page asks for

        # Another phone has its own storage: it is asked.
        stranger = Phone(browser, table.base, "stranger")
        try:
            page2 = stranger.open("/history")
            expect(page2.locator("#import-form [data-testid=pin]")).to_be_visible()
            assert kept(page2) is None
        finally:
            stranger.context.close()

        # The box draws a new PIN: the kept one is refused once, forgotten, asked again.
        table.app.extensions["companion"].guard.set_pin("1357")
        other.goto(table.base + "/history")
        import_once(other)
        expect(other.locator("#import-msg")).to_contain_text("wrong table PIN")
        assert wait_until(lambda: kept(other) is None, timeout=10)
        expect(other.locator("#import-form [data-testid=pin]")).to_be_visible()
        import_once(other, "1357")
        expect(other.locator("#import-msg")).to_contain_text("Imported as game")
        assert kept(other) == "1357"
    finally:
        errors = list(phone.errors)
        phone.context.close()
    assert not errors, errors


def test_a_pin_kept_by_an_older_page_for_its_tab_is_kept_for_the_phone(browser, table):
    phone = Phone(browser, table.base, "older")
    try:
        page = phone.open("/history")
        page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
        page.reload()
        expect(page.locator("#import-pin-kept")).to_be_visible()
        assert kept(page) == PIN
        assert page.evaluate("sessionStorage.getItem('companion.pin')") is None
    finally:
        phone.context.close()
