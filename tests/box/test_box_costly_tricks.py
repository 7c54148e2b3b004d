"""Costly Tricks on the box's mock buttons: deals, quick trick entry, a whole match.

Everything goes through the mock pins (``box.press`` / ``box.hold``), the
real store and table session and the real Costly Tricks engine; what the
screen says is read from the texts each frame records.
"""

from __future__ import annotations

import pytest

from companion import games
from hardware import Box
from hardware.testing import box_config

from box_support import box, mock_factory, shows, press_all  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben"]
SEATS = ["Ann", "Ben", "Ann's dummy", "Ben's dummy"]


def seat_moves(start: int, target: int) -> list[str]:
    """The fewest presses from seat ``start`` to ``target`` (DOWN = next, wrapping)."""
    down = (target - start) % 4
    return ["down"] * down if down <= 4 - down else ["up"] * (4 - down)


def start_match(box, session, **options) -> None:
    action = {"type": "new_game", "game": "costly-tricks", "players": PLAYERS}
    if options:
        action["options"] = options
    session.submit(action)
    box.flush()


def deal(box, seat: int) -> int:
    """Deal with ``seat`` holding the red 0; return the presses."""
    before = box.presses
    shows(box, "Who has the red 0?")
    press_all(box, seat_moves(box.app.controller.cursor, seat) + ["ok"])
    return box.presses - before


def enter_trick(box, session, winner: int, points: int) -> int:
    """One quick trick from the trick screen; return the presses it took."""
    before = box.presses
    p = session.public()
    ctrl = box.app.controller
    assert ctrl.mode == "trick" and ctrl.field == 0
    shows(box, f"trick {sum(p['tricks']) + 1}/11" if sum(p["tricks"]) < 10 else "Last trick", "Won by")
    press_all(box, seat_moves(ctrl.cursor, winner))
    shows(box, SEATS[winner])
    box.press("ok")
    if sum(p["tricks"]) < 10:
        shows(box, f"Won by {SEATS[winner]}", "Points")    # the header keeps who won the trick
        press_all(box, ctrl.points.keys_to(points))
    after = session.public()
    assert sum(after["tricks"]) == sum(p["tricks"]) + 1 or len(after["hands"]) > len(p["hands"])
    return box.presses - before


def play_hand(box, session, lead: int, tricks: list[tuple[int, int]]) -> int:
    presses = deal(box, lead)
    assert session.public()["lead"] == lead
    for winner, points in tricks:
        presses += enter_trick(box, session, winner, points)
    return presses


# Three hands: side 0 wins one (+34), nobody wins one (0 : 0), side 0 wins, side 0 wins.
HAND_A = [(0, 30), (2, 24), (1, 10), (3, 12), (0, 28), (1, 15), (2, 26), (0, 20), (3, 14), (2, 18), (1, 23)]
HAND_TIE = [(1, 20)] * 5 + [(0, 20)] * 6
HAND_B = [(2, 40), (0, 35), (1, 5), (3, 8), (2, 30), (0, 22), (1, 12), (3, 10), (0, 25), (2, 20), (1, 13)]


def side_points(tricks):
    out = [0, 0]
    for winner, points in tricks:
        out[winner % 2] += points - 20
    return out


def test_the_hands_add_up():
    for hand in (HAND_A, HAND_TIE, HAND_B):
        assert sum(p for _w, p in hand) == 220
    assert side_points(HAND_A)[0] > 0 and side_points(HAND_TIE) == [0, 0] and side_points(HAND_B)[0] > 0


def test_a_whole_match_from_the_menu(box, session):
    shows(box, "Game companion")
    box.press("ok")                                          # the menu
    box.press("ok")                                          # New game
    for _ in range(games.available().index("costly-tricks")):
        box.press("down")
    shows(box, "Costly Tricks")
    box.press("ok")
    shows(box, "Start", "Hands to win")
    box.press("ok")
    assert session.public()["game"] == "costly-tricks"

    presses = []
    for number, (lead, hand) in enumerate([(2, HAND_A), (1, HAND_TIE), (0, HAND_B), (3, HAND_A)], start=1):
        before = session.public()
        presses.append(play_hand(box, session, lead, hand))
        p = session.public()
        assert len(p["hands"]) == number
        last = p["hands"][-1]
        assert last["points"] == side_points(hand)
        assert last["tricks"] == [sum(1 for w, _p in hand if w % 2 == s) for s in (0, 1)]
        if p["finished"]:
            shows(box, "Match over", "Ann wins!")
            break
        assert p["lead"] is None and p["scores"] == [0, 0] and p["tricks"] == [0, 0]
        token = last["token"]
        shows(box, f"Hand {number} over", "No token: 0 to 0" if token is None else f"Token for {PLAYERS[token]}")
        assert p["tokens"][0] == before["tokens"][0] + (token == 0)
        box.press("ok")                                      # on to the next deal
    final = session.public()
    assert final["finished"] and final["winner"] == [0] and final["tokens"] == [3, 0]
    assert [h["token"] for h in final["hands"]] == [0, None, 0, 0]
    # Quick entry: these hands' points stray far from the average (10..40),
    # yet a hand takes under 80 presses, about 7 a trick; the even hand 34.
    assert max(presses) < 80 and presses[1] == 34, presses
    box.press("ok")
    shows(box, "New game")


