"""FIGHT? on the box's mock buttons: quick turns (the largest change first),
hints from the solver, a whole two-player game, the team-up hint with three.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from companion import fight_solver
from companion.games.fight import legal_changes
from companion.i18n import gettext
from hardware import Box
from hardware import draw as d
from hardware.testing import box_config

from box_support import box, mock_factory, shows  # noqa: F401 (fixtures)


def start(box, session, players, coins=None) -> None:
    action = {"type": "new_game", "game": "fight", "players": players}
    if coins:
        action["options"] = {"coins": coins}
    session.submit(action)
    box.flush()


def hint_shown(box, timeout: float = 60.0) -> None:
    """The hint is searched in the hint process while the box says
    "thinking…": wait for the frame that shows the answer."""
    deadline = time.monotonic() + timeout
    while "thinking\u2026" in box.frame.texts:
        assert time.monotonic() < deadline, "the hint never came"
        time.sleep(0.01)


def money(p: dict) -> int:
    return sum(p["scores"]) + sum(int(v) * n for v, n in p["table"].items())


def move_text(play, take) -> str:
    return f"{play} \u2192 {'+'.join(map(str, take)) if take else 'no change'}"


def test_a_whole_two_player_game_with_hints(box, session):
    """Ann asks for a hint every turn and plays it; Ben plays his largest
    coin and takes the largest change (OK, OK).  Ann starts from a lost
    position, but Ben does not play perfectly."""
    start(box, session, ["Ann", "Ben"])
    total = money(session.public())
    turns = 0
    while not session.public()["finished"]:
        p = session.public()
        mover = p["players"][p["turn"]]
        if p["turn"] == 0:
            expected = fight_solver.hint(p)
            box.press("up")
            shows(box, f"{mover}: hint?")
            box.press("ok")
            hint_shown(box)
            shows(box, f"Hint for {mover}", move_text(expected.play, expected.take), "perfect play")
            box.press("ok")
            move = expected.action()
        else:
            purse = p["coins"][p["turn"]]
            coin = max(int(v) for v, n in purse.items() if n)
            shows(box, f"{mover} plays {coin}")
            box.press("ok")
            take = legal_changes(p["table"], coin)[0]
            shows(box, move_text(coin, take))
            box.press("ok")
            move = {"type": "turn", "seat": p["turn"], "play": coin, "take": take}
        after = session.public()
        assert session.timeline.log[-1] == move
        assert money(after) == total
        assert sum(after["scores"]) < sum(p["scores"])       # held money falls every turn
        turns += 1
        assert turns < 200
    final = session.public()
    winner = final["players"][final["winner"][0]]
    shows(box, "Game over", f"{winner} wins!")
    assert final["turn"] is None and len(final["out"]) == 1
    box.press("ok")
    shows(box, "New game")


def test_quick_entry_proposes_the_largest_change_first(box, session):
    start(box, session, ["Ann", "Ben"])
    shows(box, "20", "10", "5", "1", "Ann", "Ben", "Table", "Ann plays 20")
    before = box.presses
    box.press("down")                                   # Ann's next coin: 10
    shows(box, "Ann plays 10")
    box.press("ok")
    shows(box, "10 \u2192 no change", "1/1")             # nothing smaller on the table
    box.press("ok")
    assert box.presses - before == 3
    assert session.public()["table"]["10"] == 1
    before = box.presses
    box.press("ok")                                     # Ben plays 20...
    shows(box, "20 \u2192 10", "1/2", "49")              # ...and takes the 10: Ben's purse previews 49
    box.press("down")
    shows(box, "20 \u2192 no change", "2/2")
    box.press("down")                                   # wraps round to the largest
    shows(box, "20 \u2192 10")
    box.press("ok")
    p = session.public()
    assert p["coins"][1] == {"20": 0, "10": 3, "5": 3, "1": 4} and p["table"] == {"20": 1, "10": 0, "5": 0, "1": 0}
    assert box.presses - before == 4


def test_every_legal_change_is_offered_in_turn(box, session):
    start(box, session, ["Ann", "Ben", "Chloé"])
    for seat, play in [(0, 5), (1, 5), (2, 1), (0, 1), (1, 1)]:
        session.submit({"type": "turn", "seat": seat, "play": play, "take": []}, source="web")
    box.flush()
    p = session.public()
    assert p["turn"] == 2 and p["table"] == {"20": 0, "10": 0, "5": 2, "1": 3}
    changes = legal_changes(p["table"], 10)
    box.press("down")                                  # Chloé: 20 → 10
    box.press("ok")
    seen = []
    for _ in changes:
        seen.append([t for t in box.frame.texts if "\u2192" in t][0])
        box.press("down")
    assert seen == [move_text(10, take) for take in changes]
    assert changes[0] == [5, 1, 1, 1] and changes[-1] == []
    box.press("back")                                   # back to the coin
    shows(box, "Chloé plays 10")


def test_three_players_get_a_labelled_team_up_hint(box, session):
    start(box, session, ["Ann", "Ben", "Chloé"], coins={"5": 1, "2": 1, "1": 1})
    expected = fight_solver.hint(session.public())
    assert expected and not expected.exact
    box.press("up")
    box.press("ok")
    hint_shown(box)
    shows(box, "Hint for Ann", move_text(expected.play, expected.take), "heuristic:")
    box.press("ok")
    assert session.timeline.log[-1] == expected.action()
    shows(box, "Ben plays")


def test_no_hint_says_why_and_changes_nothing(box, session):
    start(box, session, ["Ann", "Ben", "Chloé"])
    box.press("up")
    box.press("ok")
    hint_shown(box)
    shows(box, "Hint for Ann", "no hint:")
    assert "OK: play it" not in box.frame.texts
    box.press("ok")
    shows(box, "Ann: hint?")
    assert len(session.timeline.log) == 1


def test_a_phone_turn_moves_the_box_on(box, session):
    start(box, session, ["Ann", "Ben"])
    box.press("ok")                                     # Ann is choosing her change...
    session.submit({"type": "turn", "seat": 0, "play": 5, "take": []}, source="web")   # ...but plays on a phone
    box.flush()
    shows(box, "Ben plays 20")
    box.hold("back")
    box.press("ok")                                     # undo: Ann again
    shows(box, "Ann plays 20")


def test_a_fight_more_preset_from_the_menu(box, session):
    from companion import games

    box.press("ok")                                     # the menu
    box.press("ok")                                     # New game
    for _ in range(games.available().index("fight")):
        box.press("down")
    box.press("ok")
    shows(box, "Start", "Coins", "standard")
    box.press("down")
    box.press("ok")
    box.press("ok")
    box.press("ok")                                     # standard → no 10s → fewer 5s, 1s → 13·7·4·1
    shows(box, "Coins", "13\u00b77\u00b74\u00b71")
    box.press("up")
    box.press("ok")                                     # Start
    p = session.public()
    assert p["game"] == "fight" and p["coins"][0] == {"13": 1, "7": 2, "4": 3, "1": 4}
    shows(box, "13", "7", "4", "Table", "plays 13")


def test_a_hint_longer_than_the_screen_says_in_its_hint_line_that_it_scrolls(box, session):
    start(box, session, ["Ann", "Ben", "Chloé"], coins={"5": 1, "2": 1, "1": 1})
    box.press("up")
    box.press("ok")
    hint_shown(box)
    controller = box.app.controller
    lines = len(d.wrap(gettext(controller.hint.reason), d.BODY, d.WIDTH - 2 * d.MARGIN - 10))
    assert lines > 2, "this hint's reason fits: the test needs a longer one"
    shows(box, "▴▾ · OK: play · BACK: back")
    before = box.frame.image.tobytes()
    box.press("down")                                   # what it says UP/DOWN do
    assert box.frame.image.tobytes() != before and controller.scroll == 1
    shows(box, "▴▾ · OK: play · BACK: back")


def test_a_hint_that_fits_keeps_the_short_hint_line(box, session):
    start(box, session, ["Ann", "Ben"])
    box.press("up")
    box.press("ok")
    hint_shown(box)
    controller = box.app.controller
    controller.hint = dataclasses.replace(controller.hint, reason="perfect play wins")     # two lines at most
    box.flush()                                         # drawn again
    shows(box, "OK: play it · BACK: back")
    assert not any("▴▾" in t for t in box.frame.texts)
