"""Yenta on the box's mock buttons: the bid, asks (hit/miss), a pass, the last
player's dice, the settlement — checked against the same actions in the engine.
"""

from __future__ import annotations

import json

import pytest

from companion.timeline import replay
from hardware import Box
from hardware.testing import box_config

from box_support import box, mock_factory, shows  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben", "Chloé"]


def start(box, session, players=PLAYERS, **options) -> None:
    action = {"type": "new_game", "game": "yenta", "players": players}
    if options:
        action["options"] = options
    session.submit(action)
    box.flush()


def wrap_moves(start: int, target: int, size: int, forward: str = "down") -> list[str]:
    back = "up" if forward == "down" else "down"
    ahead = (target - start) % size
    return [forward] * ahead if ahead <= size - ahead else [back] * (size - ahead)


def press_all(box, keys) -> int:
    for key in keys:
        box.press(key)
    return len(keys)


def do(box, session, action: dict) -> int:
    """Enter ``action`` on the buttons; return the presses it took."""
    ctrl = box.app.controller
    p = session.public()
    kind = action["type"]
    if kind == "bid":
        assert ctrl.mode == "bid"
        shows(box, "the winning bid")
        n = press_all(box, wrap_moves(ctrl.cursor, action["seat"], len(PLAYERS)) + ["ok"])
        return n + press_all(box, ctrl.amount.keys_to(action["amount"]))
    if kind == "last":
        assert ctrl.mode == "last"
        shows(box, f"{PLAYERS[action['seat']]}'s last dice", f"1/{len(action['dice'])}")
        n, value = 0, 1
        for die in action["dice"]:
            n += press_all(box, wrap_moves(value - 1, die - 1, 6, forward="up") + ["ok"])
            value = die
        return n
    assert ctrl.mode == "turn" and p["turn"] == action["seat"]
    targets = ctrl._targets()
    goal = action["target"] if kind == "ask" else "pass"
    n = press_all(box, wrap_moves(targets.index(ctrl.cursor), targets.index(goal), len(targets)) + ["ok"])
    if kind == "pass":
        return n
    shows(box, f"{PLAYERS[action['seat']]} asks {PLAYERS[action['target']]} for")
    n += press_all(box, wrap_moves(ctrl.value - 1, action["value"] - 1, 6, forward="up") + ["ok"])
    shows(box, f"Has {PLAYERS[action['target']]} a {action['value']}?", "Hit: a pair", "Miss")
    return n + press_all(box, ([] if action["hit"] else ["down"]) + ["ok"])


def ask(seat, target, value, hit):
    return {"type": "ask", "seat": seat, "target": target, "value": value, "hit": hit}


# Ben bids 20 and makes it with 24; Ann 8; Chloé 12 + her last dice 2+2+5.
HAND = [
    {"type": "bid", "seat": 1, "amount": 20},
    ask(1, 2, 6, True), ask(1, 0, 5, True), ask(1, 2, 3, False),
    {"type": "pass", "seat": 2},
    ask(0, 1, 4, True), ask(0, 2, 2, False),
    ask(1, 0, 1, True),                      # Ben's last die: Chloé plays next
    ask(2, 0, 6, True),                      # Ann's last die: only Chloé has dice
    {"type": "last", "seat": 2, "dice": [2, 2, 5]},
]


def engine(actions, **options) -> dict:
    start_line = {"type": "new_game", "game": "yenta", "players": PLAYERS}
    if options:
        start_line["options"] = options
    return replay([json.dumps(a) for a in [start_line] + actions]).public()


