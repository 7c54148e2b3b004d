"""The Setup page on a phone (390x844), in English and French: the time
zone is picked from a list by region and city ("Paris" under Europe, not
typed), Finish says what was saved and the field keeps it; "Set up again"
asks once, saying what the box forgets, and nothing changes until the
answer.  Screenshots in test-artifacts/."""

from __future__ import annotations

import json

import pytest

from test_browser import PHONE, PIN, Phone  # noqa: F401  (the browser's skip rules come with it)
from test_update_web import OWNER
from web_support import wait_until

from playwright.sync_api import expect

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

WORDS = {"en": {"zone": "Time zone: Paris (Europe/Paris)", "name": "The table's name: Marc-Antoine et Éloïse",
                "saved": "Saved", "europe": "Europe"},
         "fr": {"zone": "Fuseau horaire : Paris (Europe/Paris)", "name": "Nom de la table : Marc-Antoine et Éloïse",
                "saved": "Enregistré", "europe": "Europe"}}


@pytest.fixture
def fresh_box(tmp_path):
    """A data folder fresh from the image: set-up mode."""
    from web_support import make_app, make_session, running_server

    data = tmp_path / "fresh"
    data.mkdir()
    app = make_app(make_session(data), data_dir=str(data), name="companion", port=8000, root_requests=False)
    with running_server(app) as server:
        yield f"http://127.0.0.1:{server.port}", data
    app.extensions["companion"].close()


def api_setup(page, base):
    return json.loads(page.evaluate(f"fetch('{base}/api/setup').then(r => r.text())"))


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_time_zone_is_picked_from_a_list_finish_says_what_was_saved_and_a_reset_asks(browser, fresh_box, lang):
    from appliance import owner, setup

    base, data = fresh_box
    words = WORDS[lang]
    phone = Phone(browser, base, f"setup-{lang}")
    try:
        page = phone.page
        page.goto(f"{base}/setup?lang={lang}")
        zone = page.locator("#setup-timezone")
        assert zone.evaluate("el => el.tagName") == "SELECT", "a list, not free text"
        paris = page.locator('#setup-timezone optgroup[label="%s"] option[value="Europe/Paris"]' % words["europe"])
        expect(paris).to_have_text("Paris")
        zone.select_option(label="Paris")
        page.fill("#setup-name", "Marc-Antoine et Éloïse")
        page.fill("#setup-owner", OWNER)
        page.fill("#setup-owner-again", OWNER)
        pin = page.get_by_test_id("pin")
        pin.fill(PIN)
        phone.fits()
        phone.shot(f"setup-{lang}-1-form")
        pin.press("Enter")                                  # Enter in the PIN field finishes
        saved = page.locator("#setup-saved")
        expect(saved).to_be_visible()                       # after the reload: what was stored
        expect(saved).to_contain_text(words["saved"])
        expect(saved).to_contain_text(words["zone"])
        expect(saved).to_contain_text(words["name"])
        view = api_setup(page, base)
        assert view["setup_mode"] is False and view["timezone"] == "Europe/Paris" and view["name"] == "Marc-Antoine et Éloïse"
        phone.fits()
        phone.shot(f"setup-{lang}-2-saved")

        # Set up again: asked once, after Reset settings on the box; nothing changes before the answer.
        setup.ask_reset(data)
        page.reload()
        page.get_by_test_id("owner-password").fill(OWNER)
        page.click("#owner-reset")
        expect(page.locator("#reset-confirm")).to_be_visible()
        assert not setup.in_setup_mode(data) and owner.read_hash(data) is not None, "nothing reset before yes"
        phone.fits()
        phone.shot(f"setup-{lang}-3-reset-asks")
        page.click("#reset-no")
        expect(page.locator("#reset-confirm")).to_be_hidden()
        assert not setup.in_setup_mode(data) and owner.read_hash(data) is not None
        page.click("#owner-reset")
        page.click("#reset-yes")
        assert wait_until(lambda: setup.in_setup_mode(data)), page.locator("#owner-msg").inner_text()
        expect(page.locator("#owner-msg")).to_contain_text("set-up" if lang == "en" else "configuration")
    finally:
        phone.close()
