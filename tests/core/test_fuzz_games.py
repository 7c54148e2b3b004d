"""Hostile and broken input against every game (issue 9): random action
sequences, legal and illegal mixed.

For every game, hypothesis draws sequences of actions, each either
*plausible* (built from the public state, often legal) or *junk* (wrong
types, unknown keys, out-of-range values).  After every action:

* a refused action leaves the log, the public state and every seat's view
  exactly as they were;
* an accepted action leaves a JSON-ready public state with the contract's
  common keys;
* no unrevealed secret reaches the public state: changing the hidden values
  does not change one byte of the public JSON;
* the accepted log replays to the same state.

``COMPANION_FUZZ_EXAMPLES`` sets the number of sequences per game (CI sets
10,000; the default keeps a laptop run short).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from companion.errors import ActionError
from companion.timeline import Timeline, replay

pytestmark = pytest.mark.slow        # minutes at CI's scale: run first (tests/conftest.py)
EXAMPLES = int(os.environ.get("COMPANION_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

PLAYERS = ["Ann", "Ben", "Chloé", "Dan", "Élodie", "Zoë"]
SUITS_CT = ["red", "blue", "black", "green"]
RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
COLOURS = ["red", "blue", "green", "yellow", "black", "pink"]


def junk(rng: random.Random, seats: int) -> dict:
    """Malformed or nonsensical actions of every kind."""
    kind = rng.choice(["add", "bid", "trick", "turn", "hand", "ask", "pass", "last",
                       "place", "double", "score", "deal", "secret", "token", "new_game", "nope", 7, None])
    value = rng.choice([-1, 0, 1, 3, 9, 10, 41, 10**12, 2.5, 3.0, True, None, "3", [], {}, [1, "x"]])
    action = {"type": kind}
    for key in rng.sample(["seat", "card", "points", "winner", "cards", "play", "take", "value",
                           "target", "hit", "dice", "color", "side", "hands", "amount", "delta", "lead", "zz"],
                          rng.randint(0, 4)):
        action[key] = value if rng.random() < 0.5 else rng.randrange(-1, seats + 1)
    if rng.random() < 0.1:
        return rng.choice([[], "undo", 42, {"type": "undo", "extra": 1}])
    return action


def plausible(game: str, t: Timeline, rng: random.Random) -> dict:
    """An action that is often legal in the current state."""
    view = t.public()
    n = len(view["players"])
    seat = rng.randrange(n)
    if rng.random() < 0.04:
        return {"type": "undo"}
    if game == "third-man":
        lead = view["lead"] if view["lead"] is not None else 0
        entered = view["pending"]["entered"]
        if not entered and rng.random() < 0.8:
            seat = lead
        elif rng.random() < 0.8:
            free = [s for s in range(4) if s not in entered]
            seat = rng.choice(free) if free else seat
        hand = view["hands"][seat]
        card = rng.choice(hand) if hand and rng.random() < 0.9 else rng.randint(0, 9)
        return {"type": "bid", "seat": seat, "card": card}
    if game == "scoreboard":
        kind = rng.choice(["add", "add", "token", "secret"])
        if kind == "add":
            return {"type": "add", "seat": seat, "points": rng.randint(-15, 15)}
        if kind == "token":
            return {"type": "token", "seat": seat, "delta": rng.choice([1, 1, -1])}
        return {"type": "secret", "seat": seat, "value": rng.randint(0, 20)}
    if game == "costly-tricks":
        if view["lead"] is None or rng.random() < 0.05:
            return {"type": "deal", "lead": rng.randrange(4)}
        if rng.random() < 0.5:
            return {"type": "trick", "winner": rng.randrange(4), "points": rng.randint(0, 40)}
        return {"type": "trick", "cards": [[rng.choice(SUITS_CT), rng.randint(0, 10)] for _ in range(4)]}
    if game == "fight":
        turn = view["turn"] if view["turn"] is not None else seat
        held = [int(v) for v, c in view["coins"][str(turn) if isinstance(view["coins"], dict) else turn].items() if c] \
            if isinstance(view["coins"], dict) else [int(v) for v, c in view["coins"][turn].items() if c]
        play = rng.choice(held) if held else 1
        table = [int(v) for v, c in view["table"].items() for _ in range(c)]
        take = [v for v in table if rng.random() < 0.3]
        return {"type": "turn", "seat": turn if rng.random() < 0.9 else seat, "play": play, "take": take}
    if game == "sloppy-seconds":
        if rng.random() < 0.15:
            totals = []
            for s in range(n):
                totals.append({x: rng.randint(0, 91) for x in "SHDC"})
            return {"type": "hand", "points": totals}
        return {"type": "trick", "cards": [rng.choice(RANKS) + rng.choice("SHDC") for _ in range(n)]}
    if game == "yenta":
        if view["bidder"] is None:
            return {"type": "bid", "seat": seat, "amount": rng.randint(0, 30)}
        turn = view["turn"] if view["turn"] is not None else seat
        alive = [s for s in range(n) if view["dice"][s] > 0]
        if len(alive) == 1:
            return {"type": "last", "seat": alive[0], "dice": [rng.randint(1, 6) for _ in range(view["dice"][alive[0]])]}
        if rng.random() < 0.1:
            return {"type": "pass", "seat": turn}
        others = [s for s in alive if s != turn] or [seat]
        return {"type": "ask", "seat": turn, "target": rng.choice(others), "value": rng.randint(1, 6),
                "hit": rng.random() < 0.5}
    if game == "diabolo":
        colour = rng.choice(COLOURS[:5] if rng.random() < 0.95 else COLOURS)
        r = rng.random()
        if r < 0.3:
            return {"type": "double", "seat": seat, "color": colour, "play": rng.random() < 0.5}
        if r < 0.5:
            return {"type": "place", "seat": seat, "color": colour, "side": rng.choice(["heaven", "hell"]),
                    "value": rng.randint(1, 5)}
        action = {"type": "score", "color": colour, "hands": [rng.randint(0, 15) for _ in range(n)],
                  "heaven": rng.randint(0, 15), "hell": rng.randint(0, 15)}
        if rng.random() < 0.3:
            action.pop("heaven"), action.pop("hell")
        return action
    raise AssertionError(game)


SETUPS = {
    "third-man": 4, "scoreboard": (1, 8), "costly-tricks": 2, "fight": (2, 6),
    "sloppy-seconds": (3, 4), "yenta": (3, 6), "diabolo": (3, 5),
}


def perturbed(value):
    """A different secret of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < 9 else value - 1
    if isinstance(value, dict):
        return {k: perturbed(v) for k, v in value.items()}
    return ("other", value)