def test_presses_per_trick(box, session):
    start_match(box, session)
    assert deal(box, 0) == 1                               # seat 0 holds the red 0: OK
    shows(box, "Hand 1 · trick 1/11", "Won by", "Ann")     # the lead
    box.press("ok")
    shows(box, "Points ±5", "20")                          # the hand's average
    box.press("back")
    assert enter_trick(box, session, 0, 20) == 3           # the likely winner, the average: OK OK OK
    assert enter_trick(box, session, 0, 23) == 6           # OK, OK, UP×3, OK
    assert enter_trick(box, session, 2, 37) == 10          # DOWN×2, OK, UP×3 (35), OK, UP×2, OK
    p = session.public()
    assert p["tricks"] == [3, 0] and p["scores"] == [20 + 23 + 37 - 60, 0] and p["lead"] == 2
    for _ in range(7):
        enter_trick(box, session, 1, 15)
    # The 11th trick: its points are the rest of 220, OK on the seat enters it.
    shows(box, f"Last trick: {220 - 80 - 105} points", "Won by")
    assert enter_trick(box, session, 1, 0) == 1
    assert session.public()["hands"][0]["points"] == [20, -20]


def test_points_stay_within_what_the_220_check_allows(box, session):
    start_match(box, session)
    deal(box, 0)
    for _ in range(5):
        enter_trick(box, session, 0, 40)                  # 200 points in 5 tricks: 20 left for 6 tricks
    ctrl = box.app.controller
    assert (ctrl.points.lo, ctrl.points.hi, ctrl.points.value) == (0, 20, 3)
    box.press("ok")
    for _ in range(8):
        box.press("up")
    shows(box, "Points ±5", "20")
    assert ctrl.points.value == 20


def test_back_steps_back_then_opens_the_menu(box, session):
    start_match(box, session)
    deal(box, 1)
    shows(box, "Won by", "Ben")
    box.press("ok")
    box.press("ok")                                       # the ±1 pass
    shows(box, "Points ±1")
    box.press("back")
    shows(box, "Points ±5")
    box.press("back")                                     # back on the seat
    assert box.app.controller.field == 0
    box.press("back")
    shows(box, "Back to game", "Undo last action")
    box.press("ok")
    shows(box, "Won by")
    assert session.public()["tricks"] == [0, 0]


def test_a_phone_trick_and_an_undo_move_the_box_on(box, session):
    start_match(box, session)
    deal(box, 3)
    session.submit({"type": "trick", "winner": 1, "points": 25}, source="web")
    box.flush()
    shows(box, "trick 2/11", "Ben", "+5")
    assert box.app.controller.cursor == 1                  # the new lead is the likely winner
    enter_trick(box, session, 2, 30)
    shows(box, "trick 3/11", "Ann's dummy")
    box.hold("back")
    shows(box, "Undo the last action?")
    box.press("ok")
    shows(box, "trick 2/11")
    assert session.public()["tricks"] == [0, 1]


def test_the_screen_says_who_leads_and_the_tokens(box, session):
    start_match(box, session, hands_to_win=2)
    play_hand(box, session, 0, HAND_A)
    box.press("ok")
    deal(box, 3)
    shows(box, "Hand 2 · trick 1/11", "Won by", "Ben's dummy")
    ctrl = box.app.controller
    assert ctrl.cursor == 3
    play = [(3, 40), (1, 40), (3, 40), (1, 40)] + [(0, 8), (2, 8), (0, 8)] + [(2, 9), (0, 9), (2, 9), (0, 9)]
    for winner, points in play:
        enter_trick(box, session, winner, points)
    p = session.public()
    assert p["tokens"] == [1, 1] and not p["finished"]
    shows(box, "Hand 2 over", "Token for Ben")
