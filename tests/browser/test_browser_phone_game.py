"""A whole free-scoreboard game from phones only, at 390x844, in English
and in French, with long accented names: no JSON typed, no box button.

The table is in the second round of a Third Man match.  The PIN holder's
phone (/control) gives the PIN once (Enter), starts a scoreboard over the
unfinished match -- the page asks first and names what happens ("The Third
Man (...), round 2, stays in History as unfinished"), and nothing changes
until the answer -- then enters points and tokens by a tap and a number
(``points-N`` / ``add-points-N``, N the seat from 1), a negative one too.
A second phone claims a seat and enters points for any player from its
seat page; an entry is undone from where it was made; releasing a seat,
from the control and from the seat itself, asks first; the target score
ends the game.  "JSON" is nowhere on the pages used (it lives in the
closed "Advanced" part).  Screenshots of each step go to test-artifacts/.
"""

from __future__ import annotations

import re

import pytest

from test_browser import ARTIFACTS, BLINK_MS, PIN, HeldAnswer, Phone, Table  # noqa: F401  (the browser's skip rules come with it)
from test_pages import third_man_round

from playwright.sync_api import expect

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

NAMES = ["Marc-Antoine", "Éloïse", "Chloé", "Dan"]
WORDS = {
    "en": {"round": "round 2", "stays": "stays in History as unfinished", "title": "The Third Man",
           "over": "Game over", "wins": "Marc-Antoine wins!"},
    "fr": {"round": "manche 2", "stays": "reste dans l’historique", "title": "Le 3e Homme",
           "over": "Partie finie", "wins": "Marc-Antoine gagne"},
}


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    yield t
    t.close()


def visible_text(page) -> str:
    return page.inner_text("body")


def no_json(phone):
    text = visible_text(phone.page)
    assert "JSON" not in text and "null" not in text, f"{phone.name}: engineers' words on the page"


def shot(phone, lang, step):
    phone.shot(f"phone-game-{lang}-{step}")


def log_of(table):
    return list(table.session.export_lines())


