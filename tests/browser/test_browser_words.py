"""Every word and number a phone shows, in the phone's language (issue 19):
the history's step lines have each game's own wording (never the log's
field names: "Ingrid : bid card 0" on a French phone), Diabolo's usual
colours read in the phone's language whatever language stored them, a
seat page counts seats from 1, and a negative number has a real minus
sign ("−10", never "-10").

The long games are browser_support.long_table's (every game, long names,
many rounds); the colour checks import their own small games.
"""

from __future__ import annotations

import json
import re

import pytest

from browser_pages import GAMES, LANGS, jsonl
from test_browser import PIN, WAIT_MS, phones, table  # noqa: F401  (fixtures; the skip rules come with them)
from web_support import http, pin_headers, wait_until

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

SETTLE_MS = 350

# Every step of the game on /history/<id>, as the step-through shows it: the
# step's line, and whether the game's own wording made it (not the generic
# "type key value" line).  Runs once the later pages of steps have come.
STEPS_JS = """async () => {
  const C = window.Companion;
  for (let i = 0; i < 100 && !(C.boot.detail.steps.length >= C.boot.detail.page.total); i++)
    await new Promise(r => setTimeout(r, 50));
  const scrub = document.getElementById("scrub");
  const out = [];
  const steps = C.boot.detail.steps;
  for (let k = 0; k < steps.length; k++) {
    scrub.value = String(k);
    scrub.dispatchEvent(new Event("input"));
    const a = steps[k].action;
    const line = document.getElementById("action").textContent;
    // new_game, undo and the turn clock's lines are the framework's own
    // wording in every game (a clock line names each seat's time, never the
    // generic "type key value" line with its "banks").
    const own = a.type === "new_game" || a.type === "undo" || (a.type === "clock" && !/\bbanks\b/.test(line))
      || !!C.gameOf(steps[k].state).describe(steps[k]);
    out.push({ k: k, type: a.type, line: line, own: own,
               page: document.getElementById("steps").innerText });
  }
  return out;
}"""

# The log's own words: its action types and field names.  None may reach a
# French phone's step line (the long games' names and colours hold none).
LOG_WORDS = re.compile(r"\b(bid|card|cards|seat|trick|winner|deal|lead|turn|play|take|hand|ask|target|"
                       r"value|hit|pass|last|place|color|side|score|hands|doubles|add|token|delta|"
                       r"amount|hidden|null|true|false)\b")
# A hyphen-minus before a digit, not inside a word ("Élodie-2" would be a name).
HYPHEN_NUMBER = re.compile(r"(?<![\w\u00C0-\u024F])-\d")


def phone(browser, lang, token=None):
    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", is_mobile=True, has_touch=True,
                                  viewport={"width": 360, "height": 740})
    context.set_default_timeout(WAIT_MS)
    if token:
        context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'0': '{token}'}}))")
    return context, context.new_page()


def visit(page, base, path):
    if path == "/control+pin":
        page.goto(base + "/control")
        page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
        page.reload()
    else:
        page.goto(base + path)
    page.wait_for_timeout(SETTLE_MS)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("game", list(GAMES))
def test_every_step_line_has_the_games_own_words_in_the_phones_language(browser, long_table, game, lang):
    table = long_table.play(game)
    context, page = phone(browser, lang)
    try:
        visit(page, table.base, f"/history/{table.ids[game]}")
        steps = page.evaluate(STEPS_JS)
    finally:
        context.close()
    assert len(steps) > 5
    generic = [f"step {s['k']} ({s['type']}): {s['line']!r}" for s in steps if not s["own"]]
    assert not generic, "steps without the game's own wording:\n" + "\n".join(generic[:10])
    if lang == "fr":
        english = [f"step {s['k']}: {s['line']!r}" for s in steps if LOG_WORDS.search(s["line"])]
        assert not english, "English log words on a French phone:\n" + "\n".join(english[:10])
    hyphens = [f"step {s['k']}: {s['page'][:200]!r}" for s in steps if HYPHEN_NUMBER.search(s["page"])]
    assert not hyphens, "a hyphen for a minus sign:\n" + "\n".join(hyphens[:5])


def test_the_log_words_check_can_fail():
    assert LOG_WORDS.search("Ingrid : bid card 0") and not LOG_WORDS.search("Ingrid joue 0")
    assert HYPHEN_NUMBER.search("Ann -10") and HYPHEN_NUMBER.search("(-3)") and not HYPHEN_NUMBER.search("Ann \u221210")
    assert not HYPHEN_NUMBER.search("Élodie-2 Zoë-3")