@pytest.mark.parametrize("target", [100, 40])
def test_a_whole_hand_on_the_buttons(box, session, target):
    start(box, session, target=target)
    presses = []
    for action in HAND:
        p = session.public()
        if p["bidder"] is not None and action["type"] != "last":
            shows(box, f"{PLAYERS[p['bidder']]} bid {p['bid']}", "pass",
                  *[f"\u03a3{s}" for s in p["scores"]])
            for seat, points in enumerate(p["hand_points"]):
                assert (f"+{points}" if points else "0") in box.frame.texts
        presses.append(do(box, session, action))
        assert session.timeline.log[-1] == action
    p = session.public()
    assert p == engine(HAND, target=target)
    assert p["hands"][0]["delta"] == [8, 40, 21]
    if target == 40:
        assert p["finished"] and p["winner"] == [1]
        shows(box, "Ben wins!", "OK or BACK: menu")
        box.press("ok")
        shows(box, "New game")
        return
    shows(box, "Ben made 20", "+8", "+40", "+21")
    box.press("ok")
    shows(box, "Hand 2: the winning bid", "Ben")          # the last bidder, the last bid
    assert box.app.controller.cursor == 1
    # bid DOWN OK OK OK; each ask 3 presses + moves (+1 for a miss); a pass 1-2.
    assert presses[0] == 4 and max(presses[1:-1]) <= 8, presses


def test_a_lost_bid_and_the_last_dice(box, session):
    start(box, session)
    for action in [{"type": "bid", "seat": 0, "amount": 50}] + [ask(0, 1, 1, True)] * 5:
        session.submit(action, source="web")
    box.flush()
    shows(box, "Chloé's last dice", "1/5")
    assert do(box, session, {"type": "last", "seat": 2, "dice": [1, 1, 2, 3, 6]}) == 5 + 1 + 2 + 2
    p = session.public()
    assert p["hands"][0]["delta"] == [-50, 0, 13]
    shows(box, "Ann lost 50", "\u221250", "+13")


def test_the_cursor_offers_only_seats_with_dice_then_pass(box, session):
    start(box, session, PLAYERS + ["Dan"])
    for action in [{"type": "bid", "seat": 3, "amount": 0}] + [ask(3, 0, 3, True)] * 5:
        session.submit(action, source="web")         # Dan and Ann have no dice left
    box.flush()
    ctrl = box.app.controller
    assert session.public()["turn"] == 1 and ctrl.cursor == 2    # Ben asks; Chloé is next with dice
    box.press("down")
    shows(box, "pass")
    assert ctrl.cursor == "pass"
    box.press("down")
    assert ctrl.cursor == 2                                        # never Ann or Dan, never Ben himself
    box.press("up")
    box.press("ok")                                                # Ben passes
    assert session.public()["turn"] == 2
    box.press("ok")                                                # Chloé asks Ben...
    box.press("back")                                              # ...no: back to the table
    assert ctrl.mode == "turn"
    box.press("back")
    shows(box, "Back to game")


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_the_asker_keeps_the_first_row_and_the_cursor_the_second(box, session, n):
    """Three rows fit above the hint line; with more seats than that the turn
    still shows whose turn it is: the asker on the first row, the seat the
    cursor is on on the second (never the third, where its bar would touch
    the hint), and every seat comes into sight as the cursor goes round."""
    import io

    from PIL import Image

    from hardware import draw as d

    names = ["Ann", "Ben", "Chloé", "Dan", "Eve", "Fay"][:n]
    start(box, session, names)
    session.submit({"type": "bid", "seat": 0, "amount": 20}, source="web")
    box.flush()
    ctrl = box.app.controller
    for asker in range(n):
        assert session.public()["turn"] == asker
        seen = set()
        for _ in range(n):                         # the other seats, then pass
            box.flush()
            frame = Image.open(io.BytesIO(box.frame_png(1, mirror=False))).convert("L")
            texts = list(box.frame.texts)
            assert texts.index(names[asker]) < min(texts.index(t) for t in names if t in texts and t != names[asker])
            bars = [row for row in range(3) if frame.getpixel((0, d.ROW_Y + row * d.PITCH + 5))]
            if ctrl.cursor == "pass":
                assert bars == [], texts
            else:
                assert names[ctrl.cursor] in texts and bars == [1], (ctrl.cursor, texts, bars)
            seen |= {name for name in names if name in texts}
            box.press("down")
        assert seen == set(names)
        session.submit({"type": "pass", "seat": asker}, source="web")
