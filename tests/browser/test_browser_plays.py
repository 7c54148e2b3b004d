"""The "Add to BG Stats" link and the plays files on a 360-px phone, in
English and French: there without JavaScript, nothing past the right edge,
axe-clean (no serious or critical finding)."""

from __future__ import annotations

import os

import pytest

from browser_pages import LANGS, OVERFLOW_JS
from test_browser import PIN, WAIT_MS  # noqa: F401  (the browser's skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

WIDTH = 360


@pytest.mark.parametrize("script", [True, False])
@pytest.mark.parametrize("lang", LANGS)
def test_the_bg_stats_link_on_a_phone(browser, long_table, lang, script, tmp_path):
    import test_browser_axe as axe

    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", java_script_enabled=script,
                                  viewport={"width": WIDTH, "height": 740}, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    problems = []
    try:
        page = context.new_page()
        for path in (f"/history/{long_table.ids['finished']}", "/history"):
            page.goto(long_table.base + path)
            assert page.get_attribute("html", "lang") == lang
            page.wait_for_timeout(axe.SETTLE_MS)
            link = page.locator("a.bgstats").first
            assert link.is_visible(), path
            assert link.get_attribute("href").startswith("https://app.bgstatsapp.com/createPlay.html?data=")
            label = "Ajouter à BG Stats" if lang == "fr" else "Add to BG Stats"
            assert link.inner_text().strip() == label
            problems += [f"{path}: {p}" for p in page.evaluate(OVERFLOW_JS, WIDTH)]
            if script:
                problems += [f"{path}: {v}" for v in axe.severe_violations(page)]
            name = path.strip("/").replace("/", "-")
            page.screenshot(path=str(tmp_path / f"{name}-{lang}-{'js' if script else 'nojs'}.png"), full_page=True)
        if not script:
            page.goto(long_table.base + "/history")
            assert page.locator("#plays button[type=submit]").count() == 2
    finally:
        context.close()
    assert not problems, "\n".join(problems)
    if os.environ.get("COMPANION_KEEP_SHOTS"):
        for shot in tmp_path.glob("*.png"):
            shot.replace(os.path.join(os.environ["COMPANION_KEEP_SHOTS"], shot.name))
