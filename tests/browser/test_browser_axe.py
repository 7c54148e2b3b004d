"""Every phone page passes axe-core with no serious or critical violation,
in English and in French, light and dark (issue 15): labelled fields,
scrolling boxes a keyboard reaches, colour contrast of at least 4.5:1 (axe's
``color-contrast`` rule, run with every other rule: none is turned off).

axe-core is the npm package (``npm install --prefix .ci/node axe-core@4``,
as .ci/run does); its ``axe.min.js`` is injected into each page.  Without it
the module is skipped, unless ``COMPANION_REQUIRE_AXE=1`` (CI).
``COMPANION_AXE`` may name another copy of axe.min.js.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_pages import FINISHED, GAMES, LANGS, PAGES, SHARED_PAGES, settle
from test_browser import PIN, WAIT_MS  # noqa: F401  (the browser's skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

AXE = Path(os.environ.get("COMPANION_AXE") or
           Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules" / "axe-core" / "axe.min.js")
SETTLE_MS = 350
WIDTH = 360
SEVERE = ("serious", "critical")


def _axe_or_skip() -> str:
    if AXE.is_file():
        return AXE.read_text(encoding="utf-8")
    problem = f"{AXE} is missing (npm install --prefix .ci/node axe-core@4)"
    if os.environ.get("COMPANION_REQUIRE_AXE") == "1":
        pytest.fail(f"COMPANION_REQUIRE_AXE=1 but {problem}", pytrace=False)
    pytest.skip(problem, allow_module_level=True)


AXE_JS = _axe_or_skip()


def severe_violations(page) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now."""
    page.add_script_tag(content=AXE_JS)
    result = page.evaluate("""async () => {
      const r = await axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => n.target.join(" ") + ": " + (n.failureSummary || "").split("\\n").slice(1, 2).join(""))
      }));
    }""")
    return [f"{v['id']} ({v['impact']}): {v['help']} -- {'; '.join(v['nodes'][:3])}"
            for v in result if v["impact"] in SEVERE]


def audit(browser, base, paths, lang, scheme, token=None):
    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", color_scheme=scheme,
                                  viewport={"width": WIDTH, "height": 740}, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    if token:
        context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'0': '{token}'}}))")
    problems = []
    try:
        page = context.new_page()
        for path in paths:
            if path == "/control+pin":
                page.goto(base + "/control")
                page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
                page.reload()
            else:
                page.goto(base + path)
            assert page.get_attribute("html", "lang") == lang
            settle(page)
            page.wait_for_timeout(SETTLE_MS)
            problems += [f"{path} ({lang}, {scheme}): {v}" for v in severe_violations(page)]
    finally:
        context.close()
    return problems


def test_axe_finds_what_it_should(browser, long_table):
    """The check can fail: a field without a label and grey on white are found."""
    context = browser.new_context(viewport={"width": WIDTH, "height": 740})
    try:
        page = context.new_page()
        page.goto(long_table.base + "/join")
        page.evaluate("""() => {
          const main = document.querySelector("main");
          main.insertAdjacentHTML("beforeend", '<input id="bare"><p style="color:#aaa;background:#fff">faint</p>');
        }""")
        found = " ".join(severe_violations(page))
    finally:
        context.close()
    assert "label" in found and "color-contrast" in found, found


# Both languages in the light scheme; the dark scheme's colours are the same
# in both languages: checked in English.
LOOKS = [(lang, "light") for lang in LANGS] + [("en", "dark")]


@pytest.mark.parametrize("lang, scheme", LOOKS)
@pytest.mark.parametrize("game", list(GAMES))
def test_every_page_of_a_game_passes_axe(browser, long_table, game, lang, scheme):
    table = long_table.play(game)
    paths = list(PAGES) + ["/control+pin", f"/history/{table.ids[game]}"]
    problems = audit(browser, table.base, paths, lang, scheme, table.token)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang, scheme", LOOKS)
@pytest.mark.parametrize("game", list(FINISHED))
def test_every_page_of_a_game_that_ended_passes_axe(browser, long_table, game, lang, scheme):
    """The game at the table has just ended there; the store holds a finished game of every kind."""
    table = long_table
    ended = table.finish(game)
    paths = list(PAGES) + ["/control+pin", f"/history/{ended}", f"/history/{table.ids['finished-' + game]}"]
    problems = audit(browser, table.base, paths, lang, scheme)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang, scheme", LOOKS)
def test_the_shared_pages_pass_axe(browser, long_table, lang, scheme):
    table = long_table.play("third-man")
    problems = audit(browser, table.base, SHARED_PAGES, lang, scheme)
    assert not problems, "\n".join(problems)
