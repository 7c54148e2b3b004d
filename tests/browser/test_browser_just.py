"""What just happened, on every phone: a round's, a hand's or a trick's
result stays on the scoreboard (``/``) until the next entry, as the box keeps
its result screen, in English and in French; the turn clock runs on ``/`` as
on the box.

Each game is played with legal actions (tests/core/test_fuzz_games.plausible,
kept only when the core accepts them) up to the entry that ends a round, a
hand or a trick; the log is imported and resumed, so the page opens on that
result (it must come from the history: nothing was heard live).  Then one
more entry comes from the table and the result leaves the board; an undo
brings it back.  Screenshots at 390 px: test-artifacts/just-<game>-<lang>.png.
"""

from __future__ import annotations

import random

import pytest

from browser_pages import jsonl, sloppy_hand
from companion.errors import ActionError
from companion.i18n import gettext
from companion.timeline import Timeline
from test_browser import ARTIFACTS, PHONE, WAIT_MS, table  # noqa: F401  (fixtures; the skip rules come with them)
from web_support import http, pin_headers

from playwright.sync_api import expect  # noqa: E402  (after the skip rules)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

NAMES = ["Marc-Antoine", "Éloïse", "Chloé", "Dan", "Zoë"]


def grew(key):
    return lambda before, after: len(after[key]) > len(before[key])


def quick_trick(before, after):
    return (after["lead"] is not None and before["lead"] is not None and after["last_trick"] is None
            and sum(after["tricks"]) == sum(before["tricks"]) + 1)


def diabolo_scored(before, after):
    return len(after["scored"]) > len(before["scored"]) or after["round"] != before["round"]


# game: (seats, options, the step that makes a result, the result's title in a language)
CASES = {
    "third-man": (4, {"tokens_to_win": 5}, grew("rounds"),
                  lambda s, lang: gettext("Round {n} over", lang, n=len(s["rounds"]))),
    "costly-tricks": (2, {"hands_to_win": 5}, grew("hands"),
                      lambda s, lang: gettext("Hand {n} over", lang, n=len(s["hands"]))),
    "costly-tricks-trick": (2, {"hands_to_win": 5}, quick_trick,
                            lambda s, lang: gettext("Trick to {seat}: {points} points", lang,
                                                    seat=s["players"][s["lead"]] if s["lead"] < 2 else
                                                    gettext("{name}'s dummy", lang, name=s["players"][s["lead"] - 2]),
                                                    points="")[:8]),
    "sloppy-seconds": (4, {"target": 5000}, grew("hands"),
                       lambda s, lang: gettext("Hand {h} scored", lang, h=len(s["hands"]))),
    "yenta": (5, {"target": 5000}, grew("hands"), lambda s, lang: gettext("Hand {n} over", lang, n=len(s["hands"]))),
    "diabolo": (5, {}, diabolo_scored, None),
    "fight": (3, {}, grew("out"), lambda s, lang: gettext("{name} is out: no coins left", lang,
                                                          name=s["players"][s["out"][-1]])),
    "scoreboard": (5, {}, lambda b, a: a["reveal"] is not None and a["reveal"] != b["reveal"],
                   lambda s, lang: gettext("Revealed!", lang)),
}


def game_of(case: str) -> str:
    return "costly-tricks" if case.startswith("costly-tricks") else case


def play_until(case: str, seed: int = 3):
    """(log, timeline) of ``case``'s game up to the first entry that makes its result."""
    from test_fuzz_games import plausible

    game = game_of(case)
    n, options, made, _title = CASES[case]
    rng = random.Random(seed)
    t = Timeline()
    log = [{"type": "new_game", "game": game, "players": NAMES[:n], "options": options}]
    t.apply(log[0])
    for _ in range(20_000):
        action = plausible(game, t, rng)
        if game == "sloppy-seconds" and rng.random() < 0.5:
            action = sloppy_hand(n, rng)
        if action.get("type") in ("undo", "new_game"):
            continue
        before = t.public()
        try:
            t.apply(action)
        except ActionError:
            continue
        log.append(action)
        if t.finished:                        # too far: start again from a shorter game
            return play_until(case, seed + 1)
        if made(before, t.public()):
            return log, t
    raise AssertionError(f"no result in {case}")


def next_entry(case: str, t: Timeline, seed: int = 5) -> dict:
    """A legal entry after the result that makes no result of its own."""
    from test_fuzz_games import plausible

    game = game_of(case)
    made = CASES[case][2]
    rng = random.Random(seed)
    before = t.public()
    for _ in range(20_000):
        action = plausible(game, t, rng)
        if action.get("type") in ("undo", "new_game", "hand"):
            continue
        try:
            pending = t.check(action)             # checked, not applied
        except ActionError:
            continue
        after = t.game.public(pending.step.state)
        if not t.game.is_finished(pending.step.state) and not made(before, after):
            return action
    raise AssertionError(f"no next entry in {case}")


