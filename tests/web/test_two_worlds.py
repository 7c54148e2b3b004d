"""The two-worlds test (issue 13): secrecy as a property of the whole appliance.

The same table is played twice — on the box's buttons (gpiozero mock pins),
on seat pages (seat tokens) and with the PIN, with undo of secret entries and
claims made early and late — in two worlds that differ only in the secret
values and the PIN (:mod:`two_worlds`).  Everything a phone can get with no
credential or with the PIN is compared byte for byte after every step: the
mirror, the state, every published event, the pages, history, exports, CSV,
stats and every refusal.  Scripted tables replay the findings of issue 13;
random tables (``COMPANION_TWO_WORLDS_TABLES`` per game, 200 in CI) look for
the leaks nobody thought of.
"""

from __future__ import annotations

import os
import random

import pytest

from two_worlds import WITH_PIN, WITH_WRONG_PIN, NO_CREDENTIAL, Pair, fixed_guard_clock, fixed_tokens

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
DIABOLO = {"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Chloé"]}
SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}
pytestmark = pytest.mark.slow        # minutes at CI's scale: run first (tests/conftest.py)
TABLES = int(os.environ.get("COMPANION_TWO_WORLDS_TABLES", "12"))


@pytest.fixture
def pair(tmp_path, monkeypatch):
    fixed_tokens(monkeypatch)
    fixed_guard_clock(monkeypatch)
    with Pair(tmp_path) as p:
        yield p


def keep_claims_on_the_box(pair, claims):
    """Each claim is shown on the box: OK keeps it."""
    for _ in range(claims):
        pair.press("ok")


# -- scripted tables: the findings, as they were found --------------------------------------

def test_third_man_on_the_buttons_on_phones_and_with_the_pin(pair):
    """Findings 1, 3 and 4 in one evening: seats claimed early, Ben picks on
    the buttons (the mirror must not follow his cursor), Chloé on her phone,
    Dan's card through the PIN; all three taken back and entered again; the
    exports after the take-back; a new game ends the claims."""
    pair.act(THIRD_MAN)
    pair.claim(1, "Ben's phone")                       # claimed before anything is entered
    pair.claim(2, "Chloé's phone")
    pair.claim(3)                                      # someone holds Dan's seat; Dan enters with the PIN
    keep_claims_on_the_box(pair, 3)
    pair.look_around()
    pair.press("ok")                                   # the track → Ann's hand
    pair.press("ok")                                   # Ann shows her lowest card (public)
    pair.press("ok")                                   # Ben has the box: his hand
    assert pair.a.box.frame.private
    for key_a, key_b in (("up", "down"), ("up", "down"), ("up", "up"), ("down", "up")):
        pair.press(key_a, key_b)                       # A's Ben and B's Ben go different ways
    pair.press("ok")                                   # Ben locks his card
    assert pair._differing() == {1}, "the two Bens should have locked different cards"
    pair.seat_views()                                  # Ben's early claim reads no box entry
    pair.act({"type": "bid", "seat": 3, "card": 1}, {"type": "bid", "seat": 3, "card": 8}, WITH_PIN)
    pair.look_around()                                 # full export refused while secrets are pending
    pair.seat_views()
    pair.act({"type": "undo"})                         # Dan's entry taken back
    hand = pair.a.session.public()["hands"][2]
    pair.act({"type": "bid", "seat": 2, "card": hand[0]}, {"type": "bid", "seat": 2, "card": hand[-1]},
             "token", seat=2)
    pair.look_around()
    for _ in range(2):
        pair.act({"type": "undo"})                     # Chloé's, then Ben's entry taken back
    assert pair._differing() == set()
    pair.look_around()                                 # the full export now: none of the values
    pair.act({"type": "bid", "seat": 1, "card": 3})    # the same cards in both worlds: revealed alike
    pair.act({"type": "bid", "seat": 2, "card": 4}, credential="token", seat=2)
    pair.act({"type": "bid", "seat": 3, "card": 6})
    assert not pair.parted and pair.a.session.public()["last"]["cards"][1:] == [3, 4, 6]
    pair.look_around()
    pair.act(THIRD_MAN)                                # play again: the claims end with the game
    pair.seat_views()
    pair.read("GET", "/api/seats/1/view", "token", seat=1)
    pair.claim(1)                                      # a late claim
    pair.look_around()
    assert pair.compared > 200 and not pair.parted


