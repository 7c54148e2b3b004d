"""The Update page on a phone (web/update.py, web/static/update.js): the
owner password field sends a bundle, changes the release keys and goes
back to the previous version, which asks once on the page and says what is
lost; the table PIN in that field is refused; a computer with no installer
says where updates are installed and waits for nothing.  At 390 px, in
English and in French, with long accented key comments and every message
and question shown, nothing passes the phone's right edge.

What root is asked is recorded (tests/web/test_update_web.py); root's
answer is written where root writes it."""

from __future__ import annotations

import pytest

from browser_pages import LONG, OVERFLOW_JS
from test_browser import ARTIFACTS, PHONE, PIN, Phone, Table  # noqa: F401  (the browser's skip rules come with it)
from test_update_web import (OWNER, asked_back, asked_keys, fingerprint_of, installed,  # noqa: F401 (fixtures)
                             key_line, make_owner, root_answered)
from appliance import updates

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

# A comment as long as a name may be, and accented; a second key with none.
KEYS = [key_line(1, " ".join(LONG[:2])), key_line(2)]


class UpdateTable(Table):
    """The mock appliance with an owner, and an installer (``installer``)
    with its releases and release keys under the test's folder."""

    def __init__(self, tmp_path, installer=True, keys=KEYS):
        super().__init__(tmp_path)
        folder = self.session.store.dir
        self.lay = updates.Layout(prefix=tmp_path / "opt", data=folder, root=tmp_path / "update-root",
                                  keys=tmp_path / "release-keys")
        if installer:
            installed(self.lay.prefix, current="2.0.1-Éloïse", previous="1.9.7-Marc-Antoine")
        self.lay.keys.write_text("".join(k + "\n" for k in keys), encoding="utf-8")
        make_owner(folder)
        self.app.extensions["companion"].config.update(
            data_dir=str(folder), update_state=str(self.lay.root), update_prefix=str(self.lay.prefix),
            release_keys=str(self.lay.keys))


@pytest.fixture
def make_table(tmp_path, asked_keys, asked_back):
    made = []

    def make(**kw):
        made.append(UpdateTable(tmp_path / str(len(made)), **kw))
        return made[-1]
    yield make
    for t in made:
        t.close()


def phone_in(browser, table, lang, name):
    phone = Phone(browser, table.base, name)
    phone.page.goto(table.base + f"/update?lang={lang}")
    assert phone.page.get_attribute("html", "lang") == lang
    return phone


def fits(page) -> list:
    return page.evaluate(OVERFLOW_JS, PHONE["width"])


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_going_back_asks_once_names_what_is_lost_and_needs_the_owner(browser, make_table, asked_back, lang):
    table = make_table()
    phone = phone_in(browser, table, lang, f"update-back-{lang}")
    try:
        page = phone.page
        assert "2.0.1-Éloïse" in page.locator("#update-version").inner_text()
        owner = page.get_by_test_id("owner-password")
        assert owner.get_attribute("type") == "password"
        assert owner.get_attribute("autocomplete") == "current-password"
        ask, confirm = page.locator("#back-ask"), page.locator("#back-confirm")
        # No password yet: the page says where it goes, and asks nothing.
        ask.click()
        page.locator("#back-msg.error").wait_for()
        assert confirm.is_hidden()
        owner.fill(OWNER)
        ask.click()
        confirm.wait_for()
        prompt = page.locator("#back-prompt").inner_text()
        assert "1.9.7-Marc-Antoine" in prompt
        if lang == "en":
            assert "The games played since the update are not on the previous version" in prompt
        assert not fits(page), fits(page)
        page.locator("#back-no").click()
        assert confirm.is_hidden() and ask.is_visible() and not asked_back
        ask.click()
        page.locator("#back-yes").click()
        page.locator("#back-msg.ok").wait_for()
        assert [password for _lay, password, _request in asked_back] == [OWNER]
        assert confirm.is_hidden()
        if lang == "en":
            phone.shot("update-back")
    finally:
        phone.close()


def test_the_pin_in_the_owner_field_is_refused_and_the_owner_password_sends_the_bundle(browser, make_table, tmp_path):
    table = make_table()
    bundle = tmp_path / "companion-2.1.bundle"
    bundle.write_bytes(b"signed bundle bytes")
    phone = phone_in(browser, table, "en", "update-upload")
    try:
        page = phone.page
        page.locator("#update-file").set_input_files(str(bundle))
        page.get_by_test_id("owner-password").fill(PIN)
        page.locator("#update-form button[type=submit]").click()
        error = page.locator("#update-error.error")
        error.wait_for()
        assert "wrong owner password" in error.inner_text()
        assert not table.lay.incoming.exists()
        page.get_by_test_id("owner-password").fill(OWNER)
        page.locator("#update-form button[type=submit]").click()
        # Asked, and still asked when the page looks again: the request waits for root.
        page.wait_for_function("document.getElementById('update-status').dataset.state === 'asked'")
        assert table.lay.incoming.read_bytes() == b"signed bundle bytes"
    finally:
        phone.close()