def assert_secrets_do_not_show(t: Timeline):
    state = t.state
    hidden = getattr(state, "hidden", {})
    if not hidden:
        return
    other = dataclasses.replace(state, hidden={k: perturbed(v) for k, v in hidden.items()})
    a = json.dumps(t.game.public(state), sort_keys=True)
    b = json.dumps(t.game.public(other), sort_keys=True)
    assert a == b, "a hidden value changed the public state"


def snapshot(t: Timeline):
    # States are immutable values: the same object means nothing changed,
    # down to the hidden entries that no view shows.
    return len(t.log), len(t.steps), t.state, dict(t.state.hidden)


def run_sequence(game: str, seed: int, length: int):
    rng = random.Random(seed)
    spec = SETUPS[game]
    n = spec if isinstance(spec, int) else rng.randint(*spec)
    t = Timeline()
    t.apply({"type": "new_game", "game": game, "players": PLAYERS[:n]})
    for _ in range(length):
        action = junk(rng, n) if rng.random() < 0.25 else plausible(game, t, rng)
        before = snapshot(t)
        try:
            t.apply(action)
        except ActionError as exc:
            assert str(exc), "a refusal says why"
            after = snapshot(t)
            assert after[:2] == before[:2] and after[2] is before[2] and after[3] == before[3], \
                f"refused {action!r} changed the game"
            continue
        view = t.public()
        json.dumps(view)
        assert {"game", "players", "scores", "finished", "winner"} <= set(view)
        assert all(isinstance(x, int) and not isinstance(x, bool) for x in view["scores"])
        assert_secrets_do_not_show(t)
    assert replay([json.dumps(a) for a in t.log]).public() == t.public()


def make_test(game):
    @FUZZ
    @given(seed=st.integers(0, 2**32 - 1), length=st.integers(1, 40))
    def test(seed, length):
        run_sequence(game, seed, length)
    test.__name__ = f"test_random_sequences_{game.replace('-', '_')}"
    return test


for _game in SETUPS:
    globals()[f"test_random_sequences_{_game.replace('-', '_')}"] = make_test(_game)
