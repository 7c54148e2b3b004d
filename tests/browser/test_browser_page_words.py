"""Every message in the page's language, the browser's own included, and
no log words outside an Advanced section (issue 41), in a real browser:

* a field the browser refuses (required and empty) says so in the page's
  words, not the phone's browser's;
* an answer that is not the box's (a proxy's HTML page, a 502) and text
  that does not parse are said in the page's words, never the browser's
  English ("Unexpected token '<'");
* a refused import says which step of the file, in the page's language,
  never "line 2: not valid JSON (Expecting...)";
* a stored game's page names no "JSON", "null" or log line outside its
  closed Advanced section.
"""

from __future__ import annotations

import json
import re

import pytest

from companion.i18n import gettext
from test_browser import PHONE, PIN, WAIT_MS, table  # noqa: F401  (fixtures; the skip rules come with them)
from web_support import http, pin_headers

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

LOG_WORDS = re.compile(r"\b(JSON|null|[Ll]ine \d+|[Ll]igne \d+|Lines)\b")


def phone(browser, lang):
    context = browser.new_context(viewport=PHONE, locale="fr-FR" if lang == "fr" else "en-GB",
                                  is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    return context, context.new_page()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_field_the_browser_refuses_is_said_in_the_pages_words(browser, table, lang):
    context, page = phone(browser, lang)
    try:
        page.goto(table.base + f"/history?lang={lang}")
        said = page.evaluate("""() => {
          const form = document.createElement("form");
          form.innerHTML = '<input id="needed" required><input id="few" type="number" min="1" max="9" value="12">';
          document.querySelector("main").appendChild(form);
          const needed = document.getElementById("needed"), few = document.getElementById("few");
          needed.reportValidity(); few.reportValidity();
          const first = [needed.validationMessage, few.validationMessage];
          needed.value = "x"; needed.dispatchEvent(new Event("input", { bubbles: true }));
          return first.concat([needed.validationMessage, needed.checkValidity()]);
        }""")
    finally:
        context.close()
    assert said[0] == gettext("Fill in this field first.", lang)
    assert said[1] == gettext("Give a number from {min} to {max}.", lang, min=1, max=9)
    assert said[2:] == ["", True]                    # typed in: the field is good again


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_an_answer_that_is_not_the_boxs_is_said_in_the_pages_words(browser, table, lang):
    context, page = phone(browser, lang)
    try:
        page.goto(table.base + f"/history?lang={lang}")
        page.route("**/api/history/import*", lambda route: route.fulfill(
            status=502, content_type="text/html", body="<html><body>Bad Gateway</body></html>"))
        page.evaluate(f"localStorage.setItem('companion.pin', '{PIN}')")
        page.reload()
        page.set_input_files("#import-file", files=[{"name": "g.jsonl", "mimeType": "text/plain",
                                                    "buffer": b'{"type": "new_game"}\n'}])
        page.locator("#import-form button[type=submit]").click()
        msg = page.locator("#import-msg")
        expect(msg).to_have_text(gettext("The box answered with an error ({status}): try again.", lang, status=502))
        parsed = page.evaluate("window.Companion.parseJson('{oops')")
    finally:
        context.close()
    assert parsed["ok"] is False
    assert parsed["error"] == gettext("This is not written as the box reads it: check its brackets, quotes and commas.",
                                      lang)
    assert "Unexpected" not in parsed["error"] and "JSON" not in parsed["error"]


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_refused_import_names_the_step_of_the_file_in_the_pages_language(browser, table, lang):
    context, page = phone(browser, lang)
    try:
        page.goto(table.base + f"/history?lang={lang}")
        expect(page.locator("#import-file-button")).to_have_text(gettext("Choose a file", lang))
        body = (json.dumps({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
                + "\n{not an action\n").encode()
        page.set_input_files("#import-file", files=[{"name": "g.jsonl", "mimeType": "text/plain", "buffer": body}])
        expect(page.locator("#import-file-name")).to_have_text("g.jsonl")
        page.locator("#import-form [data-testid=pin]").fill(PIN)
        page.locator("#import-form button[type=submit]").click()
        msg = page.locator("#import-msg")
        expect(msg).to_contain_text(gettext("Step {n} of the file is refused: {reason}", lang, n=2, reason="")[:12])
        text = msg.inner_text()
    finally:
        context.close()
    assert gettext("this line is not written as an action (it goes wrong at its character {n})", lang, n=2) in text
    assert not LOG_WORDS.search(text), text
    assert "Expecting" not in text


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_games_page_keeps_its_log_words_in_its_advanced_section(browser, table, lang):
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    table.post({"type": "secret", "seat": 0, "value": 7})
    table.post({"type": "add", "seat": 1, "points": 3})
    gid = table.session.game_id
    context, page = phone(browser, lang)
    try:
        page.goto(table.base + f"/history/{gid}?lang={lang}")
        expect(page.locator("#where")).to_have_text(gettext("Step {k} of {n}", lang, k=3, n=3))
        advanced = page.locator("details.advanced")
        expect(advanced).not_to_have_attribute("open", "")
        shown = page.evaluate("""() => {
          const main = document.querySelector("main").cloneNode(true);
          main.querySelectorAll("details.advanced, noscript").forEach(d => d.remove());
          document.body.appendChild(main);
          const text = main.innerText;
          main.remove();
          return text;
        }""")
        advanced.locator("summary").click()
        inside = advanced.inner_text()
    finally:
        context.close()
    assert not LOG_WORDS.search(shown), LOG_WORDS.search(shown).group() + ": " + shown
    assert "JSON" in inside                          # the Advanced section says what the file is