def axe_check():
    """axe-core's serious and critical findings on a page as it is now, or
    nothing where axe-core is missing (its own module says so, or fails in CI)."""
    try:
        from test_browser_axe import severe_violations
    except pytest.skip.Exception:
        return lambda page: []
    return severe_violations


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_whole_scoreboard_game_from_phones_only(browser, table, lang):
    words = WORDS[lang]
    match = third_man_round()[:-2]                 # round 2 has begun: nothing entered in it yet
    match[0] = dict(match[0], players=NAMES)
    for action in match:
        table.post(action)
    assert table.session.public()["round"] == 2

    control = Phone(browser, table.base, "control")
    seat = Phone(browser, table.base, "seat")
    board = Phone(browser, table.base, "board")
    axe, found = axe_check(), []              # each question, checked as a screen reader meets it
    try:
        page = control.page
        page.goto(table.base + f"/control?lang={lang}")
        assert page.get_attribute("html", "lang") == lang
        pin = page.get_by_test_id("pin")
        pin.fill(PIN)
        pin.press("Enter")                          # Enter gives the PIN: no button needed
        expect(page.get_by_test_id("pin")).to_have_count(0)

        # A new game over the unfinished match: asked first, saying what happens.
        new_game = page.locator("#new-game-fold")
        expect(new_game).not_to_have_attribute("open", "")      # a game is going on: the form is folded
        new_game.locator("summary").click()
        page.select_option("#game", "scoreboard")
        names = page.locator("#new-game-section input.player-name")
        expect(names).to_have_count(4)
        page.locator("#new-game-section button", has_text=re.compile("Remove|Retirer")).last.click()
        page.locator("#new-game-section button", has_text=re.compile("Remove|Retirer")).last.click()
        expect(names).to_have_count(2)
        names.nth(0).fill("Marc-Antoine")
        names.nth(1).fill("Éloïse")
        page.fill("#opt-target", "20")
        before = log_of(table)
        page.click("#start")
        ask = page.locator("#start-confirm")
        expect(ask).to_be_visible()
        expect(ask).to_contain_text(words["title"])
        expect(ask).to_contain_text(words["round"])
        expect(ask).to_contain_text(words["stays"])
        expect(ask).to_contain_text("Marc-Antoine, Éloïse, Chloé, Dan")
        assert log_of(table) == before and table.session.game.id == "third-man", "nothing changes before the answer"
        control.fits()
        found += axe(page)
        shot(control, lang, "1-new-game-asks")
        page.click("#start-no")
        expect(ask).to_have_count(0)
        assert log_of(table) == before
        page.click("#start")
        page.click("#start-yes")
        expect(page.get_by_test_id("points-1")).to_be_visible()
        assert table.session.game.id == "scoreboard" and table.session.players == ("Marc-Antoine", "Éloïse")
        kept = [g for g in table.session.store.games() if g.game == "third-man"]
        assert len(kept) == 1 and not kept[0].finished, "the match stays in History, unfinished"

        # Points by a tap and a number; Enter in the field adds too; a minus sign takes off.
        board.page.goto(table.base + f"/?lang={lang}")
        page.get_by_test_id("points-1").fill("7")
        page.get_by_test_id("add-points-1").click()
        expect(page.locator("#entry-section .points-score").first).to_have_text("7")
        assert table.session.public()["scores"] == [7, 0]
        page.get_by_test_id("points-2").fill("9")
        page.get_by_test_id("points-2").press("Enter")
        expect(page.locator("#entry-section .points-score").nth(1)).to_have_text("9")
        page.get_by_test_id("points-2").fill("-4")
        page.get_by_test_id("add-points-2").click()
        expect(page.locator("#entry-section .points-score").nth(1)).to_have_text("5")
        assert table.session.public()["scores"] == [7, 5]
        page.get_by_test_id("token-plus-2").click()
        expect(page.locator("#entry-section .token-count").nth(1)).to_contain_text("1")
        assert table.session.public()["tokens"] == [0, 1]
        expect(page.get_by_test_id("points-1")).to_have_value("")        # the entry made leaves the field empty
        no_json(control)
        control.fits()
        found += axe(page)
        shot(control, lang, "2-control-points")

        # A second phone takes Éloïse's seat with the PIN (Enter), and scores from there.
        sp = seat.page
        sp.goto(table.base + f"/seat?lang={lang}")
        sp.get_by_test_id("pin").fill(PIN)
        sp.get_by_test_id("pin").press("Enter")
        expect(sp.locator('button[data-seat="0"]')).to_be_focused()      # the first free seat's button
        sp.locator('button[data-seat="1"]').click()
        sp.wait_for_url("**/seat/1")
        expect(sp.get_by_test_id("points-1")).to_be_visible()
        sp.get_by_test_id("points-1").fill("-2")
        sp.get_by_test_id("add-points-1").click()
        expect(sp.locator("#points-section .points-score").first).to_have_text("5")
        assert table.session.public()["scores"] == [5, 5]
        # Undo in reach: the entry just made, from where it was made.
        sp.get_by_test_id("undo-last").click()
        expect(sp.locator("#points-section .points-score").first).to_have_text("7")
        assert table.session.public()["scores"] == [7, 5]
        expect(sp.get_by_test_id("undo-last")).to_have_count(0)
        sp.get_by_test_id("points-2").fill("6")
        sp.get_by_test_id("add-points-2").click()
        expect(sp.locator("#points-section .points-score").nth(1)).to_have_text("11")
        no_json(seat)
        seat.fits()
        found += axe(sp)
        shot(seat, lang, "3-seat-points")

        # Releasing the seat, from the seat page: asked first, nothing changes before.
        claims = dict(table.session.table.claims)
        assert claims == {1: "phone"}
        sp.click("#release")
        expect(sp.locator("#release-prompt")).to_be_visible()
        expect(sp.locator("#release-prompt")).to_contain_text("Éloïse")
        assert dict(table.session.table.claims) == claims
        seat.fits()
        found += axe(sp)
        shot(seat, lang, "4-seat-release-asks")
        sp.click("#release-no")
        expect(sp.locator("#release")).to_be_visible()
        assert dict(table.session.table.claims) == claims

        # ... and from the control: asked first too.
        page.locator("#seats-fold summary").click()
        page.click("#release-1")
        expect(page.locator("#release-prompt")).to_contain_text("Éloïse")
        assert dict(table.session.table.claims) == claims
        control.fits()
        found += axe(page)
        shot(control, lang, "5-control-release-asks")
        page.click("#release-no")
        assert dict(table.session.table.claims) == claims

        # The end: the target score reached from a phone.
        page.get_by_test_id("points-1").fill("13")
        page.get_by_test_id("add-points-1").click()
        over = page.locator("#entry-section .points-over")
        expect(over).to_be_visible()
        expect(over).to_contain_text(words["over"])
        expect(over).to_contain_text(words["wins"])
        public = table.session.public()
        assert public["finished"] and public["winner"] == [0] and public["scores"] == [20, 11]
        expect(board.page.locator("#board")).to_contain_text(words["wins"], timeout=BLINK_MS)
        expect(page.locator("#new-game-fold")).to_have_attribute("open", "")      # what comes next: a new game
        for phone in (control, seat, board):
            no_json(phone)
            phone.fits()
        shot(control, lang, "6-control-over")
        shot(seat, lang, "7-seat-over")
        shot(board, lang, "8-board-over")
        assert not found, "\n".join(found)
    finally:
        for phone in (control, seat, board):
            phone.close()


