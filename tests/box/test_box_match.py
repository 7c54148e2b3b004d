"""A whole Third Man match on the box's mock buttons, and the secrecy of bids.

Everything goes through the mock pins (``box.press`` / ``box.hold``), the
real store and table session, and the real Third Man engine.
"""

from __future__ import annotations

import itertools
import re
import time

import pytest

from companion.games.third_man import score_bid
from companion.session import TableSession
from companion.store import Store
from hardware import Box
from hardware.testing import FrameLog, box_config

from box_support import counting_box, mock_factory  # noqa: F401 (fixture)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]
LEDS = [5, 6, 12, 13]
BUZZER = 16


@pytest.fixture
def box(session, mock_factory):
    b = counting_box(session, mock_factory, leds=LEDS, buzzer=BUZZER)
    yield b
    b.close()


def shows(box, *words) -> None:
    drawn = " ".join(box.frame.texts)
    missing = [w for w in words if w not in drawn]
    assert not missing, f"frame {box.frame_version} lacks {missing}; it shows: {' | '.join(box.frame.texts)}"


def lit(mock_factory) -> list[int]:
    return [seat for seat, pin in enumerate(LEDS) if mock_factory.pin(pin).state]


def moves_to(hand: list[int], card: int) -> list[str]:
    """The fewest presses from the first card of ``hand`` to ``card`` (the cursor wraps)."""
    i = hand.index(card)
    return ["up"] * i if i <= len(hand) - i else ["down"] * (len(hand) - i)


def fast_plan(p: dict) -> list[int]:
    """Cards (seat order) that push some score furthest: rounds end in a few bids."""
    best = None
    for cards in itertools.product(*p["hands"]):
        points = score_bid(cards)
        if points is None:
            continue
        reach = max(abs(s + g) for s, g in zip(p["scores"], points))
        if best is None or reach > best[0]:
            best = (reach, cards)
    return list(best[1])


def enter_bid(box, session, cards: list[int], mock_factory=None) -> int:
    """Enter one bid from the score track; return the presses it took."""
    start = box.presses
    p = session.public()
    lead = p["lead"]
    shows(box, f"Round {p['round']}")
    box.press("ok")
    shows(box, f"{PLAYERS[lead]} leads: show a card")
    for key in moves_to(p["hands"][lead], cards[lead]):
        box.press(key)
    box.press("ok")
    for step in range(1, 4):
        seat = (lead + step) % 4
        shows(box, "Pass the box to", PLAYERS[seat], f"{PLAYERS[lead]} shows {cards[lead]}")
        assert not box.frame.private
        box.press("ok")
        assert box.frame.private, "the pick screen is one seat's private view"
        shows(box, f"{PLAYERS[seat]}, your secret card")
        for key in moves_to(session.private(seat)["hand"], cards[seat]):
            box.press(key)
        box.press("ok")
        if step < 3:
            shows(box, f"{PLAYERS[seat]} \u2713")
            if mock_factory is not None:
                assert seat in lit(mock_factory), "a locked seat's LED is lit"
    return box.presses - start


def test_a_whole_third_man_match_from_the_menu(box, session, mock_factory):
    # Menu → New game → The Third Man → Start (defaults: 3 tokens, Ann leads)
    shows(box, "Game companion")
    for key, screen in [("ok", "New game"), ("ok", "The Third Man"), ("ok", "Start"), ("ok", "Round 1 · bid 1")]:
        box.press(key)
        shows(box, screen)
    assert session.public()["players"] == PLAYERS

    bids = 0
    annulled_once = False
    buzzer_pin = mock_factory.pin(BUZZER)
    while not session.public()["finished"]:
        p = session.public()
        if p["round"] == 2 and p["bids"] == 0 and not annulled_once:
            cards = [p["hands"][p["lead"]][0]] * 4            # four alike: annulled
        else:
            cards = fast_plan(p)
        presses = enter_bid(box, session, cards, mock_factory)
        bids += 1
        after = session.public()
        assert after["last"]["cards"] == cards
        points = after["last"]["points"]
        if after["last"]["annulled"]:
            annulled_once = True
            shows(box, "Annulled: bid again")
            assert after["lead"] == p["lead"] and after["bids"] == p["bids"]
        else:
            shows(box, "Revealed!", *[f"{c}" for c in cards])
            for seat in range(4):
                sign = "+" if points[seat] > 0 else ("\u2212" if points[seat] < 0 else "")
                shows(box, f"{sign}{abs(points[seat])}")
        assert lit(mock_factory) == [], "LEDs go off at the reveal"
        assert presses >= 8
        box.press("ok")                                        # dismiss the reveal
        if len(after["rounds"]) > len(p["rounds"]):
            winner = PLAYERS[after["rounds"][-1]["token"]]
            shows(box, f"Round {len(after['rounds'])} over", "Token for", winner)
            box.press("ok")
        if not after["finished"]:
            shows(box, f"Round {after['round']} · bid {after['bids'] + 1}")
        assert bids < 40, "the match should have ended"

    final = session.public()
    winner = PLAYERS[final["winner"][0]]
    shows(box, "Match over", f"{winner} wins!")
    assert final["tokens"][final["winner"][0]] == 3
    assert annulled_once
    assert any(state.state for state in buzzer_pin.states), "the buzzer chirped"
    record = session.store.games()[0]
    assert record.finished and record.game == "third-man"
    box.press("ok")
    shows(box, "New game")                                     # the menu, for the next match


