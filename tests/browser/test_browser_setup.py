"""The Setup page in a real browser: axe-clean (no serious or critical
finding) and no sideways scrolling from 320 to 430 px, in English and
French, light and dark, in each of its states (the form with the networks,
a failed join with its reason, joined with the new address)."""

from __future__ import annotations

import json

import pytest

from browser_pages import OVERFLOW_JS
from test_browser import PIN  # noqa: F401  (the browser's skip rules come with it)
from test_browser_axe import severe_violations

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

SHOTS = "/tmp/companion-setup-screens"
STATES = {
    "form": None,
    "failed": {"state": "failed", "ssid": "Maison de Marc-Antoine et d'Éloïse", "reason": "wrong_password"},
    "joined": {"state": "joined", "ssid": "Maison de Marc-Antoine et d'Éloïse", "address": "192.168.77.42",
               "port": 8000, "hostname": "marc-antoine-et-eloise"},
}


@pytest.fixture(scope="module")
def setup_box(tmp_path_factory):
    from appliance import setup
    from web_support import make_app, make_session, running_server

    data = tmp_path_factory.mktemp("setup-box")
    (data / setup.NETWORKS).write_text(json.dumps(
        [{"ssid": "Chez Éloïse & Marc-Antoine", "signal": 81, "secured": True},
         {"ssid": "Café-Éloïse-invités", "signal": 35, "secured": False}]))
    app = make_app(make_session(data), data_dir=str(data), name="Marc-Antoine", port=8000)
    with running_server(app) as server:
        yield f"http://127.0.0.1:{server.port}", data
    app.extensions["companion"].close()


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("state", sorted(STATES))
def test_the_setup_page_is_axe_clean_and_fits(browser, setup_box, lang, state):
    from appliance import setup

    base, data = setup_box
    status = data / setup.STATUS
    if STATES[state] is None:
        status.unlink(missing_ok=True)
    else:
        status.write_text(json.dumps(STATES[state]))
    problems = []
    for scheme in ("light", "dark"):
        for width in (320, 430):
            context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", color_scheme=scheme,
                                          viewport={"width": width, "height": 740}, is_mobile=True, has_touch=True)
            page = context.new_page()
            page.goto(f"{base}/setup?lang={lang}")
            page.wait_for_timeout(300)
            if state == "form":
                page.click("summary")           # the SSH field too
            problems += [f"{width}px {scheme}: {p}" for p in page.evaluate(OVERFLOW_JS, width)]
            if width == 320:
                problems += [f"{scheme}: {v}" for v in severe_violations(page)]
                if scheme == "light":
                    page.screenshot(path=f"{SHOTS}/page-{state}-{lang}.png", full_page=True)
            context.close()
    assert problems == []


def test_a_person_finishes_setup_with_an_owner_password_then_finds_the_owner_section(browser, tmp_path):
    """As a person would: the PIN, the owner password twice (a typo first),
    Finish; the page then says the box is set up and shows the owner's
    section, which refuses a wrong owner password in words, in French too."""
    from appliance import owner, setup
    from web_support import make_app, make_session, running_server

    data = tmp_path / "finish-box"
    data.mkdir()
    app = make_app(make_session(data), data_dir=str(data), name="Marc-Antoine", port=8000)
    problems = []
    with running_server(app) as server:
        context = browser.new_context(locale="fr-FR", viewport={"width": 390, "height": 844},
                                      is_mobile=True, has_touch=True)
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{server.port}/setup?lang=fr")
        page.fill("[data-testid=pin]", PIN)
        page.fill("#setup-name", "Chez Éloïse & Marc-Antoine")
        page.fill("#setup-owner", "Éloïse garde la clé")
        page.fill("#setup-owner-again", "Éloïse garde la cle")
        page.click("button[type=submit]")
        page.wait_for_selector("#setup-error:not([hidden])")
        assert "diffèrent" in page.inner_text("#setup-error")
        assert setup.in_setup_mode(data)
        page.fill("#setup-owner-again", "Éloïse garde la clé")
        page.click("button[type=submit]")
        page.wait_for_selector("#owner-form")
        assert not setup.in_setup_mode(data)
        assert owner.verify("Éloïse garde la clé", owner.read_hash(data))
        problems += page.evaluate(OVERFLOW_JS, 390)
        problems += severe_violations(page)
        page.screenshot(path=f"{SHOTS}/page-owner-fr.png", full_page=True)
        page.fill("[data-testid=owner-password]", "pas le bon mot de passe")
        page.click("#owner-ssh-remove")
        page.wait_for_function("document.getElementById('owner-msg').textContent.includes('propriétaire')")
        context.close()
    app.extensions["companion"].close()
    assert problems == []