def test_a_number_typed_while_the_last_ones_answer_is_on_its_way_stays_in_the_field(browser, table):
    """The table's event often reaches the phone before the box's answer
    to the entry that caused it: the new score shows, and a quick player
    types the next number.  The answer, arriving then, empties the field
    only of the number it answers -- the next one stays, and "Add" adds it."""
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    control = Phone(browser, table.base, "control")
    try:
        page = control.page
        page.goto(table.base + "/control")
        page.get_by_test_id("pin").fill(PIN)
        page.get_by_test_id("pin").press("Enter")
        field, score = page.get_by_test_id("points-2"), page.locator("#entry-section .points-score").nth(1)
        expect(field).to_be_visible()

        held = HeldAnswer(page)
        field.fill("9")
        field.press("Enter")
        expect(score).to_have_text("9")           # the event came first; the answer is still held
        assert held.sent and table.session.public()["scores"] == [0, 9]
        field.fill("-4")                          # the next number, typed before the answer
        held.release()
        expect(page.locator("#entry-section .points-answer .msg")).to_have_text("Éloïse +9")
        expect(field).to_have_value("-4")
        page.get_by_test_id("add-points-2").click()
        expect(score).to_have_text("5")
        assert table.session.public()["scores"] == [0, 5]
        expect(field).to_have_value("")
    finally:
        control.close()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_restore_names_the_backups_date_and_games_and_changes_nothing_before_yes(browser, table, tmp_path, lang):
    """Restoring replaces everything: the page has the box look at the file
    first, then asks once with the backup's date and game count and what
    this box loses (the game at the table named); until "Replace
    everything", not a byte of the data folder changes."""
    import hashlib

    from test_update_web import OWNER, make_owner
    from web_support import http, pin_headers, wait_until

    folder = table.session.store.dir
    make_owner(folder)
    table.app.extensions["companion"].config["data_dir"] = str(folder)
    table.post({"type": "new_game", "game": "scoreboard", "players": ["Marc-Antoine", "Éloïse"]})
    table.post({"type": "add", "seat": 1, "points": 4})
    _, _, body = http(table.server.port, "GET", "/api/backup", None, pin_headers())
    (tmp_path / "backup.zip").write_bytes(body)
    table.post({"type": "new_game", "game": "third-man", "players": NAMES})     # played since the backup
    restarts = []
    table.app.extensions["companion.restart"] = lambda: restarts.append(True)

    def files():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
                if p.is_file() and not p.name.endswith("-shm")}

    phone = Phone(browser, table.base, f"restore-{lang}")
    try:
        page = phone.page
        page.goto(table.base + f"/backup?lang={lang}")
        before = files()
        form = page.locator("#restore-form")
        form.locator("input[type=file]").set_input_files(str(tmp_path / "backup.zip"))
        form.get_by_test_id("owner-password").fill(OWNER)
        form.locator("#restore-ask").click()
        ask = page.locator("#restore-confirm")
        expect(ask).to_be_visible()
        prompt = page.locator("#restore-prompt").inner_text()
        assert ("(1 game)" if lang == "en" else "(1 partie)") in prompt, prompt
        assert re.search(r"20\d\d", prompt), "the backup's date"
        lost = page.locator("#restore-lost").inner_text()
        assert ("2 games" if lang == "en" else "2 parties") in lost, lost
        assert WORDS[lang]["title"] in lost and "Marc-Antoine, Éloïse, Chloé, Dan" in lost, lost
        assert files() == before and table.session.game.id == "third-man", "nothing changes before the answer"
        phone.fits()
        phone.shot(f"phone-game-{lang}-9-restore-asks")
        page.click("#restore-no")
        assert files() == before and not restarts
        form.locator("#restore-ask").click()
        page.click("#restore-yes")
        page.locator("#restore-msg.ok").wait_for()
        assert (folder / ".restore-new" / "RESTORE-READY").exists()
        assert wait_until(lambda: restarts == [True]), "the box restarts to put it in place"
    finally:
        phone.close()
