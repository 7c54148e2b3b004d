"""The table control's entry panels in a real browser (Debian's chromium
through Playwright, the real server and the mock box, as tests/browser/test_browser.py,
whose fixtures and skip rules these tests share).

The PIN holder plays each game from ``/control`` by taps only: a Costly
Tricks trick by its four cards (and the judge's reasoning shows), a Sloppy
Seconds hand by suit totals and a trick by its cards, a FIGHT? turn with
the proposed largest change and one from the solver's hint, a Yenta bid
and ask, a Diabolo colour scored with a seat's secret double.  Every
answer of the box is checked in the table's state, not only on the page.
Screenshots at phone size go to ``test-artifacts/entry-*.png``.
"""

from __future__ import annotations

import re

import pytest

# The shared fixtures (browser, table, phones) and the skip rules: without
# Debian's chromium this module is skipped, or fails under COMPANION_REQUIRE_BROWSER=1.
from test_browser import ARTIFACTS, BLINK_MS, HeldAnswer, phones, table  # noqa: F401
from web_support import PIN

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]      # the one browser of the run (its ``browser`` fixture)
pytestmark = pytest.mark.browser


def control(phones, name="control", scheme="light"):
    """The PIN holder's phone on /control, the PIN already saved in the tab."""
    phone = phones(name, scheme)
    phone.context.add_init_script(f"sessionStorage.setItem('companion.pin', {PIN!r})")
    page = phone.open("/control")
    expect(page.locator("#pin-section")).to_contain_text("PIN saved on this phone.")
    return phone, page


def entry(page):
    return page.locator("#entry-section")


