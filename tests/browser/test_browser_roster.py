"""The roster block of /control in a real browser (Debian's chromium through
Playwright, the real server and the mock box, as tests/browser/test_browser.py,
whose fixtures and skip rules this module shares): a name typed once is on
the roster and in the new-game form at once; a rename and a merge are made
in its labelled fields, and the box's store says the same."""

from __future__ import annotations

import re

import pytest

from test_browser import BLINK_MS, phones, table  # noqa: F401
from web_support import PIN

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser


def roster_names(table):
    with table.session.lock:
        return sorted(p.name for p in table.session.store.roster())


def test_names_typed_on_the_control_page_join_the_roster_and_can_be_renamed_and_merged(table, phones):
    phone = phones("roster")
    phone.context.add_init_script(f"sessionStorage.setItem('companion.pin', {PIN!r})")
    page = phone.open("/control")
    page.click("#roster-fold summary")                  # folded under the common actions
    section = page.locator("#roster-section")
    message = page.locator("#roster-msg")

    page.get_by_label("New player's name").fill("Ñoño")
    page.keyboard.press("Enter")
    expect(message).to_have_text("Added: Ñoño.", timeout=BLINK_MS)
    expect(section.locator(".roster-player").first).to_contain_text("Ñoño")
    assert "Ñoño" in roster_names(table)
    # The new-game form offers it at once (its name fields' suggestions).
    expect(page.locator('#box-names option[value="Ñoño"]')).to_have_count(1, timeout=BLINK_MS)

    # A name already there is refused, in words, and nothing changes.
    page.get_by_label("New player's name").fill("ñoño")
    page.keyboard.press("Enter")
    expect(message).to_have_class(re.compile(r"\berror\b"), timeout=BLINK_MS)
    expect(message).to_contain_text("already on the roster")

    # Rename, by its labelled field.
    section.get_by_role("button", name="Rename Ñoño").click()
    field = page.get_by_label("New name for Ñoño")
    expect(field).to_be_focused()
    field.fill("Ñoño Ruiz")
    page.keyboard.press("Enter")
    expect(message).to_have_text("Renamed: Ñoño Ruiz.", timeout=BLINK_MS)
    assert "Ñoño Ruiz" in roster_names(table) and "Ñoño" not in roster_names(table)

    # Merge another entry into it.
    page.get_by_label("New player's name").fill("Nono")
    page.keyboard.press("Enter")
    expect(message).to_have_text("Added: Nono.", timeout=BLINK_MS)
    section.get_by_role("button", name="Merge into… Nono").click()
    page.get_by_label("Merge Nono into").select_option(label="Ñoño Ruiz")
    section.get_by_role("button", name="Merge", exact=True).click()
    expect(message).to_have_text("Merged into Ñoño Ruiz.", timeout=BLINK_MS)
    assert "Nono" not in roster_names(table)
    phone.fits()
    # A long name, its rename form open, at the narrowest phone: nothing wider than it.
    page.get_by_label("New player's name").fill("Maximiliana Wolfeschleg")
    page.keyboard.press("Enter")
    expect(message).to_have_text("Added: Maximiliana Wolfeschleg.", timeout=BLINK_MS)
    page.set_viewport_size({"width": 320, "height": 800})
    section.get_by_role("button", name="Rename Maximiliana Wolfeschleg").click()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 320, f"the control page is {width}px wide at 320 px"


def test_the_new_game_form_offers_the_tables_own_names_not_the_demo_names(table, phones):
    """The settings' demo names seed an empty roster; once the table has
    typed its own, the New game form fills its fields with those (the last
    game's players first) and offers no demo name any more (issue 19)."""
    demo = {"Ann", "Ben", "Chloé", "Dan", "Élodie"}          # test_browser.Table's settings names
    phone = phones("roster")
    phone.context.add_init_script(f"sessionStorage.setItem('companion.pin', {PIN!r})")
    page = phone.open("/control")
    page.click("#roster-fold summary")
    fields = page.locator("#new-game-section input.player-name")
    expect(fields.first).to_have_value(re.compile(r"\S"), timeout=BLINK_MS)
    assert {f.input_value() for f in fields.all()} <= demo          # a fresh box: the demo names help

    own = ["Zoé", "Marc-Antoine", "Li", "Ingrid"]
    for name in own:
        page.get_by_label("New player's name").fill(name)
        page.keyboard.press("Enter")
        expect(page.locator("#roster-msg")).to_have_text(f"Added: {name}.", timeout=BLINK_MS)

    def offered():
        section = page.locator("#new-game-section")
        values = [f.input_value() for f in section.locator("input.player-name").all()]
        chips = [b.inner_text() for b in section.locator(".names button").all()]
        suggested = [o.get_attribute("value") for o in section.locator("#box-names option").all()]
        return values, chips, suggested

    # "Added" answers the request; the form refills when the roster reaches
    # the page a moment later: wait for the last of the names it has room for.
    expect(fields.first).to_have_value("Zoé", timeout=BLINK_MS)
    room = min(4, fields.count())
    expect(fields.nth(room - 1)).to_have_value(own[room - 1], timeout=BLINK_MS)
    values, chips, suggested = offered()
    assert values[:4] == own[:len(values[:4])], values
    assert not demo & set(values + chips + suggested), (values, chips, suggested)

    # A game started elsewhere (the box): the form follows, its players first, in seat order.
    table.post({"type": "new_game", "game": "third-man", "players": ["Ingrid", "Li", "Marc-Antoine", "Zoé"]})
    expect(fields.first).to_have_value("Ingrid", timeout=BLINK_MS)
    values, chips, suggested = offered()
    assert values == ["Ingrid", "Li", "Marc-Antoine", "Zoé"], values
    assert suggested[:4] == ["Ingrid", "Li", "Marc-Antoine", "Zoé"] and not demo & set(chips + suggested)
    page.select_option("#game", "diabolo")
    assert offered()[0][:4] == ["Ingrid", "Li", "Marc-Antoine", "Zoé"]

    # What a person typed stays as typed when the roster changes.
    fields.first.fill("Éloïse")
    page.get_by_label("New player's name").fill("Ñoño")
    page.keyboard.press("Enter")
    expect(page.locator("#roster-msg")).to_have_text("Added: Ñoño.", timeout=BLINK_MS)
    expect(page.locator('#box-names option[value="Ñoño"]')).to_have_count(1, timeout=BLINK_MS)
    assert fields.first.input_value() == "Éloïse"
