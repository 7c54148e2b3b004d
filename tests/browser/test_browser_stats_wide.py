"""Statistics' tables on a phone, with long accented names: at 390 px in
English a game's six columns fit ("Streak" whole, not cut to "S");
wherever a table is still wider than the phone (French, 320 px) it says so
in words under it, not only by a shadow.  Screenshots in test-artifacts/."""

from __future__ import annotations

import pytest

from test_browser import ARTIFACTS, Table  # noqa: F401  (the browser's skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

NAMES = [["Marc-Antoine", "Éloïse"], ["Élodie-Françoise Łukasz", "Zoë Ångström-Kowalczyk"]]


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    table = Table(tmp_path_factory.mktemp("stats"))
    for players in NAMES:
        table.post({"type": "new_game", "game": "scoreboard", "players": players, "options": {"target": 10}})
        table.post({"type": "add", "seat": 0, "points": 12})
    yield table
    table.close()


# Each table box: wider than it shows?  Its last header cell seen whole?  A hint under it?
BOXES_JS = """() => [...document.querySelectorAll('main .scroll')].map(box => {
  const last = box.querySelector('thead th:last-child').getBoundingClientRect();
  const shown = box.getBoundingClientRect();
  const next = box.nextElementSibling;
  return {wider: box.scrollWidth > box.clientWidth + 1, lastWhole: last.right <= shown.right + 0.5,
          last: box.querySelector('thead th:last-child').textContent,
          hint: !!(next && next.classList.contains('more-columns') && next.offsetParent !== null)};
})"""


@pytest.mark.parametrize("lang, width", [("en", 390), ("fr", 390), ("en", 320), ("fr", 320)])
def test_a_wide_table_fits_or_says_that_it_scrolls(browser, played, lang, width):
    context = browser.new_context(viewport={"width": width, "height": 844}, device_scale_factor=2,
                                  is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(f"{played.base}/stats?lang={lang}")
        page.wait_for_selector(".per-game .scroll")
        page.wait_for_timeout(100)                     # the hints follow the first layout
        boxes = page.evaluate(BOXES_JS)
        assert len(boxes) == 2
        for box in boxes:
            assert box["hint"] == box["wider"], box
            assert box["wider"] or box["lastWhole"], box
        if (lang, width) == ("en", 390):
            assert not any(box["wider"] for box in boxes), "English fits a 390 px phone"
            assert [box["last"] for box in boxes] == ["Streak", "Streak"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"stats-{lang}-{width}.png"), full_page=True)
    finally:
        context.close()