def shot(page, name):
    """The entry panel alone, at phone size, into test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    entry(page).screenshot(path=str(ARTIFACTS / f"{name}.png"))


def done(page, text=None):
    """The box accepted the last entry (the answer line says so)."""
    msg = page.locator("#entry-section #control-msg")
    expect(msg).to_have_class(re.compile(r"\bok\b"), timeout=BLINK_MS)
    if text:
        expect(msg).to_have_text(text)


# -- Costly Tricks -----------------------------------------------------------------

def test_costly_tricks_a_trick_by_its_four_cards_and_the_judges_reasoning(table, phones):
    table.post({"type": "new_game", "game": "costly-tricks", "players": ["Antoinette", "Bruno"]})
    phone, page = control(phones)
    panel = entry(page)
    expect(panel).to_contain_text("Who has the red 0?")
    panel.locator('.choices.deal button[data-seat="0"]').click()          # Antoinette holds the red 0
    expect(panel).to_contain_text("Antoinette leads the next trick", timeout=BLINK_MS)
    assert table.session.public()["lead"] == 0

    # The table names its fourth suit once; the three others keep the usual names.
    panel.locator(".suit-names summary").click()
    panel.locator("#suit-name-3").fill("white")
    panel.locator(".suit-names button").click()
    expect(panel.locator('.card-grid button[data-suit="white"]')).to_have_count(11)
    expect(panel.locator(".card-grid .suit-name")).to_have_text(["red", "blue", "black", "white"])

    # The seed's trick: red 5 led, blue 3 (blue trump), black 10 (black trump,
    # blue displaced), blue 6 (a discard): black 10 wins, Antoinette's dummy.
    for suit, value in [("red", 5), ("blue", 3), ("black", 10), ("blue", 6)]:
        panel.locator(f'.card-grid button[data-suit="{suit}"][data-value="{value}"]').click()
    expect(panel.locator(".trick-slots li").nth(2)).to_contain_text("Antoinette's dummy")
    expect(panel.locator(".trick-slots li").nth(2)).to_contain_text("black 10")
    panel.locator("#enter-trick").click()
    done(page, "Trick entered.")
    public = table.session.public()
    assert public["last_trick"]["cards"] == [["red", 5], ["blue", 3], ["black", 10], ["blue", 6]]
    assert public["lead"] == 2 and public["scores"] == [4, 0]      # 24 points - 20 for the trick
    reasoning = panel.locator(".entry-board")
    expect(reasoning).to_contain_text("Antoinette's dummy wins the trick: 24 points", timeout=BLINK_MS)
    expect(reasoning).to_contain_text("black 10 makes black trump, displacing blue")
    expect(reasoning).to_contain_text("blue 6 is a discard (blue was displaced)")
    expect(reasoning).to_contain_text("black 10 wins")
    shot(page, "entry-costly-tricks-judged")
    # The four cards are greyed for the rest of the hand; the next trick is led by the dummy.
    expect(panel.locator('.card-grid button[data-suit="black"][data-value="10"]')).to_be_disabled()
    expect(panel.locator('.card-grid button[data-suit="red"][data-value="5"]')).to_be_disabled()
    expect(panel.locator(".trick-slots li").first).to_contain_text("Antoinette's dummy")
    # A card tapped, then the next trick entered quick instead: the tapped card waits.
    panel.locator('.card-grid button[data-suit="red"][data-value="4"]').click()
    panel.locator("#mode-quick").click()
    panel.locator('.choices.seats button[data-seat="1"]').click()
    panel.locator("#quick-points").fill("50")
    expect(panel.locator("#quick-check")).to_contain_text("0 to 40")
    panel.locator("#quick-points").fill("12")
    panel.locator("#enter-quick").click()
    done(page)
    assert table.session.public()["tricks"] == [1, 1] and table.session.public()["lead"] == 1
    phone.fits()
    page.locator("#mode-cards").click()
    expect(panel.locator(".trick-slots li.filled")).to_have_count(1)        # the tapped red 4 is kept
    shot(page, "entry-costly-tricks")


# -- Sloppy Seconds ----------------------------------------------------------------

def test_sloppy_seconds_a_hand_by_suit_totals_then_a_trick_by_its_cards(table, phones):
    table.post({"type": "new_game", "game": "sloppy-seconds", "players": ["Ann", "Ben", "Cat"]})
    phone, page = control(phones, scheme="dark")
    panel = entry(page)
    panel.locator("#mode-totals").click()
    # Three players: diamonds hold 89 points (no 2 of diamonds); Cat's row fills itself.
    totals = {0: {"S": 50, "H": 23, "D": 10, "C": 91}, 1: {"S": 41, "H": 23, "D": 20, "C": 0}}
    for seat, row_ in totals.items():
        for suit, value in row_.items():
            panel.locator(f"#total-{seat}-{suit}").fill(str(value))
    expect(panel.locator("#auto-S")).to_have_text("0")
    expect(panel.locator("#auto-H")).to_have_text("45")
    expect(panel.locator("#auto-D")).to_have_text("59")
    expect(panel.locator("table.totals tfoot")).to_contain_text("89 ✓")
    panel.locator("#total-1-H").fill("70")                                  # 23 + 70 > 91
    expect(panel.locator("table.totals tfoot")).to_contain_text("93 > 91")
    expect(panel.locator("#enter-hand")).to_be_disabled()
    panel.locator("#total-1-H").fill("23")
    # Spades: 50 first, 41 second; hearts: 23 and 23 below 45; diamonds: 20 second; clubs: 0 (tied 0s are second).
    expect(panel.locator("#hand-preview")).to_have_text("This hand scores: Ann 23 · Ben 84 · Cat 5")
    shot(page, "entry-sloppy-seconds-totals")
    panel.locator("#enter-hand").click()
    done(page, "Hand entered.")
    assert table.session.public()["scores"] == [23, 84, 5]

    # The next hand by tricks (the panel stays on totals until asked): Ben deals, Cat leads.
    expect(panel.locator("#total-0-S")).to_have_value("", timeout=BLINK_MS)
    panel.locator("#mode-tricks").click()
    expect(panel.locator(".trick-slots li").first).to_contain_text("Cat", timeout=BLINK_MS)
    expect(panel.locator('.card-grid button[data-card="2D"]')).to_be_disabled()     # not in a 3-player deck
    for card in ["4C", "9H", "KS"]:          # hearts broken first (never trump), spades second: trump at once
        panel.locator(f'.card-grid button[data-card="{card}"]').click()
    panel.locator("#enter-trick").click()
    done(page, "Trick entered.")
    public = table.session.public()
    assert (public["ineligible"], public["trump"], public["last_trick"]["winner"]) == ("H", "S", 1)
    expect(panel.locator(".status")).to_contain_text("Trump: ♠ S", timeout=BLINK_MS)
    expect(panel.locator(".status")).to_contain_text("Not trump: ♥ H")
    expect(panel.locator(".suit-block.is-trump")).to_contain_text("trump")
    expect(panel.locator(".trick-slots li").first).to_contain_text("Ben")          # the trick's winner leads
    for card in ["4C", "9H", "KS"]:
        expect(panel.locator(f'.card-grid button[data-card="{card}"]')).to_be_disabled()
    expect(panel.locator("#mode-totals")).to_be_disabled()                         # the hand goes on by tricks
    phone.fits()
    shot(page, "entry-sloppy-seconds-tricks")


# -- FIGHT? ----------------------------------------------------------------------------

def test_fight_a_turn_with_the_largest_change_proposed_then_the_hint(table, phones):
    table.post({"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]})
    table.post({"type": "turn", "seat": 0, "play": 10, "take": []})
    table.post({"type": "turn", "seat": 1, "play": 5, "take": []})                  # the table: 10 + 5
    phone, page = control(phones)
    panel = entry(page)
    expect(panel).to_contain_text("Ann: which coin?")
    panel.locator('.choices.coins button[data-coin="20"]').click()
    changes = panel.locator(".choices.changes button")
    expect(changes.first).to_have_text("10 + 5 = 15")
    expect(changes.first).to_have_attribute("aria-pressed", "true")              # the largest, proposed first
    expect(changes).to_have_text(["10 + 5 = 15", "10", "5", "no change"])
    shot(page, "entry-fight-change")
    panel.locator("#enter-turn").click()
    done(page, "Ann plays 20")
    public = table.session.public()
    assert public["table"] == {"20": 1, "10": 0, "5": 0, "1": 0}
    assert public["coins"][0] == {"20": 0, "10": 2, "5": 4, "1": 4} and public["turn"] == 1

    expect(panel).to_contain_text("Ben: which coin?", timeout=BLINK_MS)
    panel.locator("#ask-hint").click()
    hint = panel.locator("#hint-box")
    expect(hint).to_contain_text("perfect play", timeout=BLINK_MS)
    expected = table.session.public()
    from companion import fight_solver
    move = fight_solver.hint(expected)
    expect(hint.locator(".big")).to_contain_text(f"Play {move.play}")
    shot(page, "entry-fight")
    page.locator("#play-hint").click()
    done(page)
    assert table.session.public()["turn"] == 0
    assert table.session.timeline.log[-1]["play"] == move.play
    assert table.session.timeline.log[-1]["take"] == list(move.take)
    expect(panel.locator("#ask-hint")).to_be_visible()                           # a new turn: the hint is gone
    phone.fits()


# -- Yenta -------------------------------------------------------------------------------

def test_yenta_a_bid_and_an_ask(table, phones):
    table.post({"type": "new_game", "game": "yenta", "players": ["Ann", "Ben", "Cat"]})
    phone, page = control(phones)
    panel = entry(page)
    expect(panel).to_contain_text("Who won the auction?")
    panel.locator('.choices.seats button[data-seat="1"]').click()
    panel.locator("#bid-amount").fill("10")
    panel.locator("#enter-bid").click()
    done(page, "Ben bids 10")
    expect(panel).to_contain_text("Ben asks…", timeout=BLINK_MS)
    panel.locator('.choices.seats button[data-seat="2"]').click()
    panel.locator('.choices.dice button[data-value="3"]').click()
    shot(page, "entry-yenta")
    panel.locator("#ask-hit").click()
    done(page, "Ben asks Cat for 3: hit")
    public = table.session.public()
    assert public["hand_points"] == [0, 6, 0] and public["dice"] == [5, 4, 4] and public["turn"] == 1
    panel.locator('.choices.seats button[data-seat="0"]').click()
    panel.locator('.choices.dice button[data-value="6"]').click()
    panel.locator("#ask-miss").click()
    done(page)
    expect(panel).to_contain_text("Cat asks…", timeout=BLINK_MS)
    assert table.session.public()["dice"] == [5, 3, 4]
    phone.fits()


def test_yenta_the_next_ask_begun_before_the_answer_to_the_last_stays_picked(table, phones):
    """The table's event (Ben still to ask, Cat one die fewer) comes before
    the box's answer to "hit": the die picked for the next ask meanwhile
    stays picked when the answer comes, and the ask goes with it."""
    table.post({"type": "new_game", "game": "yenta", "players": ["Ann", "Ben", "Cat"]})
    table.post({"type": "bid", "seat": 1, "amount": 10})
    phone, page = control(phones)
    panel = entry(page)
    expect(panel).to_contain_text("Ben asks…")
    panel.locator('.choices.seats button[data-seat="2"]').click()
    panel.locator('.choices.dice button[data-value="3"]').click()
    held = HeldAnswer(page)
    panel.locator("#ask-hit").click()
    expect(panel.locator('.choices.seats button[data-seat="2"]')).to_contain_text("4")     # the event: Cat has 4 dice
    assert held.sent and table.session.public()["dice"] == [5, 4, 4]
    panel.locator('.choices.dice button[data-value="6"]').click()
    held.release()
    done(page, "Ben asks Cat for 3: hit")
    expect(panel.locator('.choices.dice button[data-value="6"]')).to_have_attribute("aria-pressed", "true")
    panel.locator("#ask-miss").click()
    done(page, "Ben asks Cat for 6: miss")
    assert table.session.public()["dice"] == [5, 3, 4]


# -- Diabolo -------------------------------------------------------------------------------

def test_diabolo_a_colour_scored_with_a_seats_secret_double(table, phones):
    table.post({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]})
    table.post({"type": "double", "seat": 1, "color": "green", "play": True})      # from Ben's seat page
    phone, page = control(phones)
    panel = entry(page)
    expect(panel.locator('.choices.colours button[data-color="green"]')).to_have_attribute("aria-pressed", "true")
    expect(panel).to_contain_text("Secret double decisions entered: Ben")
    for seat, value in enumerate([1, 8, 3]):
        panel.locator(f"#hand-{seat}").fill(str(value))
    panel.locator("#heaven").fill("9")
    panel.locator("#hell").fill("12")                         # hell larger: the secret double cannot stand
    panel.locator("#enter-score").click()
    expect(page.locator("#entry-section #control-msg.error")).to_contain_text("not positive", timeout=BLINK_MS)
    assert table.session.public()["scored"] == []
    panel.locator("#hell").fill("2")
    expect(panel.locator("#score-preview")).to_contain_text("Ben takes green: +8")
    shot(page, "entry-diabolo-score")
    panel.locator("#enter-score").click()
    done(page, "green scored")
    public = table.session.public()
    assert public["scores"] == [0, 16, 0] and public["scored"] == ["green"]          # 8, doubled
    assert public["doubles_left"] == [True, False, True]
    # The next colour: offered without green; a row tracked card by card.
    expect(panel.locator('.choices.colours button[data-color="green"]')).to_have_count(0, timeout=BLINK_MS)
    phone.fits()
    shot(page, "entry-diabolo")


def test_diabolo_the_scored_colours_numbers_go_when_the_event_comes_before_the_answer(table, phones):
    """The table's event (green scored) redraws the panel before the box's
    answer comes: nobody touched the entry meanwhile, so the answer still
    empties the hand sums and both sides -- the next colour starts blank,
    never with green's numbers in its fields."""
    table.post({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]})
    phone, page = control(phones)
    panel = entry(page)
    green = panel.locator(".choices.colours").first.locator('button[data-color="green"]')     # the score's colours
    green.click()
    for seat, value in enumerate([1, 8, 3]):
        panel.locator(f"#hand-{seat}").fill(str(value))
    panel.locator("#heaven").fill("9")
    panel.locator("#hell").fill("2")
    held = HeldAnswer(page)
    panel.locator("#enter-score").click()
    expect(green).to_have_count(0)                                   # the event: green is scored
    assert held.sent and table.session.public()["scored"] == ["green"]
    held.release()
    done(page, "green scored")
    for field in ("#hand-0", "#hand-1", "#hand-2", "#heaven", "#hell"):
        expect(panel.locator(field)).to_have_value("")


