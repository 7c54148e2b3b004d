"""The seat and the table control with a keyboard alone, and what a screen
reader hears (issue 15): Tab, Shift+Tab, Enter, Space and the arrow keys
only -- never a click -- play a Third Man bid from two seat pages and an undo
and an action from the table control; the reveal and the round's end are
written into the page's polite live region (#announce).

Real browser, real server and box, as tests/browser/test_browser.py (whose fixtures
and skip rules these tests share).
"""

from __future__ import annotations

import pytest

from test_browser import BLINK_MS, PIN, PLAYERS, phones, table  # noqa: F401  (fixtures, skip rules)
from test_pages import third_man_round
from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


def focused(page, selector: str) -> bool:
    return page.evaluate("(sel) => !!document.activeElement && document.activeElement.matches(sel)", selector)


def tab_to(page, selector: str, back: bool = False, most: int = 80):
    """Press Tab (Shift+Tab) until the focus is on ``selector``."""
    for _ in range(most):
        if focused(page, selector):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"Tab never reaches {selector}")


def play_card_with_keys(page, card: int):
    """Into the hand with Tab, along it with the arrow keys, Enter picks, Space confirms."""
    tab_to(page, "#private .hand button")
    for _ in range(12):
        if focused(page, f'#private .hand button[data-card="{card}"]'):
            break
        page.keyboard.press("ArrowRight")
    assert focused(page, f'#private .hand button[data-card="{card}"]'), "the arrow keys walk the hand"
    page.keyboard.press("Enter")
    expect(page.locator(f'#private .hand button[data-card="{card}"]')).to_have_attribute("aria-pressed", "true")
    assert focused(page, "#private button.confirm"), "after a pick the focus waits on the confirm button"
    page.keyboard.press("Space")


def test_a_third_man_bid_with_the_keyboard_alone_and_the_reveal_is_announced(table, phones):
    table.post({"type": "new_game", "game": "third-man", "players": PLAYERS})
    ann, ben = phones("ann"), phones("ben")
    ann.keep_token(0, table.claim(0))
    ben.keep_token(1, table.claim(1))
    table.press("ok", "ok")                              # the box keeps both claims
    spectator = phones("spectator")
    board = spectator.open("/")
    live = board.locator("#announce")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live).to_have_attribute("role", "status")
    expect(live).to_have_text("")

    lead = ann.open("/seat/0")
    expect(lead.locator("#private")).to_contain_text("You lead")
    expect(lead.locator("#private")).to_have_attribute("aria-live", "polite")
    play_card_with_keys(lead, 5)
    expect(lead.locator("#private")).to_contain_text("You showed 5.", timeout=BLINK_MS)

    seat = ben.open("/seat/1")
    expect(seat.locator("#private")).to_contain_text("Ann shows 5")
    play_card_with_keys(seat, 7)
    expect(seat.locator("#locked-card")).to_have_text("7", timeout=BLINK_MS)
    assert "7" not in live.inner_text(), "nothing is announced before the reveal"

    table.post({"type": "bid", "seat": 2, "card": 2})
    table.post({"type": "bid", "seat": 3, "card": 9})
    said = "Revealed: Ann 5 (+10), Ben 7 (\u22127), Chlo\u00e9 2 (0), Dan 9 (+1)"
    expect(live).to_have_text(said, timeout=BLINK_MS)
    expect(seat.locator("#announce")).to_have_text(said, timeout=BLINK_MS)     # the seat page says it too
    assert ann.errors == [] and ben.errors == []


def test_a_round_end_is_announced_in_french(table, browser):
    from test_browser import PHONE

    context = browser.new_context(locale="fr-FR", viewport=PHONE)
    try:
        actions = third_man_round()[:-2]                 # up to the bid that ends round 1
        table.post(actions[0])
        page = context.new_page()
        page.goto(table.base + "/")
        live = page.locator("#announce")
        expect(live).to_have_text("")
        for action in actions[1:]:
            table.post(action)
        expect(live).to_contain_text("Manche 1 terminée", timeout=BLINK_MS)
        expect(live).to_contain_text("prend un jeton")
        assert table.session.public()["rounds"], "the round did end"
    finally:
        context.close()


def test_the_table_control_with_the_keyboard_alone(table, phones):
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    table.post({"type": "add", "seat": 1, "points": 5})
    control = phones("control")
    page = control.open("/control")
    tab_to(page, "#pin")
    page.keyboard.type(PIN)
    page.keyboard.press("Enter")
    expect(page.locator("#pin-saved")).to_be_focused()        # the form went: the focus did not

    tab_to(page, "#undo")
    page.keyboard.press("Enter")
    expect(page.locator("#undo-cancel")).to_be_focused()      # the safe answer first
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#undo-yes")).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator("#control-msg")).to_have_text("Undone.")
    expect(page.locator("#undo")).to_be_focused()
    assert table.session.public()["scores"] == [0, 0]

    tab_to(page, "#advanced summary")                          # "Advanced" opens from the keyboard
    page.keyboard.press("Enter")
    tab_to(page, "#action-json")
    page.keyboard.type('{"type": "add", "seat": 0, "points": 3}')
    tab_to(page, "#send-action")
    page.keyboard.press("Enter")
    expect(page.locator("#control-msg")).to_have_text("Done.")
    assert table.session.public()["scores"] == [3, 0]
