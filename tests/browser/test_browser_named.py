"""A scoreboard game named "Carcassonne" at its start, in a real browser at
390 px, in English and French: its name on the scoreboard (the page's title
and its heading), in History (the list and the game's page) and in
Statistics (a section of its own, not "Scoreboard"); and History's rows
show each seat's points (a 12–0 win: "12 ✓ · 0"), tokens beside them where
the game used them.  Screenshots: test-artifacts/named-<page>-<lang>.png."""

from __future__ import annotations

import pytest

from companion.i18n import gettext
from test_browser import ARTIFACTS, PHONE, WAIT_MS, table  # noqa: F401  (fixtures; the skip rules come with them)

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

PLAYERS = ["Marc-Antoine", "Éloïse"]


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_named_game_is_called_by_its_name_and_history_shows_its_points(browser, table, lang):
    table.post({"type": "new_game", "game": "scoreboard", "players": PLAYERS,              # unnamed, with tokens
                "options": {"target": 5}})
    table.post({"type": "token", "seat": 0, "delta": 2})
    table.post({"type": "add", "seat": 1, "points": 7})
    table.post({"type": "new_game", "game": "scoreboard", "players": PLAYERS,
                "options": {"name": "Carcassonne", "target": 10}})
    table.post({"type": "add", "seat": 0, "points": 12})                                  # 12-0: over
    gid = table.session.game_id
    context = browser.new_context(viewport=PHONE, locale="fr-FR" if lang == "fr" else "en-GB",
                                  device_scale_factor=2, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(table.base + "/")
        expect(page.locator("#board h1.game-title")).to_have_text("Carcassonne")
        assert page.title().startswith("Carcassonne · ")

        page.goto(table.base + "/history")
        games = page.locator("#games > li")
        expect(games.first.locator("a.big")).to_have_text("Carcassonne")
        expect(games.first).to_contain_text(gettext("Scoreboard", lang))
        named_row = " ".join(games.first.locator(".player-result").all_inner_texts())
        assert "Marc-Antoine 12 ✓" in named_row and "Éloïse 0" in named_row and "●" not in named_row, named_row
        tokens_row = games.nth(1).locator(".player-result").all_inner_texts()
        assert [" ".join(r.split()) for r in tokens_row] == ["Marc-Antoine 0 (2 ●)", "Éloïse 7 (0 ●) ✓"], tokens_row
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"named-history-{lang}.png"), full_page=True)

        games.first.locator("a.big").click()
        page.wait_for_url(f"**/history/{gid}")
        assert page.title().startswith("Carcassonne · ")
        expect(page.locator("main h1")).to_contain_text("Carcassonne")

        page.goto(table.base + "/stats")
        headings = [h.strip() for h in page.locator("section.per-game h2").all_text_contents()]
        assert headings == [gettext("Scoreboard", lang), "Carcassonne"], headings
        page.screenshot(path=str(ARTIFACTS / f"named-stats-{lang}.png"), full_page=True)
    finally:
        context.close()
    assert not errors, errors
