"""The phone pages in a real browser: Debian's chromium driven by Playwright,
against the real server (waitress) and the real box in mock mode.

A spectator on ``/`` and a player on ``/seat/<n>`` (two browser contexts:
two phones, 390×844) follow a Third Man bid: the seat enters its card, the
spectator sees "entered" but never the value, and the reveal shows on both
within a second, without reloading.  One bid is played on the box's
(mock) buttons and shows live too.  A screenshot of each page is kept in
``test-artifacts/``.

Never ``playwright install``: the browser is Debian's ``/usr/bin/chromium``.
Without it the module is skipped, unless ``COMPANION_REQUIRE_BROWSER=1``
(CI), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from test_pages import SAMPLES
from web_support import PIN, http, make_app, make_session, pin_headers, running_server, wait_until

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
pytest_plugins = ["browser_support"]        # the `browser` fixture: one browser for every module
PHONE = {"width": 390, "height": 844}
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]
BLINK_MS = 20_000        # a ceiling to wait for an update, not a budget (push latency: bench_push)
# Every page action's ceiling: a hung page fails, a slow one does not (the
# suite runs two workers on two cores, each with its own browser and servers).
WAIT_MS = 30_000

pytestmark = pytest.mark.browser


def _browser_or_skip():
    required = os.environ.get("COMPANION_REQUIRE_BROWSER") == "1"
    problem = None
    if not os.path.exists(CHROMIUM):
        problem = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "playwright is not installed (pip install -e .[test])"
    if problem:
        if required:
            pytest.fail(f"COMPANION_REQUIRE_BROWSER=1 but {problem}", pytrace=False)
        pytest.skip(problem, allow_module_level=True)


_browser_or_skip()

from playwright.sync_api import expect  # noqa: E402


class Table:
    """The appliance in mock mode: store, session, the real box, waitress.
    ``port`` 0 takes a free port; a given port is the box coming back."""

    def __init__(self, tmp_path, port=0, **config):
        from hardware import Box
        from hardware.testing import box_config

        self.session = make_session(tmp_path)            # an existing store: the game resumes
        self.box = Box(self.session, box_config(), mock=True)
        self.box.start()
        self.app = make_app(self.session, box=self.box, mock=True, names=PLAYERS + ["\u00c9lodie"], **config)
        self._server = running_server(self.app, port)
        self.server = self._server.__enter__()
        self.base = f"http://127.0.0.1:{self.server.port}"

    def post(self, action):
        status, _, body = http(self.server.port, "POST", "/api/actions", action, pin_headers())
        assert status == 200, (action, body)
        return body

    def press(self, *names):
        for name in names:
            status, _, body = http(self.server.port, "POST", f"/dev/buttons/{name}/press")
            assert status == 200 and body["handled"], (name, body)

    def claim(self, seat):
        status, _, body = http(self.server.port, "POST", f"/api/seats/{seat}/claim", None, pin_headers())
        assert status == 200, body
        return body["token"]

    def close(self):
        try:
            self._server.__exit__(None, None, None)
        finally:
            self.app.extensions["companion"].close()
            self.box.close()
            self.session.store.close()


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    yield t
    t.close()


class Phone:
    """One phone: a browser context of its own (its own storage), one page,
    every script error collected (and failing the test at the end)."""

    def __init__(self, browser, base, name, scheme="light"):
        self.context = browser.new_context(viewport=PHONE, color_scheme=scheme, locale="en-GB",
                                           device_scale_factor=2, is_mobile=True, has_touch=True)
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.base, self.name = base, name
        self.errors = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        # A refusal the test provokes (403, 409) is logged by the browser as a failed
        # load: that is the box answering, not a script error.
        self.page.on("console", lambda msg: msg.type == "error" and not msg.text.startswith("Failed to load resource")
                     and self.errors.append(msg.text))

    def open(self, path):
        self.page.goto(self.base + path)
        return self.page

    def keep_token(self, seat, token):
        """As if this phone had claimed ``seat`` before (a reload keeps the seat)."""
        self.context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'{seat}': {json.dumps(token)}}}))")

    def fits(self):
        """Nothing wider than the phone: no sideways scrolling."""
        width = self.page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{self.name}: the page is {width}px wide"

    def shot(self, name):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self):
        self.context.close()
        assert not self.errors, f"{self.name}: script errors {self.errors}"


class HeldAnswer:
    """The box's answer to the next action ``page`` sends, kept back until
    ``release()``: the box has the action and its event reaches the page,
    but the page's own request waits -- as on a phone whose event comes
    before the answer to what it sent."""

    def __init__(self, page):
        self.page = page
        self.route = self.answer = None
        self.released = False
        page.route("**/api/actions?*", self._hold)

    def _hold(self, route):
        if route.request.method != "POST" or self.route or self.released:
            return route.continue_()
        # Kept before the fetch: the box's event can reach the page (and the
        # test read it) while this handler still waits for the box's answer.
        self.route = route
        self.answer = route.fetch()          # the box applies the action now

    @property
    def sent(self):
        return self.route is not None

    def release(self):
        assert self.route, "the page sent no action"
        for _ in range(600):                 # the box's answer to the fetch, 30 s at most
            if self.answer is not None:
                break
            self.page.wait_for_timeout(50)
        assert self.answer is not None, "the box never answered the held action"
        self.released = True
        self.route.fulfill(response=self.answer)


@pytest.fixture
def phones(browser, table):
    made = []

    def phone(name, scheme="light"):
        made.append(Phone(browser, table.base, name, scheme))
        return made[-1]
    yield phone
    for p in made:
        p.close()


def row(page, seat):
    return page.locator(f'#board tr[data-seat="{seat}"]')


# -- the bid ------------------------------------------------------------------------------

def test_a_seat_enters_its_card_the_spectator_sees_entered_then_both_see_the_reveal(table, phones):
    table.post({"type": "new_game", "game": "third-man", "players": PLAYERS})
    spectator = phones("spectator")
    board = spectator.open("/")
    expect(board.locator("#board")).to_contain_text("Ann leads: waiting for a card")

    # Ben's phone takes seat 1 with the PIN, on the page.
    ben = phones("seat")
    seat = ben.open("/seat")
    seat.fill("#pin", PIN)
    seat.click('button[data-seat="1"]')
    seat.wait_for_url("**/seat/1")
    expect(seat.locator("#private")).to_contain_text("Waiting for Ann to show a card.")
    expect(board.locator("#board")).to_contain_text("Ann")
    assert table.session.table.claims == {1: "phone"}
    table.box.flush()
    assert "Phone claim" in " ".join(table.box.frame.texts), "the box shows the claim"
    table.press("ok")                                                 # and keeps it

    table.post({"type": "bid", "seat": 0, "card": 5})                 # Ann's open card, from the box
    expect(board.locator("#board")).to_contain_text("Ann shows 5", timeout=BLINK_MS)
    expect(seat.locator("#private")).to_contain_text("Ann shows 5. Pick your secret card:", timeout=BLINK_MS)

    # Ben picks 7 (a tap selects, a second tap confirms), big buttons for the cards in his hand only.
    hand = seat.locator("#private .hand button")
    expect(hand).to_have_count(10)
    box = hand.first.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 44, "cards are big tap targets"
    seat.click('#private .hand button[data-card="7"]')
    seat.click("#private button.confirm")
    expect(seat.locator("#locked-card")).to_have_text("7", timeout=BLINK_MS)
    expect(seat.locator("#private")).to_contain_text("nobody else sees it")

    # The spectator sees that Ben has entered, never what.
    expect(row(board, 1)).to_contain_text("entered ✓", timeout=BLINK_MS)
    assert "7" not in board.inner_text("main"), "the spectator's page shows Ben's secret card"
    table.box.flush()
    assert "Ben \u2713" in " ".join(table.box.frame.texts), "the box shows Ben as entered too"
    spectator.shot("third-man-spectator-entered")
    ben.shot("third-man-seat-locked")
    spectator.fits()
    ben.fits()

    # The two last cards come in (the PIN holder's phone, as the box would); the reveal
    # shows on both phones without reloading (how fast is bench_push's figure).
    table.post({"type": "bid", "seat": 2, "card": 2})
    table.post({"type": "bid", "seat": 3, "card": 9})
    expect(board.locator(".reveal")).to_contain_text("Last bid", timeout=BLINK_MS)
    expect(seat.locator(".reveal")).to_contain_text("Last bid", timeout=BLINK_MS)
    cards = [c.inner_text() for c in board.locator(".reveal .card-face").all()]
    assert cards == ["5", "7", "2", "9"]
    assert [c.inner_text() for c in seat.locator(".reveal .card-face").all()] == cards
    # 9 first: +1; 7 second: −7; 5 third: 2 × 5; 2 fourth: 0
    assert board.locator(".reveal .pts").all_inner_texts() == ["+10", "\u22127", "0", "+1"]
    spectator.shot("third-man-spectator")
    ben.shot("third-man-seat")


def test_a_bid_on_the_box_buttons_shows_live_and_the_seat_page_shows_its_card(table, phones):
    table.post({"type": "new_game", "game": "third-man", "players": PLAYERS})
    ben = phones("seat")
    ben.keep_token(1, table.claim(1))
    seat = ben.open("/seat/1")
    expect(seat.locator("#private")).to_contain_text("Waiting for Ann to show a card.")
    spectator = phones("spectator")
    board = spectator.open("/")
    expect(board.locator("#board")).to_contain_text("Ann leads")

    table.press("ok")                                   # the box shows the phone's claim: keep it
    table.press("ok", "ok")                             # Ann shows her lowest card: 0
    expect(board.locator("#board")).to_contain_text("Ann shows 0", timeout=BLINK_MS)
    table.press("ok", "up", "ok")                       # Ben, on the box: 1
    expect(row(board, 1)).to_contain_text("entered ✓", timeout=BLINK_MS)
    # An entry made on the box is the box's: the seat's phone says so, never shows it.
    expect(seat.locator("#private")).to_contain_text("Entered at the table ✓", timeout=BLINK_MS)
    assert seat.locator("#locked-card").count() == 0
    table.press("ok", "up", "up", "ok")                 # Chloé: 2
    expect(row(board, 2)).to_contain_text("entered ✓", timeout=BLINK_MS)
    table.press("ok", "down", "ok")                     # Dan: 9 (the cursor wraps)
    expect(board.locator(".reveal")).to_contain_text("Last bid", timeout=BLINK_MS)
    assert board.locator(".reveal .card-face").all_inner_texts() == ["0", "1", "2", "9"]
    expect(board.locator(".reveal .pts")).to_have_text(["0", "+2", "\u22122", "+1"])
    # Ben gained most: he leads the next bid, and his page says so.
    expect(seat.locator("#private")).to_contain_text("You lead: show a card", timeout=BLINK_MS)
    spectator.shot("buttons-spectator")


def test_a_card_from_the_phone_moves_the_box_on(table, phones):
    table.post({"type": "new_game", "game": "third-man", "players": PLAYERS})
    ben = phones("seat")
    ben.keep_token(1, table.claim(1))
    seat = ben.open("/seat/1")
    table.press("ok")                                   # the box shows the claim: keep it
    table.press("ok", "ok")                             # Ann shows 0; the box asks for Ben
    assert "Ben" in " ".join(table.box.frame.texts)
    seat.click('#private .hand button[data-card="4"]')
    seat.click("#private button.confirm")
    expect(seat.locator("#locked-card")).to_have_text("4")
    assert wait_until(lambda: (table.box.flush() or True) and "Chloé" in " ".join(table.box.frame.texts))
    assert "4" not in " ".join(table.box.frame.texts), "the box never draws Ben's card"
    seat.click("#release")                               # the phone gives its seat up...
    assert table.session.table.claims == {1: "phone"}, "...once it has said yes"
    seat.click("#release-yes")
    seat.wait_for_url("**/seat")
    assert table.session.table.claims == {}
    expect(seat.locator('button[data-seat="1"]')).to_be_visible()


def test_a_diabolo_double_from_the_seat_page_stays_secret_until_the_colour_is_scored(table, phones):
    table.post({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]})
    table.post({"type": "score", "color": "blue", "hands": [2, 9, 4], "heaven": 8, "hell": 3})
    ben = phones("seat")
    ben.keep_token(1, table.claim(1))
    seat = ben.open("/seat/1")
    spectator = phones("spectator")
    board = spectator.open("/")
    seat.fill("#colour", "green")
    seat.click("#double-play")
    expect(seat.locator("#private")).to_contain_text("Your decision for green: play the double")
    expect(row(board, 1)).to_contain_text("entered ✓", timeout=BLINK_MS)
    expect(board.locator("#board")).to_contain_text("Deciding doubles for green: Ben")
    assert "play the double" not in board.inner_text("main")
    table.post({"type": "score", "color": "green", "hands": [1, 8, 3], "heaven": 9, "hell": 2})
    expect(row(board, 1).locator(".score")).to_have_text("25", timeout=BLINK_MS)      # 9 + 2 × 8
    expect(board.locator("#log")).to_contain_text("Ben plays the double on green")
    expect(seat.locator("#private")).to_contain_text("Your double is spent for this round.", timeout=BLINK_MS)
    ben.shot("diabolo-seat")


# -- every game, the control page, recovery --------------------------------------------------------

def test_every_game_renders_on_a_phone_light_and_dark(table, phones):
    light, dark = phones("light"), phones("dark", scheme="dark")
    light.open("/")
    dark.open("/")
    for game, actions in SAMPLES.items():
        for action in actions:
            table.post(action)
        title = table.session.game.title
        for phone in (light, dark):
            expect(phone.page.locator("h1.game-title")).to_have_text(re.compile(re.escape(title)), timeout=BLINK_MS)
            expect(phone.page.locator("#board tbody tr")).to_have_count(len(actions[0]["players"]))
            phone.page.wait_for_timeout(150)                 # the history (chart, tables) follows
            phone.fits()
        light.shot(f"game-{game}")
        dark.shot(f"game-{game}-dark")
    # The secrets still pending in the samples never show: Diabolo's double, the scoreboard's 12345.
    assert "12345" not in light.page.inner_text("main")


def test_table_control_starts_a_game_sends_an_action_and_undoes(table, phones):
    control = phones("control")
    page = control.open("/control")
    spectator = phones("spectator")
    board = spectator.open("/")
    page.fill("#pin", PIN)
    page.click("text=Save PIN")
    page.select_option("#game", "scoreboard")
    names = page.locator("input.player-name")
    expect(names).to_have_count(4)                       # the box's names fill the form
    names.nth(0).fill("Zoë")
    names.nth(1).fill("Łukasz")
    page.locator("#new-game-section button:has-text('Remove')").last.click()
    page.locator("#new-game-section button:has-text('Remove')").last.click()
    page.click("text=Add a player")
    page.click("#new-game-section .names button:has-text('Élodie')")     # a name from the box's list
    expect(names).to_have_count(3)
    page.click("#start")
    expect(page.locator("#control-msg")).to_have_text("Started.")
    expect(board.locator("h1.game-title")).to_have_text("Scoreboard", timeout=BLINK_MS)
    assert table.session.players == ("Zoë", "Łukasz", "Élodie")
    expect(board.locator("#board tbody tr")).to_have_count(3)
    expect(row(board, 1)).to_contain_text("Łukasz")

    page.click("#advanced summary")                     # one action typed by hand: folded away
    page.fill("#action-json", '{"type": "add", "seat": 1, "points": 5}')
    page.click("#send-action")
    expect(row(board, 1).locator(".score")).to_have_text("5", timeout=BLINK_MS)
    page.fill("#action-json", '{"type": "add", "seat": 7, "points": 5}')
    page.click("#send-action")
    expect(page.locator("#control-msg.error")).to_contain_text("seat")        # the box's own message
    page.click("#undo")
    page.click("#undo-yes")
    expect(page.locator("#control-msg")).to_have_text("Undone.")
    expect(row(board, 1).locator(".score")).to_have_text("0", timeout=BLINK_MS)
    control.fits()
    control.shot("control")


def test_the_pin_holder_releases_a_seat_and_the_seat_page_says_so(table, phones):
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    ben = phones("seat")
    ben.keep_token(1, table.claim(1))
    seat = ben.open("/seat/1")
    expect(seat.locator("#secret-value")).to_be_visible()
    seat.fill("#secret-value", "42")
    seat.click("text=Enter secretly")
    expect(seat.locator("#locked-card")).to_have_text("42")
    control = phones("control")
    page = control.open("/control")
    page.fill("#pin", PIN)
    page.click("text=Save PIN")
    page.click("#seats-fold summary")
    page.click("#seats-section button:has-text('Release')")
    expect(page.locator("#release-prompt")).to_contain_text("Release seat 2 (Ben)?")
    assert table.session.table.claims == {1: "phone"}, "asked first: nothing released yet"
    page.click("#release-yes")
    expect(seat.locator("#private")).to_contain_text("claim has ended", timeout=BLINK_MS)
    expect(seat.locator("#private")).to_contain_text("Take this seat")
    assert table.session.table.claims == {}


def test_the_join_and_dev_pages_show_the_qr_code(table, phones, browser):
    french = browser.new_context(locale="fr-FR", viewport=PHONE)
    try:
        page = french.new_page()
        page.goto(table.base + "/join")
        assert page.get_attribute("html", "lang") == "fr"
    finally:
        french.close()
    phone = phones("join")
    page = phone.open("/join")
    qr = page.locator(".qr svg").bounding_box()
    assert qr["width"] >= 200, "a QR code big enough to scan from across the table"
    phone.shot("join")
    dev = phones("dev")
    page = dev.open("/dev")
    expect(page.locator("#pin")).to_have_text(PIN)
    page.set_viewport_size({"width": 900, "height": 700})
    dev.shot("dev")


def test_the_scoreboard_recovers_by_itself_when_the_box_restarts(tmp_path, browser):
    first = Table(tmp_path)
    phone = Phone(browser, first.base, "spectator")
    second = None
    try:
        first.post({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
        page = phone.open("/")
        expect(page.locator("h1.game-title")).to_have_text("Scoreboard")
        port = first.server.port
        first.close()                                         # the box goes away...
        expect(page.locator("#live")).to_be_visible(timeout=BLINK_MS)
        expect(page.locator("#live")).to_have_text("reconnecting…")
        second = Table(tmp_path, port)                   # ...and comes back: same store, same port
        second.post({"type": "add", "seat": 0, "points": 12})
        expect(row(page, 0).locator(".score")).to_have_text("12", timeout=BLINK_MS)
        expect(page.locator("#live")).to_be_hidden()
    finally:
        phone.close()
        if second is not None:
            second.close()


# -- notices ------------------------------------------------------------------------------

def test_a_notice_of_the_table_shows_on_the_page_live_and_goes_when_dismissed(table, phones):
    page = phones("notice").open("/")
    expect(page.locator("#board")).to_be_visible()
    table.session.update_table(lambda t: t.notices.append(
        ("Game {id} came back only up to its step {n}: the steps after it could not be read.", {"id": 7, "n": 3})))
    expect(page.locator("#notices")).to_contain_text("Game 7 came back only up to its step 3", timeout=BLINK_MS)
    status, _, _ = http(table.server.port, "POST", "/api/notices/0/dismiss", None, pin_headers())
    assert status == 200
    expect(page.locator("#notices")).to_be_hidden(timeout=BLINK_MS)
