"""The Setup page's board section in a real browser: axe-clean and no
sideways scrolling from 320 to 430 px, English and French, light and dark,
in set-up (the table PIN) and after it (the owner password), on a box with
a board (web/templates/_setup_board.html)."""

from __future__ import annotations

import pytest

from browser_pages import OVERFLOW_JS
from test_browser import PIN  # noqa: F401  (the browser's skip rules come with it)
from test_browser_axe import severe_violations

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

SHOTS = "/tmp/companion-setup-screens"


@pytest.fixture(scope="module", params=["setup", "done"])
def board_box(request, tmp_path_factory):
    from gpiozero.pins.mock import MockFactory

    from appliance import setup
    from hardware import Box
    from hardware.testing import box_config
    from web_support import make_app, make_session, running_server

    data = tmp_path_factory.mktemp(f"board-{request.param}")
    if request.param == "done":
        setup.mark_done(data, True)
    session = make_session(data)
    factory = MockFactory()
    box = Box(session, box_config(board="waveshare-oled-hat", data_dir=str(data)), mock=True, pin_factory=factory)
    box.start()
    app = make_app(session, box=box, data_dir=str(data), name="Marc-Antoine", port=8000)
    with running_server(app) as server:
        yield f"http://127.0.0.1:{server.port}", request.param
    app.extensions["companion"].close()
    box.close()
    factory.reset()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_board_section_is_axe_clean_and_fits(browser, board_box, lang):
    base, state = board_box
    problems = []
    for scheme in ("light", "dark"):
        for width in (320, 430):
            context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", color_scheme=scheme,
                                          viewport={"width": width, "height": 740}, is_mobile=True, has_touch=True)
            page = context.new_page()
            page.goto(f"{base}/setup?lang={lang}")
            page.wait_for_timeout(300)
            assert page.locator("#board-section").is_visible()
            assert page.locator("#board-owner").count() == (1 if state == "done" else 0)
            problems += [f"{width}px {scheme}: {p}" for p in page.evaluate(OVERFLOW_JS, width)]
            if width == 320:
                problems += [f"{scheme}: {v}" for v in severe_violations(page)]
                if scheme == "light":
                    page.locator("#board-section").screenshot(path=f"{SHOTS}/board-{state}-{lang}.png")
            context.close()
    assert problems == []