def phone(browser, lang):
    context = browser.new_context(viewport=PHONE, locale="fr-FR" if lang == "fr" else "en-GB",
                                  device_scale_factor=2, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def resume(table, log) -> int:
    status, _, body = http(table.server.port, "POST", "/api/history/import", jsonl(log), pin_headers())
    assert status == 200, body
    status, _, state = http(table.server.port, "POST", f"/api/history/{body['id']}/resume", None, pin_headers())
    assert status == 200, state
    return body["id"]


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_result_stays_on_the_scoreboard_until_the_next_entry(browser, table, case, lang):
    log, t = play_until(case)
    resume(table, log)
    state = t.public()
    title = CASES[case][3]
    context, page, errors = phone(browser, lang)
    try:
        page.goto(table.base + "/")
        just = page.locator("#board .card.just")
        expect(just).to_be_visible()                 # from the history alone: the page heard nothing live
        heading = just.locator("h2").inner_text()
        if title is not None:
            assert title(state, lang) in heading, (heading, title(state, lang))
        if case == "third-man":
            r = state["rounds"][-1]
            assert gettext("{name} takes a token", lang, name=state["players"][r["token"]]) in heading
            # the board's scores went back to 0 for the next round: the card keeps the round's
            for seat, score in enumerate(r["scores"]):
                item = just.locator(f'li[data-seat="{seat}"]')
                assert item.inner_text().replace("\u2212", "-").split()[-1 if seat != r["token"] else -2] == str(score)
            expect(page.locator("#board .status-main")).to_contain_text(
                gettext("Round {r} · bid {b}", lang, r=2, b=1))
        if lang == "fr":
            assert "\u00a0:" in heading or ":" not in heading, heading      # French typography
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"just-{case}-{lang}.png"), full_page=True)

        # The next entry, from the table: the result leaves the board.
        entry = next_entry(case, t)
        table.post(entry)
        expect(just).to_have_count(0)
        # Taken back: the result is what just happened again.
        table.post({"type": "undo"})
        expect(page.locator("#board .card.just h2")).to_have_text(heading)
        page.reload()
        expect(page.locator("#board .card.just h2")).to_have_text(heading)
    finally:
        context.close()
    assert not errors, errors


def test_a_result_heard_live_shows_at_once_and_on_a_seat_page(browser, table):
    """The entry that ends the round comes while the pages are open: the
    scoreboard and a seat's page show the round's result."""
    log, t = play_until("third-man")
    resume(table, log[:-1])
    entered = http(table.server.port, "GET", "/api/state")[2]["pending"]["entered"]
    free = next(seat for seat in range(4) if seat not in entered)
    token = table.claim(free)
    context, page, errors = phone(browser, "en")
    try:
        context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'{free}': '{token}'}}))")
        page.goto(table.base + "/")
        seat = context.new_page()
        seat.goto(table.base + f"/seat/{free}")
        expect(page.locator("#board .card.just")).to_have_count(0)
        table.post(log[-1])
        for p in (page, seat):
            expect(p.locator("#board .card.just h2")).to_contain_text("Round 1 over")
    finally:
        context.close()
    assert not errors, errors


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_turn_clock_runs_on_the_scoreboard(browser, table, lang):
    table.post({"type": "new_game", "game": "scoreboard", "players": NAMES[:3]})
    status, _, body = http(table.server.port, "POST", "/api/clock", b'{"mode": "fischer", "bank_s": 600, "extra_s": 5}',
                           {**pin_headers(), "Content-Type": "application/json"})
    assert status == 200, body
    context, page, errors = phone(browser, lang)
    try:
        page.goto(table.base + "/")
        rows = page.locator("#clock-section:not([hidden]) .clock-list li")
        expect(rows).to_have_count(3)
        expect(page.locator("#clock-section h2")).to_have_text(gettext("Turn clock", lang))
        running = page.locator("#clock-section li.running .clock-time")
        first = running.inner_text()
        page.wait_for_function("(first) => document.querySelector('#clock-section li.running .clock-time')"
                               ".textContent !== first", arg=first)            # it counts down here
        assert page.locator("#clock-section button").count() == 0           # read only: no seat, no PIN
        # The box ends the turn: the next seat's time runs on the scoreboard.
        status, _, body = http(table.server.port, "POST", "/api/clock/end-turn", None, pin_headers())
        assert status == 200, body
        expect(page.locator("#clock-section li.running")).to_contain_text(NAMES[1])
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"clock-board-{lang}.png"), full_page=True)
    finally:
        context.close()
    assert not errors, errors