def test_the_keys_are_listed_added_and_removed_with_the_owner_password(browser, make_table, asked_keys):
    table = make_table()
    phone = phone_in(browser, table, "en", "update-keys")
    try:
        page = phone.page
        listed = page.locator("#keys li")
        assert listed.count() == 2
        assert fingerprint_of(KEYS[0]) in listed.nth(0).inner_text()
        assert LONG[0] in listed.nth(0).inner_text() and "no comment" in listed.nth(1).inner_text()
        page.get_by_test_id("owner-password").fill(OWNER)
        page.locator("#key-line").fill("ssh-rsa AAAAB3NzaC1yc2E me@laptop")
        page.locator("#key-form button[type=submit]").click()
        page.locator("#keys-msg.error").wait_for()
        assert "release key: one line" in page.locator("#keys-msg").inner_text() and not asked_keys
        new = key_line(3, "Zoë Ångström-Kowalczyk")
        page.locator("#key-line").fill(new)
        page.locator("#key-form button[type=submit]").click()
        page.wait_for_function("document.getElementById('keys-msg').textContent.indexOf('Asked') === 0")
        (_lay, password, change, request), = asked_keys
        assert password == OWNER and change == {"add": new}
        # Root did it: the list comes back with the new key.
        table.lay.keys.write_text("".join(k + "\n" for k in [*KEYS, new]), encoding="utf-8")
        root_answered(table.lay, request=request, state="done", reason="", params={})
        page.locator("#keys-msg.ok").wait_for()
        assert listed.count() == 3 and "Zoë Ångström-Kowalczyk" in listed.nth(2).inner_text()
        listed.nth(1).locator("button").click()
        page.wait_for_function("document.getElementById('keys-msg').textContent.indexOf('Asked') === 0")
        assert asked_keys[-1][2] == {"remove": fingerprint_of(KEYS[1])}
        # Root refused it: its reason, said on the page.
        root_answered(table.lay, request=asked_keys[-1][3], state="failed", reason="wrong owner password", params={})
        page.locator("#keys-msg.error").wait_for()
        assert page.locator("#keys-msg").inner_text() == "wrong owner password" and listed.count() == 3
    finally:
        phone.close()


def test_a_box_without_keys_says_it_accepts_no_update(browser, make_table):
    table = make_table(keys=())
    phone = phone_in(browser, table, "en", "update-no-keys")
    try:
        assert phone.page.locator("#no-keys").inner_text() == "This box accepts no update: add a release key."
        assert phone.page.locator("#keys li").inner_text() == "No release key: this box accepts no update."
    finally:
        phone.close()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_computer_with_no_installer_says_so_and_waits_for_nothing(browser, make_table, lang):
    """The laptop demo: the running version, where updates are installed,
    and no request after the page's own (nothing to follow)."""
    import companion

    table = make_table(installer=False)
    phone = Phone(browser, table.base, f"update-laptop-{lang}")
    asked = []
    phone.page.on("request", lambda r: "/api/" in r.url and asked.append(r.url))
    try:
        page = phone.page
        page.goto(table.base + f"/update?lang={lang}")
        assert companion.__version__ in page.locator("#update-version").inner_text()
        assert page.locator("#no-installer").is_visible()
        assert page.locator("form").count() == 0
        page.wait_for_load_state("networkidle")
        assert not [url for url in asked if "/api/update" in url], asked
    finally:
        phone.close()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_update_page_fits_the_phone_with_everything_shown(browser, make_table, lang):
    """Every part of the page at once: the version names, the keys' long
    comments, the question before going back, each message."""
    table = make_table()
    phone = phone_in(browser, table, lang, f"update-fit-{lang}")
    try:
        page = phone.page
        page.get_by_test_id("owner-password").fill(OWNER)
        page.locator("#back-ask").click()
        page.evaluate("""() => {
          for (const id of ["update-error", "keys-msg", "back-msg"]) {
            const n = document.getElementById(id);
            n.hidden = false; n.className = "msg error";
            n.textContent = "Élodie-Françoise Łukasz Øystein Großmann-Ñúñez";
          }
        }""")
        problems = fits(page)
        phone.shot(f"update-{lang}")
        assert not problems, problems
    finally:
        phone.close()


def test_the_update_page_passes_axe(browser, make_table):
    from test_browser_axe import severe_violations

    table = make_table()
    phone = phone_in(browser, table, "en", "update-axe")
    try:
        phone.page.get_by_test_id("owner-password").fill(OWNER)
        phone.page.locator("#back-ask").click()
        problems = severe_violations(phone.page)
        assert not problems, problems
    finally:
        phone.close()


def test_a_password_beyond_latin1_goes_through_the_page(browser, make_table, asked_keys):
    """A header carries bytes: the page sends the password's UTF-8 bytes
    and the box reads them back, so "œ" and "€" work as any letter does."""
    from appliance import owner

    table = make_table()
    password = "le cœur de la table, 5 €"
    owner.write_hash(table.session.store.dir, owner.hash_password(password))
    phone = phone_in(browser, table, "en", "update-utf8")
    try:
        page = phone.page
        page.get_by_test_id("owner-password").fill(password)
        page.locator("#key-line").fill(key_line(3))
        page.locator("#key-form button[type=submit]").click()
        page.wait_for_function("() => { const m = document.querySelector('#keys-msg'); "
                               "return m && m.textContent.trim() !== '' && m.textContent.trim() !== 'Sending…' }")
        assert asked_keys and asked_keys[-1][1] == password, page.inner_text("#keys-msg")
    finally:
        phone.close()
