"""The backup page on a phone (web/backup.py, web/static/backup.js): the
download is the box's backup file, a foreign file is refused in the page's
language and changes nothing, a good one is restored (staged, the box
restarts).  Its fit and axe checks are those of every shared page
(tests/browser_pages.py SHARED_PAGES)."""

from __future__ import annotations

import zipfile

import pytest

from test_browser import PIN, Phone, Table  # noqa: F401  (the browser's skip rules come with it)
from web_support import http, pin_headers

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    yield t
    t.close()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_page_downloads_the_backup_and_refuses_a_foreign_file(browser, table, tmp_path, lang):
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    table.post({"type": "add", "seat": 1, "points": 4})
    phone = Phone(browser, table.base, "backup")
    try:
        page = phone.page
        page.goto(table.base + f"/backup?lang={lang}")
        assert page.get_attribute("html", "lang") == lang
        form = page.locator("#backup-form")
        form.locator("input[name=pin]").fill(PIN)
        with page.expect_download() as got:
            form.locator("button").click()
        saved = tmp_path / "backup.zip"
        got.value.save_as(saved)
        assert got.value.suggested_filename.startswith("companion-")
        with zipfile.ZipFile(saved) as zf:
            assert "games/000001.jsonl" in zf.namelist()
        page.locator("#backup-msg.ok").wait_for()
        # A foreign file: one line in the page's language, and the game goes on.
        other = tmp_path / "other.zip"
        with zipfile.ZipFile(other, "w") as zf:
            zf.writestr("notes.txt", "hello")
        restore = page.locator("#restore-form")
        restore.locator("input[type=file]").set_input_files(str(other))
        restore.locator("input[name=pin]").fill(PIN)
        restore.locator("button").click()
        message = page.locator("#restore-msg.error")
        message.wait_for()
        words = "pas une sauvegarde" if lang == "fr" else "not a companion backup"
        assert words in message.inner_text()
        _, _, state = http(table.server.port, "GET", "/api/state")
        assert state["scores"] == [0, 4]
        # The good file: staged, the box told to restart.
        restarts = []
        table.app.extensions["companion.restart"] = lambda: restarts.append(True)
        restore.locator("input[type=file]").set_input_files(str(saved))
        restore.locator("button").click()
        page.locator("#restore-msg.ok").wait_for()
        assert (table.session.store.dir / ".restore-new" / "RESTORE-READY").exists()
        assert not phone.errors
    finally:
        phone.context.close()


def test_a_wrong_pin_is_said_on_the_page(browser, table):
    phone = Phone(browser, table.base, "backup")
    try:
        page = phone.page
        page.goto(table.base + "/backup")
        form = page.locator("#backup-form")
        form.locator("input[name=pin]").fill("0000" if PIN != "0000" else "1111")
        form.locator("button").click()
        page.locator("#backup-msg.error").wait_for()
        assert "PIN" in page.locator("#backup-msg").inner_text()
        assert http(table.server.port, "GET", "/api/backup", None, pin_headers())[0] == 200
    finally:
        phone.context.close()