@pytest.mark.parametrize("game", list(GAMES))
def test_a_negative_number_has_a_minus_sign_on_every_page(browser, long_table, game):
    table = long_table.play(game)
    context, page = phone(browser, "en", table.token)
    found = []
    try:
        for path in ["/", "/seat/0", "/control+pin", f"/history/{table.ids[game]}", "/history", "/stats"]:
            visit(page, table.base, path)
            # innerText skips what is hidden; the closed <details> (older bids) are opened first.
            text = page.evaluate("""() => { document.querySelectorAll("details").forEach(d => d.open = true);
                                            return document.body.innerText; }""")
            found += [f"{path}: ...{text[max(0, m.start() - 40):m.end() + 10]!r}" for m in HYPHEN_NUMBER.finditer(text)]
    finally:
        context.close()
    assert not found, "a hyphen for a minus sign:\n" + "\n".join(found[:8])


# -- Diabolo's colours --------------------------------------------------------------------------

def diabolo(colours: list[str]) -> list[dict]:
    log = [{"type": "new_game", "game": "diabolo", "players": ["Zoé", "Marc-Antoine", "Li", "Ingrid"]}]
    for k, colour in enumerate(colours):
        log.append({"type": "score", "color": colour, "hands": [k + 1, 2, 3, 9], "heaven": 9, "hell": 2 + k})
    return log


def imported(table, log) -> int:
    status, _, body = http(table.server.port, "POST", "/api/history/import", jsonl(log), pin_headers())
    assert status == 200, body
    return body["id"]


def test_a_stored_colour_reads_in_the_phones_language_whatever_language_stored_it(table, phones):
    french = imported(table, diabolo(["rouge", "bleu", "turquoise"]))       # a French box's words, one typed
    ids = imported(table, diabolo(["red", "blue"]))                          # a phone's ids
    english = phones("en").open(f"/history/{french}")
    expect(english.locator("#step-details")).to_contain_text("red")
    text = english.inner_text("main")
    assert "red" in text and "blue" in text and "turquoise" in text, text
    assert "rouge" not in text and "bleu" not in text, text
    page = phones("fr").open(f"/history/{ids}?lang=fr")
    expect(page.locator("#step-details")).to_contain_text("rouge")
    text = page.inner_text("main")
    assert "rouge" in text and "bleu" in text, text
    assert not re.search(r"\b(red|blue)\b", text), text


def control(phones, name, table, lang="en"):
    page = phones(name).open("/control")
    page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
    page.goto(table.base + f"/control?lang={lang}")
    colours = page.locator(".choices.colours").first.locator("button")
    expect(colours.first).to_be_visible()
    return page, [(b.inner_text().strip(), b.get_attribute("data-color")) for b in colours.all()]


def score_on(page, table, label):
    page.locator(".choices.colours").first.get_by_role("button", name=label, exact=True).click()
    for seat in range(4):
        page.fill(f"#hand-{seat}", str(seat + 1))
    page.fill("#heaven", "9")
    page.fill("#hell", "2")
    before = http(table.server.port, "GET", "/api/state")[2]["scored"]
    page.click("#enter-score")
    assert wait_until(lambda: http(table.server.port, "GET", "/api/state")[2]["scored"] != before, timeout=5)
    return http(table.server.port, "GET", "/api/state")[2]


def test_the_control_page_says_a_games_colours_in_the_phones_language_and_stores_them_as_the_game_named_them(
        table, phones):
    """A French box named the colours; an English phone reads them in English
    and scores one under the game's own name (never a sixth colour)."""
    players = ["Zoé", "Marc-Antoine", "Li", "Ingrid"]
    table.post({"type": "new_game", "game": "diabolo", "players": players})
    for k, colour in enumerate(["rouge", "bleu", "vert", "jaune", "violet"]):        # round 1, as a French box
        table.post({"type": "score", "color": colour, "hands": [k, 2, 3, 9], "heaven": 9, "hell": 2})
    page, offered = control(phones, "en", table)
    assert sorted(offered) == sorted([("red", "rouge"), ("blue", "bleu"), ("green", "vert"),
                                      ("yellow", "jaune"), ("purple", "violet")]), offered
    state = score_on(page, table, "red")
    assert state["scored"] == ["rouge"] and state["colors"] == ["rouge", "bleu", "vert", "jaune", "violet"], state


def test_a_new_colour_from_a_phone_is_stored_as_its_id(table, phones):
    table.post({"type": "new_game", "game": "diabolo", "players": ["Zoé", "Marc-Antoine", "Li", "Ingrid"]})
    page, offered = control(phones, "fr", table, lang="fr")
    assert ("rouge", "red") in offered and ("bleu", "blue") in offered, offered
    state = score_on(page, table, "bleu")
    assert state["scored"] == ["blue"], state


def test_a_seat_page_counts_seats_from_1(table, phones):
    table.post({"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]})
    page = phones("seat").open("/seat/0")
    expect(page.locator("#private")).to_contain_text("This phone does not hold seat 1.")
    page = phones("seat9").open("/seat/8")
    expect(page.locator("#private")).to_contain_text("There is no seat 9 in this game.")
    assert json.dumps({"seat": 0})          # the API's own index stays 0 (docs/api.md)
