"""The backup page on a phone (web/backup.py, web/static/backup.js): the
download is the box's backup file (the table PIN), a foreign file is
refused in the page's language and changes nothing, a good one is restored
(staged, the box restarts).  Restoring is the owner's: the page asks for
the owner password, refuses the PIN in its place, and asks once before
anything is replaced, saying what is lost.  Its fit and axe checks are
those of every shared page (tests/browser_pages.py SHARED_PAGES), and this
file's with the question shown."""

from __future__ import annotations

import zipfile

import pytest

from browser_pages import OVERFLOW_JS
from test_browser import PHONE, PIN, Phone, Table  # noqa: F401  (the browser's skip rules come with it)
from test_update_web import OWNER, make_owner
from web_support import http, pin_headers

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


@pytest.fixture
def table(tmp_path):
    """The mock appliance, its set-up ended: it has an owner."""
    t = Table(tmp_path)
    make_owner(t.session.store.dir)
    t.app.extensions["companion"].config["data_dir"] = str(t.session.store.dir)
    yield t
    t.close()


def restore_with(page, file, password):
    """Choose ``file``, type ``password`` in the owner field, press Restore
    and answer the page's one question with "Replace everything" (the box
    looks at the file first: a file or a password it refuses gets its
    answer instead of the question)."""
    restore = page.locator("#restore-form")
    restore.locator("input[type=file]").set_input_files(str(file))
    restore.get_by_test_id("owner-password").fill(password)
    restore.locator("#restore-ask").click()
    page.locator("#restore-confirm:not([hidden]), #restore-msg.error").first.wait_for()
    if page.locator("#restore-confirm").is_visible():
        page.locator("#restore-yes").click()


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
        restore_with(page, other, OWNER)
        message = page.locator("#restore-msg.error")
        message.wait_for()
        words = "pas une sauvegarde" if lang == "fr" else "not a companion backup"
        assert words in message.inner_text()
        _, _, state = http(table.server.port, "GET", "/api/state")
        assert state["scores"] == [0, 4]
        # The good file: staged, the box told to restart.
        restarts = []
        table.app.extensions["companion.restart"] = lambda: restarts.append(True)
        restore_with(page, saved, OWNER)
        page.locator("#restore-msg.ok").wait_for()
        assert (table.session.store.dir / ".restore-new" / "RESTORE-READY").exists()
        assert not phone.errors
    finally:
        phone.context.close()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_restore_asks_once_and_the_pin_is_no_owner_password(browser, table, tmp_path, lang):
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    _, _, backup = http(table.server.port, "GET", "/api/backup", None, pin_headers())
    (tmp_path / "box.zip").write_bytes(backup)
    table.app.extensions["companion.restart"] = lambda: pytest.fail("nothing is restored here")
    phone = Phone(browser, table.base, f"backup-owner-{lang}")
    try:
        page = phone.page
        page.goto(table.base + f"/backup?lang={lang}")
        # The download keeps the PIN; the restore asks for the owner password.
        assert page.locator("#backup-form").get_by_test_id("pin").count() == 1
        owner = page.locator("#restore-form").get_by_test_id("owner-password")
        assert owner.get_attribute("type") == "password"
        assert owner.get_attribute("autocomplete") == "current-password"
        restore = page.locator("#restore-form")
        restore.locator("input[type=file]").set_input_files(str(tmp_path / "box.zip"))
        restore.locator("#restore-ask").click()
        page.locator("#restore-msg.error").wait_for()            # no password: nothing asked, nothing sent
        assert page.locator("#restore-confirm").is_hidden()
        # The question names what is lost; Cancel sends nothing.
        owner.fill(OWNER)
        restore.locator("#restore-ask").click()
        page.locator("#restore-confirm").wait_for()
        if lang == "en":
            assert "Replace everything on this box with the backup of" in page.locator("#restore-prompt").inner_text()
            assert "(1 game)?" in page.locator("#restore-prompt").inner_text()
            assert "What is on this box now is lost: 1 game and" in page.locator("#restore-lost").inner_text()
        problems = page.evaluate(OVERFLOW_JS, PHONE["width"])
        assert not problems, problems
        if lang == "en":
            phone.shot("backup-restore-question")
        page.locator("#restore-no").click()
        assert page.locator("#restore-confirm").is_hidden() and page.locator("#restore-ask").is_visible()
        # The table PIN in the owner field: refused, and nothing staged.
        restore_with(page, tmp_path / "box.zip", PIN)
        message = page.locator("#restore-msg.error")
        message.wait_for()
        if lang == "en":
            assert message.inner_text() == "wrong owner password"
        assert not (table.session.store.dir / ".restore-new").exists()
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