def test_diabolo_a_row_tracked_card_by_card(table, phones):
    table.post({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]})
    phone, page = control(phones)
    panel = entry(page)
    panel.locator(".rows-entry summary").click()
    expect(panel.locator(".rows-entry")).to_contain_text("Ben places a card")      # the seat after the dealer
    panel.locator('.rows-entry .choices.colours button[data-color="red"]').click()
    panel.locator("#side-hell").click()
    panel.locator('.rows-entry .choices.values button[data-value="4"]').click()
    panel.locator("#enter-place").click()
    done(page, "Ben: 4 on red (hell)")
    assert table.session.timeline.log[-1] == {"type": "place", "seat": 1, "color": "red", "side": "hell", "value": 4}
    expect(panel.locator(".rows-entry")).to_contain_text("Cat places a card", timeout=BLINK_MS)
    expect(panel.locator("table.rows")).to_contain_text("red")
    expect(panel.locator("table.rows")).to_contain_text("4 = 4")
    # A tracked round: the score takes heaven and hell from the row.
    expect(panel).to_contain_text("Heaven and hell come from the tracked rows.")
    panel.locator('.choices.colours').first.locator('button[data-color="red"]').click()
    expect(panel).to_contain_text("Row tracked: heaven 0, hell 4")
    expect(panel.locator("#heaven")).to_have_count(0)
    shot(page, "entry-diabolo-rows")