def test_diabolo_refusals_answer_no_decision(pair):
    """Finding 2: an outsider with the PIN tries every 'doubles' subset."""
    pair.act(DIABOLO)
    pair.claim(0)
    keep_claims_on_the_box(pair, 1)
    pair.act({"type": "double", "seat": 0, "color": "red", "play": True},
             {"type": "double", "seat": 0, "color": "red", "play": False}, "token", seat=0)
    pair.act({"type": "double", "seat": 1, "color": "red", "play": False},
             {"type": "double", "seat": 1, "color": "red", "play": True}, WITH_PIN)
    for subset in ([], [0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]):
        pair.act({"type": "score", "color": "red", "hands": [0, 0, 0], "doubles": subset, "heaven": 0, "hell": 0})
        pair.act({"type": "score", "color": "red", "hands": [3, 1, 2], "doubles": subset, "heaven": 9, "hell": 2})
    pair.act({"type": "score", "color": "red", "hands": [3, 1, 2], "heaven": 1, "hell": 9})
    pair.act({"type": "double", "seat": 0, "color": "red", "play": True}, credential=WITH_PIN)
    pair.look_around()
    pair.act({"type": "undo"})
    pair.act({"type": "undo"})                         # both decisions taken back: gone
    pair.look_around()
    assert pair.compared > 50 and not pair.parted


def test_scoreboard_secret_rounds_and_wrong_pins(pair):
    pair.act(SCOREBOARD)
    pair.claim(0)
    keep_claims_on_the_box(pair, 1)
    pair.act({"type": "add", "seat": 2, "points": 4})
    pair.act({"type": "secret", "seat": 0, "value": 987654321}, {"type": "secret", "seat": 0, "value": 12},
             "token", seat=0)
    pair.act({"type": "secret", "seat": 1, "value": 5}, {"type": "secret", "seat": 1, "value": 77}, WITH_PIN)
    pair.act({"type": "secret", "seat": 1, "value": 5}, credential=WITH_WRONG_PIN)
    pair.act({"type": "secret", "seat": 0, "value": 1}, credential=NO_CREDENTIAL)
    pair.look_around()
    pair.act({"type": "undo"})
    pair.look_around()
    assert pair.compared > 50 and not pair.parted


def test_a_game_over_with_a_secret_round_under_way_goes_to_bg_stats_alike(pair):
    """The BG Stats link, the plays files and the panel's game-page code of a
    game that ended while a secret round was under way: the same bytes."""
    pair.act({**SCOREBOARD, "options": {"target": 10}})
    pair.act({"type": "secret", "seat": 0, "value": 5}, {"type": "secret", "seat": 0, "value": 99}, WITH_PIN)
    pair.act({"type": "add", "seat": 1, "points": 12})           # the game ends; seat 0's number stays unseen
    assert pair.a.session.public()["finished"] and pair._differing() == {0}
    pair.look_around()
    from hardware.ui.menus import MainMenu
    pair.press("back")                                            # the menu, then its Game page row
    rows = [label for label, _right in MainMenu(pair.a.box.app).rows()]
    for _ in range(rows.index("Game page (QR code)")):
        pair.press("down")
    pair.press("ok")
    assert type(pair.a.box.app.layers[-1]).__name__ == "GamePageScreen"
    pair.look_around()
    assert pair.compared > 50 and not pair.parted


def test_the_turn_clock_says_the_same_in_both_worlds(pair):
    """The clock's routes, its events and the pages that show it, around a
    secret round whose values differ: times are public, secrets stay out."""
    now = [100.0]
    for world in (pair.a, pair.b):
        world.session.clock.now = lambda: now[0]
    pair.act(SCOREBOARD)
    pair.claim(0)
    pair.claim(1)
    keep_claims_on_the_box(pair, 2)
    pair.post("/api/clock", {"mode": "fischer", "bank_s": 300, "extra_s": 5})
    pair.act({"type": "secret", "seat": 0, "value": 3}, {"type": "secret", "seat": 0, "value": 999}, "token", seat=0)
    now[0] += 17
    pair.post("/api/clock/end-turn", credential="token", seat=1)      # not Ben's turn: the same refusal
    pair.post("/api/clock/end-turn", credential="token", seat=0)
    pair.post("/api/clock/end-turn", credential=WITH_WRONG_PIN)
    pair.post("/api/clock", {"mode": "sudden", "bank_s": 0}, WITH_PIN)
    now[0] += 4
    pair.post("/api/clock/pause", credential="token", seat=1)
    pair.read("GET", "/api/clock")
    pair.look_around()
    pair.act({"type": "undo"})                                         # the handover comes back
    pair.read("GET", "/api/clock")
    pair.look_around()
    assert pair.compared > 50 and not pair.parted
    assert pair.a.session.public()["clock"]["turn"] == 0


# -- random tables ----------------------------------------------------------------------------

KEYS = ("up", "down", "ok", "back")


