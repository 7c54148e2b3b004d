"""Sloppy Seconds on the box's mock buttons: hands by suit totals, a whole game,
the trump and the ineligible suit from a phone's trick entry.
"""

from __future__ import annotations

import pytest

from companion.games.sloppy_seconds import score_hand
from hardware import Box
from hardware.testing import box_config

from box_support import box, mock_factory, shows  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]

# Per seat: spades, hearts, diamonds, clubs.
BIG = [[46] * 4, [45] * 4, [0] * 4, [0] * 4]            # Ben is second in every suit: 180
REAL = [[30, 10, 0, 23], [25, 40, 50, 23], [20, 22, 21, 30], [16, 19, 20, 15]]


def start(box, session, players=PLAYERS, **options) -> None:
    action = {"type": "new_game", "game": "sloppy-seconds", "players": list(players)}
    if options:
        action["options"] = options
    session.submit(action)
    box.flush()


def enter_hand(box, session, totals) -> int:
    """Enter a hand by suit totals from the table screen; return the presses."""
    n = len(totals)
    before = box.presses
    hands = len(session.public()["hands"])
    box.press("ok")
    ctrl = box.app.controller
    for seat in range(n - 1):
        shows(box, f"{session.public()['players'][seat]}'s tricks")
        for suit in range(4):
            assert (ctrl.mode, ctrl.seat, ctrl.suit) == ("entry", seat, suit)
            for key in ctrl.field.keys_to(totals[seat][suit]):
                box.press(key)
    assert ctrl.mode == "confirm"
    rest = [str(v) for v in totals[-1]]
    shows(box, f"{session.public()['players'][-1]}: the rest", *rest)
    box.press("ok")
    assert len(session.public()["hands"]) == hands + 1
    return box.presses - before


def test_the_plans_add_up():
    for totals in (BIG, REAL):
        assert [sum(t[k] for t in totals) for k in range(4)] == [91] * 4
    assert score_hand(BIG) == (5, 180, 5, 5)
    assert score_hand(REAL) == (23, 48, 43, 5)


def test_a_whole_game_by_suit_totals(box, session):
    start(box, session)
    shows(box, "Hand 1", "Ann", "Dan", "D")                   # "D": Ann deals
    presses = []
    expected = [0, 0, 0, 0]
    for number, totals in enumerate([BIG, REAL, BIG], start=1):
        p = session.public()
        assert p["dealer"] == (number - 1) % 4
        presses.append(enter_hand(box, session, totals))
        expected = [a + b for a, b in zip(expected, score_hand(totals))]
        after = session.public()
        assert after["scores"] == expected
        assert after["hands"][-1]["points"] == list(score_hand(totals))
        if after["finished"]:
            break
        shows(box, f"Hand {number} scored", *[f"{'+' if v > 0 else ''}{v}" for v in score_hand(totals)])
        box.press("ok")
        shows(box, f"Hand {number + 1}")
    final = session.public()
    assert final["finished"] and final["winner"] == [1] and final["scores"] == [33, 408, 53, 15]
    shows(box, "Game over", "Ben wins!")
    # 12 values entered ±5 then ±1 from the fair share, +2 (start, confirm):
    # the even hand costs far less than the lopsided ones.
    assert presses[1] < presses[0] and all(p < 80 for p in presses), presses
    box.press("ok")
    shows(box, "New game")


def test_three_players_diamonds_add_up_to_89(box, session):
    start(box, session, ["Ann", "Ben", "Chloé"], target=100, first_dealer=2)
    shows(box, "Hand 1", "OK: enter · BACK: menu")
    totals = [[40, 91, 29, 0], [30, 0, 30, 0], [21, 0, 30, 91]]
    box.press("ok")
    ctrl = box.app.controller
    shows(box, "Ann's tricks", "\u00b15", "30")             # the fair share of 91 among three
    for seat in range(2):
        for suit in range(4):
            for key in ctrl.field.keys_to(totals[seat][suit]):
                box.press(key)
    shows(box, "Chloé: the rest", "of 89", "of 91", "21", "30", "91")
    box.press("ok")
    p = session.public()
    assert p["hands"][0]["points"] == list(score_hand(totals))
    assert p["hands"][0]["totals"][2] == {"S": 21, "H": 0, "D": 30, "C": 91}
    assert p["dealer"] == 0


def test_a_value_never_exceeds_what_is_left_of_its_suit(box, session):
    start(box, session)
    box.press("ok")
    ctrl = box.app.controller
    for key in ctrl.field.keys_to(91):                      # Ann took every spade
        box.press(key)
    for _ in range(3):
        box.press("ok")
        box.press("ok")
    assert (ctrl.seat, ctrl.suit) == (1, 0)
    assert (ctrl.field.lo, ctrl.field.hi, ctrl.field.value) == (0, 0, 0)
    shows(box, "Ben's tricks", "0 left")
    box.press("up")
    assert ctrl.field.value == 0


def test_back_keeps_the_draft_and_ok_resumes_it(box, session):
    start(box, session)
    box.press("ok")
    ctrl = box.app.controller
    for key in ctrl.field.keys_to(12):
        box.press(key)
    assert ctrl.suit == 1
    box.press("back")                                       # hearts → back to spades (its ±1 pass)
    shows(box, "\u00b11", "12")
    box.press("back")                                       # ±5 pass
    box.press("back")                                       # off the first field: the table
    shows(box, "Hand 1", "Ann")
    assert session.public()["hands"] == []
    box.press("ok")
    shows(box, "Ann's tricks", "12", "79 left")
    assert (ctrl.seat, ctrl.suit, ctrl.field.value) == (0, 0, 12)


def test_the_trump_and_the_ineligible_suit_show_all_hand_long(box, session):
    start(box, session)
    session.submit({"type": "trick", "cards": ["2S", "3H", "4S", "5S"]}, source="web")   # Ben leads
    box.flush()
    shows(box, "not \u2665")
    assert "trump" not in " ".join(box.frame.texts)
    session.submit({"type": "trick", "cards": ["6S", "7S", "8D", "9S"]}, source="web")
    box.flush()
    shows(box, "not \u2665", "trump \u2666")
    box.press("ok")                                         # no suit totals for a hand under way
    shows(box, "This hand is entered", "phone (2 so far)")
    box.press("ok")
    shows(box, "not \u2665", "trump \u2666")
    box.hold("back")
    box.press("ok")                                         # undo the second trick
    shows(box, "not \u2665")
    assert "trump" not in " ".join(box.frame.texts)


def test_up_shows_the_last_hand(box, session):
    start(box, session)
    box.press("up")
    shows(box, "Hand 1")                                    # no hand yet: nothing to show
    session.submit({"type": "hand", "points": [dict(zip("SHDC", t)) for t in REAL]}, source="web")
    box.flush()
    shows(box, "Hand 1 scored")
    box.press("ok")
    box.press("down")
    shows(box, "Last hand (1)", "+48", "+43")
    box.press("ok")
    shows(box, "Hand 2")
