"""Every phone page fits phones from 320 to 430 px wide, in English and in
French, with the longest names the box accepts and many rounds of history
(issue 15): nothing passes the phone's right edge, except inside a box that
scrolls sideways on purpose and that a keyboard can reach.

One box for the whole run (browser_support.long_table), one browser context
per game and language, one page per width; each game in turn is made the
game at the table.  At 320 px, in English, a screenshot of each page goes
to test-artifacts/ (fit-<game>-<page>.png).
"""

from __future__ import annotations

import pytest

from browser_pages import FINISHED, GAMES, LANGS, OVERFLOW_JS, PAGES, SHARED_PAGES, WIDTHS, settle
from test_browser import ARTIFACTS, PIN, WAIT_MS  # noqa: F401  (the skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

SETTLE_MS = 350          # the history fetched after the state (chart, round tables)


def phone_pages(browser, lang, token=None):
    """One context in ``lang`` (Accept-Language), one page per width."""
    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", is_mobile=True, has_touch=True,
                                  viewport={"width": WIDTHS[0], "height": 740})
    context.set_default_timeout(WAIT_MS)
    if token:
        context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'0': '{token}'}}))")
    pages = {}
    for width in WIDTHS:
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 740})
        pages[width] = page
    return context, pages


def visit(page, base, path, lang):
    """Open ``path`` ("/control+pin": the control page with the PIN saved) and let it settle."""
    if path == "/control+pin":
        page.goto(base + "/control")
        page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
        page.reload()
    else:
        page.goto(base + path)
    assert page.get_attribute("html", "lang") == lang
    settle(page)
    page.wait_for_timeout(SETTLE_MS)


def check(pages, base, paths, lang, shot_prefix):
    problems = []
    for width, page in pages.items():
        for path in paths:
            visit(page, base, path, lang)
            for problem in page.evaluate(OVERFLOW_JS, width):
                problems.append(f"{path} at {width}px ({lang}): {problem}")
            if width == WIDTHS[0] and lang == "en":
                ARTIFACTS.mkdir(exist_ok=True)
                slug = path.strip("/").replace("/", "-").replace("+", "-") or "board"
                page.screenshot(path=str(ARTIFACTS / f"fit-{shot_prefix}-{slug}.png"), full_page=True)
    return problems


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("game", list(GAMES))
def test_every_page_of_a_long_game_fits_the_phone(browser, long_table, game, lang):
    table = long_table.play(game)
    context, pages = phone_pages(browser, lang, table.token)
    try:
        paths = list(PAGES) + ["/control+pin", f"/history/{table.ids[game]}"]
        problems = check(pages, table.base, paths, lang, game)
    finally:
        context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("game", list(FINISHED))
def test_every_page_of_a_game_that_ended_fits_the_phone(browser, long_table, game, lang):
    """The game at the table has just ended there (the board's end and its
    last result), and the store holds a finished game of every kind."""
    table = long_table
    ended = table.finish(game)
    context, pages = phone_pages(browser, lang)
    try:
        paths = list(PAGES) + ["/control+pin", f"/history/{ended}", f"/history/{table.ids['finished-' + game]}"]
        problems = check(pages, table.base, paths, lang, f"ended-{game}")
    finally:
        context.close()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", LANGS)
def test_the_shared_pages_fit_the_phone(browser, long_table, lang):
    table = long_table.play("third-man")
    context, pages = phone_pages(browser, lang)
    try:
        problems = check(pages, table.base, SHARED_PAGES, lang, "table")
    finally:
        context.close()
    assert not problems, "\n".join(problems)