def third_man_moves(public, rng):
    """(weight, action in A, action in B, credential, seat) candidates from the public state."""
    moves = []
    lead, hands = public.get("lead"), public.get("hands") or [[]] * 4
    pending = public.get("pending") or {}
    if lead is not None and pending.get("lead_card") is None and hands[lead]:
        card = rng.choice(hands[lead])
        moves.append((3, {"type": "bid", "seat": lead, "card": card}, None, WITH_PIN, None))
    for seat in range(4):
        if not hands[seat]:
            continue
        a, b = rng.choice(hands[seat]), rng.choice(hands[seat])
        moves.append((4, {"type": "bid", "seat": seat, "card": a}, {"type": "bid", "seat": seat, "card": b},
                      rng.choice((WITH_PIN, "token", "token", WITH_WRONG_PIN)), seat))
    moves.append((1, {"type": "bid", "seat": rng.randrange(5), "card": rng.randrange(-1, 11)}, None,
                  WITH_PIN, None))
    return moves


def diabolo_moves(public, rng):
    moves = []
    colors = ("red", "blue")
    for seat in range(3):
        play = rng.random() < 0.5
        other = play if rng.random() < 0.4 else not play
        color = rng.choice(colors)
        moves.append((4, {"type": "double", "seat": seat, "color": color, "play": play},
                      {"type": "double", "seat": seat, "color": color, "play": other},
                      rng.choice((WITH_PIN, "token", "token")), seat))
    score = {"type": "score", "color": rng.choice(colors), "hands": [rng.randrange(6) for _ in range(3)],
             "heaven": rng.randrange(12), "hell": rng.randrange(12)}
    if rng.random() < 0.4:
        score["doubles"] = sorted(rng.sample(range(3), rng.randrange(4)))
    moves.append((3, score, None, WITH_PIN, None))
    return moves


def scoreboard_moves(public, rng):
    moves = [(2, {"type": "add", "seat": rng.randrange(3), "points": rng.randrange(-5, 10)}, None, WITH_PIN, None),
             (1, {"type": "token", "seat": rng.randrange(3), "delta": rng.choice((-1, 1))}, None, WITH_PIN, None)]
    for seat in range(3):
        a = rng.randrange(100)
        b = a if rng.random() < 0.4 else rng.randrange(100)
        moves.append((3, {"type": "secret", "seat": seat, "value": a}, {"type": "secret", "seat": seat, "value": b},
                      rng.choice((WITH_PIN, "token")), seat))
    return moves


GAMES = {"third-man": (THIRD_MAN, third_man_moves), "diabolo": (DIABOLO, diabolo_moves),
         "scoreboard": (SCOREBOARD, scoreboard_moves)}


def play_random_table(pair, new_game, moves_of, rng, steps=40):
    pair.act(new_game)
    seats = len(new_game["players"])
    for step in range(steps):
        if pair.parted:
            return
        roll = rng.random()
        if roll < 0.5:
            weights, *_ = zip(*(candidates := moves_of(pair.a.session.public(), rng)))
            _, action_a, action_b, credential, seat = rng.choices(candidates, weights)[0]
            pair.act(action_a, action_b, credential, seat)
        elif roll < 0.62:
            pair.act({"type": "undo"}, credential=rng.choice((WITH_PIN, WITH_PIN, "token")), seat=0)
        elif roll < 0.82:
            key = rng.choice(KEYS)
            private = pair.a.box.frame.private
            other = {"up": "down", "down": "up"}.get(key, key) if private and rng.random() < 0.5 else key
            pair.press(key, other)
        elif roll < 0.9:
            seat = rng.randrange(seats)
            if seat in pair.a.tokens and rng.random() < 0.5:
                pair.release(seat, rng.choice(("token", WITH_PIN)))
            else:
                pair.claim(seat, rng.choice((None, "phone")))
        elif roll < 0.93:
            pair.act(dict(new_game, keep_claims=True) if rng.random() < 0.5 else new_game)
        elif roll < 0.96:
            pair.seat_views()
        else:
            pair.look_around()
    if not pair.parted:
        pair.look_around()


@pytest.mark.parametrize("game", sorted(GAMES))
def test_random_tables_show_a_phone_nothing_of_the_secrets(game, tmp_path, monkeypatch):
    fixed_tokens(monkeypatch)
    fixed_guard_clock(monkeypatch)
    new_game, moves_of = GAMES[game]
    compared = parted = 0
    for table in range(TABLES):
        rng = random.Random(f"{game}-{table}")
        with Pair(tmp_path / f"t{table}") as pair:
            play_random_table(pair, new_game, moves_of, rng)
            compared += pair.compared
            parted += pair.parted
    # The property was exercised, not skipped: outputs compared, and most
    # tables ran to their end before any differing secret was revealed.
    assert compared > 100 * TABLES
    assert parted < TABLES
