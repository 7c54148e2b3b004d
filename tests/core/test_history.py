"""The public rendering of a log: secrets stay hidden until revealed."""

import json

from companion.history import public_lines, public_steps

NEW = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Cat", "Dan"]}


def log(*actions):
    return [json.dumps(a) for a in (NEW, *actions)]


def bid(seat, card):
    return {"type": "bid", "seat": seat, "card": card}


def test_pending_secret_cards_are_redacted_and_the_lead_card_is_not():
    out = public_lines(log(bid(0, 6), bid(2, 3)))
    assert out[1] == bid(0, 6)
    assert out[2] == {"type": "bid", "seat": 2, "card": None}
    assert "3" not in json.dumps(out[2])


def test_revealed_cards_are_shown():
    out = public_lines(log(bid(0, 6), bid(2, 3), bid(1, 8), bid(3, 1)))
    assert out[2:] == [bid(2, 3), bid(1, 8), bid(3, 1)]


def test_a_secret_taken_back_before_the_reveal_is_gone_with_its_undo():
    out = public_lines(log(bid(0, 6), bid(2, 3), {"type": "undo"}, bid(2, 4), bid(1, 8), bid(3, 1)))
    assert out == [NEW, bid(0, 6), bid(2, 4), bid(1, 8), bid(3, 1)]


def test_every_step_carries_the_public_state():
    steps = public_steps(log(bid(0, 6), bid(2, 3)))
    assert [s["n"] for s in steps] == [1, 2, 3]
    assert steps[-1]["state"]["pending"] == {"lead_card": 6, "entered": [0, 2]}


def test_scoreboard_secrets_too():
    lines = [json.dumps({"type": "new_game", "game": "scoreboard", "players": ["A", "B"]}),
             json.dumps({"type": "secret", "seat": 1, "value": 77})]
    assert public_lines(lines)[1] == {"type": "secret", "seat": 1, "value": None}
