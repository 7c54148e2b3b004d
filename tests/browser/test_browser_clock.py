"""The turn clock on the phone pages, in a real browser: every seat's time on
the seat page and the table control, the claimed seat ends its own turn from
its page, the pages fit 320 and 430 px and pass axe-core in English and
French (tests/browser/test_browser_axe.py's rules)."""

from __future__ import annotations

import pytest

from test_browser import PIN, WAIT_MS  # noqa: F401  (the browser's skip rules come with it)
from test_browser_axe import severe_violations
from web_support import http, pin_headers

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


@pytest.fixture
def clocked(long_table):
    table = long_table.play("scoreboard")
    status, _, body = http(table.server.port, "POST", "/api/clock", b'{"mode": "fischer", "bank_s": 600, '
                           b'"extra_s": 5}', {**pin_headers(), "Content-Type": "application/json"})
    assert status == 200, body
    yield table
    # The shared table goes back to its game without a clock.
    status, _, body = http(table.server.port, "GET", "/api/state")
    while "clock" in body:
        http(table.server.port, "POST", "/api/actions", b'{"type": "undo"}',
             {**pin_headers(), "Content-Type": "application/json"})
        status, _, body = http(table.server.port, "GET", "/api/state")


def seat_phone(browser, table, lang="en", width=320):
    """A phone's browser holding seat 0's token, in ``lang``, ``width`` px wide."""
    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB",
                                  viewport={"width": width, "height": 740}, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'0': '{table.token}'}}))")
    return context


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("width", [320, 430])
def test_the_clock_on_the_seat_page_and_the_control(browser, clocked, lang, width):
    table = clocked
    context = seat_phone(browser, table, lang, width)
    try:
        page = context.new_page()
        page.goto(table.base + "/seat/0")
        page.wait_for_selector("#clock-section:not([hidden]) .clock-list li")
        rows = page.locator("#clock-section .clock-list li")
        assert rows.count() >= 2
        assert "10:00" in rows.nth(1).inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        problems = severe_violations(page)
        end = page.locator("#clock-section button.primary")
        assert end.count() == 1                                   # seat 0 runs: its own turn to end
        end.click()
        page.wait_for_function("() => !document.querySelector('#clock-section button.primary')")
        _s, _h, state = http(table.server.port, "GET", "/api/state")
        assert state["clock"]["turn"] == 1

        page.goto(table.base + "/control")
        page.evaluate(f"sessionStorage.setItem('companion.pin', '{PIN}')")
        page.reload()
        page.wait_for_selector("#clock-section:not([hidden]) .clock-list li")
        assert page.locator("#clock-mode").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        problems += severe_violations(page)
        page.locator("#clock-section button.primary").click()    # the table ends the running turn
        page.wait_for_function("() => document.querySelectorAll('#clock-section li.running').length === 1 && "
                               "document.querySelector('#clock-section li.running') === "
                               "document.querySelectorAll('#clock-section li')[2]")
    finally:
        context.close()
    assert not problems, "\n".join(problems)


def test_a_tick_of_the_clock_leaves_its_buttons_under_the_finger(browser, clocked):
    """The running seat's time is drawn again every second; the buttons are
    not made again with it: a button replaced between a finger's press and
    its release loses the tap (no click), and "End my turn" would then do
    nothing one tap in several."""
    table = clocked
    context = seat_phone(browser, table)
    try:
        page = context.new_page()
        page.goto(table.base + "/seat/0")
        page.wait_for_selector("#clock-section:not([hidden]) li.running .clock-time")
        page.wait_for_selector("#clock-section button.primary")
        page.evaluate("() => { window.endButton = document.querySelector('#clock-section button.primary');"
                      " window.shownTime = document.querySelector('#clock-section li.running .clock-time')"
                      ".textContent; }")
        # The running seat's shown second changes: the clock has been drawn again.
        page.wait_for_function("() => document.querySelector('#clock-section li.running .clock-time')"
                               ".textContent !== window.shownTime")
        same = page.evaluate("() => document.querySelector('#clock-section button.primary') === window.endButton")
        assert same, "the clock's tick made its End my turn button anew"
    finally:
        context.close()