def test_presses_per_bid_are_eight_plus_the_moves(box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box.flush()
    cards = [0, 1, 9, 2]        # moves from the lowest card: 0, 1, 1 (wraps down), 2
    assert enter_bid(box, session, cards) == 8 + 0 + 1 + 1 + 2


# -- secrecy ----------------------------------------------------------------------------

def _frames_after_bens_lock(tmp_path, mock_factory, ben_card: int):
    """Frames drawn from Ben's lock until just before the last lock, when
    Ann leads 5, Ben picks ``ben_card``, Chloé 7 and Dan 2."""
    store = Store(tmp_path / f"ben-{ben_card}")
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box = Box(session, box_config(), mock=True, pin_factory=mock_factory)
    try:
        box.start()
        log = FrameLog(box)
        box.press("ok")
        for key in moves_to(list(range(10)), 5):
            box.press(key)
        box.press("ok")
        box.press("ok")                                        # Ben has the box
        for key in moves_to(list(range(10)), ben_card):
            box.press(key)
        assert box.frame.private and str(ben_card) in box.frame.texts   # Ben sees his own pick
        mark = log.mark()
        box.press("ok")                                        # Ben locks
        box.press("ok")                                        # Chloé has the box
        for key in moves_to(list(range(10)), 7):
            box.press(key)
        box.press("ok")                                        # Chloé locks
        box.press("ok")                                        # Dan has the box
        for key in moves_to(list(range(10)), 2):
            box.press(key)
        frames = log.since(mark)
        box.press("ok")                                        # Dan locks: the reveal
        assert session.public()["last"]["cards"] == [5, ben_card, 7, 2]
        return frames
    finally:
        box.close()
        store.close()
        mock_factory.reset()


def test_no_frame_after_a_lock_depends_on_the_locked_card(tmp_path, mock_factory):
    """Run the same bid twice with Ben choosing 1, then 8: from Ben's lock to
    the reveal every frame must be identical, pixel for pixel (the next
    seat's cursor does not start where Ben's was, nothing shows his card)."""
    low = _frames_after_bens_lock(tmp_path, mock_factory, 1)
    high = _frames_after_bens_lock(tmp_path, mock_factory, 8)
    assert len(low) == len(high) > 5
    for i, (a, b) in enumerate(zip(low, high)):
        assert a.texts == b.texts, f"frame {i} after the lock says different things: {a.texts} / {b.texts}"
        assert a.image.tobytes() == b.image.tobytes(), f"frame {i} after the lock differs in its pixels"
    # And the shared (non-private) frames draw no number but the bid's (1)
    # and the lead's open card (5): never Ben's 8, nor Chloé's 7.
    for frame in high:
        if not frame.private:
            assert set(re.findall(r"\d+", " ".join(frame.texts))) <= {"1", "5"}, frame.texts
    first = low[0]
    assert not first.private and "Ben \u2713" in " ".join(first.texts)


def test_a_phone_entry_moves_the_box_on(box, session, mock_factory):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box.flush()
    session.submit({"type": "bid", "seat": 0, "card": 4}, source="web")       # the lead, from a phone
    box.flush()
    shows(box, "Ann shows 4", "Pass the box to", "Ben")
    session.submit({"type": "bid", "seat": 1, "card": 6}, source="web")       # Ben, while the box waits for him
    box.flush()
    shows(box, "Ben \u2713", "Pass the box to", "Chloé")
    assert lit(mock_factory) == [1]
    box.press("ok")                                                           # Chloé starts choosing...
    assert box.frame.private
    session.submit({"type": "bid", "seat": 2, "card": 3}, source="web")       # ...but enters on her phone
    box.flush()
    assert not box.frame.private, "the picker must close when that seat's card arrives"
    shows(box, "Ben \u2713", "Chloé \u2713", "Pass the box to", "Dan")


def test_undo_during_entry_hands_the_box_back(box, session, mock_factory):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    session.submit({"type": "bid", "seat": 0, "card": 4})
    session.submit({"type": "bid", "seat": 1, "card": 6})
    box.flush()
    shows(box, "Ben \u2713", "Chloé")
    box.press("ok")                                   # Chloé is choosing when someone holds BACK
    box.hold("back")
    assert not box.frame.private
    shows(box, "Undo the last action?")
    box.press("ok")
    shows(box, "Pass the box to", "Ben")
    assert "Ben \u2713" not in " ".join(box.frame.texts)
    assert session.public()["pending"]["entered"] == [0]
    assert lit(mock_factory) == []


def test_the_reveal_goes_by_itself(box, session, monkeypatch):
    import hardware.ui.third_man as tm

    monkeypatch.setattr(tm, "REVEAL_S", 0.05)
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    for seat, card in [(0, 4), (1, 6), (2, 3), (3, 9)]:
        session.submit({"type": "bid", "seat": seat, "card": card}, source="web")
    box.flush()
    shows(box, "Revealed!")
    time.sleep(0.15)
    box.flush()
    shows(box, "Round 1 · bid 2")


def test_changes_queued_behind_a_busy_screen_are_followed_in_order(box, session):
    """Phones may enter a whole bid while the box is still drawing: each
    change is followed with its own state, so the round's end is not skipped."""
    import threading

    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box.flush()
    gate = threading.Event()
    unsubscribe = box.subscribe_frames(lambda version: gate.wait(5))   # the worker stalls on its next frame
    for cards in ([9, 8, 7, 0], [8, 9, 6, 1]):                        # Zoë... Chloé reaches +26: round over
        lead = session.public()["lead"]
        for step in range(4):
            seat = (lead + step) % 4
            session.submit({"type": "bid", "seat": seat, "card": cards[seat]}, source="web")
    assert session.public()["rounds"], "the plan should end round 1"
    unsubscribe()
    gate.set()
    box.flush()
    shows(box, "Revealed!", "Round 1")
    box.press("ok")
    shows(box, "Round 1 over", "Token for")
