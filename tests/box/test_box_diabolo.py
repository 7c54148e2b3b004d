"""Diabolo on the box's mock buttons: scoring colours, a whole game, and the
doubles as secret decisions passed round like a Third Man bid.

As for the Third Man (tests/box/test_box_match.py), secrecy is checked frame by
frame: the same colour is entered twice, once with a seat playing its
double and once keeping it, and every frame from that seat's lock to the
score must be identical, pixel for pixel.
"""

from __future__ import annotations

import json

import pytest

from companion.session import TableSession
from companion.store import Store
from companion.timeline import replay
from hardware import Box
from hardware.testing import FrameLog, box_config

from box_support import mock_factory, shows  # noqa: F401 (fixture)

PLAYERS = ["Ann", "Ben", "Chloé"]
LEDS = [5, 6, 12]
COLOURS = ["red", "blue", "green", "yellow", "purple"]


def make_box(session, mock_factory):
    b = Box(session, box_config(bounce_ms=1, leds=LEDS), mock=True, pin_factory=mock_factory)
    b.start()
    return b


@pytest.fixture
def box(session, mock_factory):
    b = make_box(session, mock_factory)
    yield b
    b.close()


def lit(mock_factory) -> list[int]:
    return [seat for seat, pin in enumerate(LEDS) if mock_factory.pin(pin).state]


def start(box, session, **options) -> None:
    action = {"type": "new_game", "game": "diabolo", "players": PLAYERS}
    if options:
        action["options"] = options
    session.submit(action)
    box.flush()


def press_all(box, keys) -> int:
    for key in keys:
        box.press(key)
    return len(keys)


def choose_colour(box, color: str) -> None:
    ctrl = box.app.controller
    box.press("ok")
    shows(box, "Which colour?")
    colors = ctrl._colors()
    press_all(box, ["down"] * colors.index(color) + ["ok"])
    assert ctrl.color == color


def enter_row(box, heaven: int, hell: int) -> None:
    ctrl = box.app.controller
    shows(box, "the row", "Heaven", "Hell")
    press_all(box, ctrl.field.keys_to(heaven))
    press_all(box, ctrl.field.keys_to(hell))


def decide(box, session, seat: int, play: bool, mock_factory=None) -> None:
    """At the pass screen of ``seat``: take the box, choose, lock."""
    name = PLAYERS[seat]
    shows(box, "Pass the box to", name)
    assert not box.frame.private
    box.press("ok")
    assert box.frame.private, "the choice is one seat's private view"
    shows(box, f"{name}, your double", "Keep it", "Play it \u00d72")
    press_all(box, (["down"] if play else []) + ["ok"])
    assert not box.frame.private
    if mock_factory is not None:
        assert seat in lit(mock_factory), "a locked seat's LED is lit"


def enter_hands(box, hands: list[int]) -> None:
    ctrl = box.app.controller
    for seat, value in enumerate(hands):
        assert (ctrl.mode, ctrl.seat) == ("hands", seat)
        press_all(box, ctrl.field.keys_to(value))


def score_colour(box, session, color, heaven, hell, hands, plays=(), mock_factory=None) -> list[dict]:
    """Score one colour from the table screen; return the actions it should log."""
    p = session.public()
    choose_colour(box, color)
    enter_row(box, heaven, hell)
    actions = []
    if heaven > hell:
        order = [(p["dealer"] + 1 + k) % len(PLAYERS) for k in range(len(PLAYERS))]
        for seat in order:
            if p["doubles_left"][seat]:
                decide(box, session, seat, seat in plays, mock_factory)
                actions.append({"type": "double", "seat": seat, "color": color, "play": seat in plays})
    shows(box, f"{color}: hand sums")
    enter_hands(box, hands)
    actions.append({"type": "score", "color": color, "hands": hands, "heaven": heaven, "hell": hell})
    return actions


def engine(actions) -> dict:
    first = {"type": "new_game", "game": "diabolo", "players": PLAYERS}
    return replay([json.dumps(a) for a in [first] + actions]).public()


def round_plan(number: int) -> list[tuple]:
    """(colour, heaven, hell, hands, seats playing their double) for one round."""
    first = number % 3                               # the seat after the dealer
    other = (first + 1) % 3
    return [
        ("red", 9, 4, [6, 8, 7], {first}),           # positive: the first seat doubles
        ("purple", 3, 8, [5, 2, 9], set()),          # negative: no doubles asked
        ("blue", 6, 6, [4, 4, 4], set()),            # equal: nobody scores
        ("green", 12, 1, [3, 11, 10], {other}),      # positive: the next seat doubles
        ("yellow", 7, 2, [1, 0, 12], set()),         # positive: the third keeps; the others are spent
    ]


def test_a_whole_game_with_secret_doubles(box, session, mock_factory):
    start(box, session)
    shows(box, "Round 1/3", "Ann", "Ben", "Chloé", "\u00d72")
    log = []
    for number in range(1, 4):
        assert session.public()["round"] == number
        for color, heaven, hell, hands, plays in round_plan(number):
            log += score_colour(box, session, color, heaven, hell, hands, plays, mock_factory)
            assert session.timeline.log[1:] == log
            assert session.public() == engine(log)
            assert lit(mock_factory) == [], "the LEDs go off at the score"
            shows(box, f"{color} scored")
            if plays:
                shows(box, "\u00d72", *[PLAYERS[s] for s in sorted(plays)])     # "×2" at each double played
            box.press("ok")
            if session.public()["finished"]:
                break
            if color == "yellow":
                shows(box, f"Round {number} over")
                box.press("ok")
            else:
                shows(box, f"Round {number}/3", color[:2])
    final = session.public()
    assert final["finished"] and final == engine(log)
    best = max(final["scores"])
    shows(box, "Game over", "\u2605 " + str(best))
    box.press("ok")
    shows(box, "New game")


def test_doubles_only_for_positive_colours_and_held_doubles(box, session):
    start(box, session, first_dealer=2)               # Ann plays first
    choose_colour(box, "red")
    enter_row(box, 3, 5)
    shows(box, "red: hand sums")                      # negative: straight to the hands
    enter_hands(box, [1, 2, 3])
    assert session.public()["scores"] == [0, 0, -3]
    box.press("ok")
    actions = score_colour(box, session, "blue", 8, 0, [9, 2, 2], plays={0})
    assert [a["seat"] for a in actions if a["type"] == "double"] == [0, 1, 2]
    assert session.public()["scores"] == [18, 0, -3] and session.public()["doubles_left"] == [False, True, True]
    box.press("ok")
    actions = score_colour(box, session, "green", 8, 0, [0, 2, 2])
    assert [a["seat"] for a in actions if a["type"] == "double"] == [1, 2]     # Ann's double is spent


# -- secrecy ----------------------------------------------------------------------------

def _frames_after_bens_lock(tmp_path, mock_factory, ben_plays: bool):
    """Frames from Ben's lock to the score of red, Ben playing or keeping his double."""
    store = Store(tmp_path / f"ben-{ben_plays}")
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "diabolo", "players": PLAYERS})
    box = make_box(session, mock_factory)
    try:
        log = FrameLog(box)
        choose_colour(box, "red")
        enter_row(box, 9, 2)
        box.press("ok")                                # Ben has the box
        if ben_plays:
            box.press("down")
        assert box.frame.private
        mark = log.mark()
        box.press("ok")                                # Ben locks
        assert lit(mock_factory) == [1]
        decide(box, session, 2, False)                 # Chloé keeps
        decide(box, session, 0, False)                 # Ann keeps
        ctrl = box.app.controller
        for value in (4, 9):
            press_all(box, ctrl.field.keys_to(value))
        press_all(box, ctrl.field.keys_to(3)[:-1])    # Chloé's sum, all but the OK that scores
        frames = log.since(mark)
        box.press("ok")
        assert session.public()["scores"] == [0, 18 if ben_plays else 9, 0]
        return frames
    finally:
        box.close()
        store.close()
        mock_factory.reset()


def test_no_frame_after_a_lock_depends_on_the_decision(tmp_path, mock_factory):
    keep = _frames_after_bens_lock(tmp_path, mock_factory, False)
    play = _frames_after_bens_lock(tmp_path, mock_factory, True)
    assert len(keep) == len(play) > 10
    for i, (a, b) in enumerate(zip(keep, play)):
        assert a.texts == b.texts, f"frame {i} after the lock says different things: {a.texts} / {b.texts}"
        assert a.image.tobytes() == b.image.tobytes(), f"frame {i} after the lock differs in its pixels"
    for frame in play:
        if not frame.private:
            assert not any("Play" in t or "Keep" in t or "\u00d72" in t for t in frame.texts), frame.texts
    assert "Ben \u2713" in " ".join(keep[0].texts) and not keep[0].private


def test_a_phone_decision_closes_the_pick_and_undo_hands_the_box_back(box, session, mock_factory):
    start(box, session)
    choose_colour(box, "red")
    enter_row(box, 9, 2)
    box.press("ok")                                    # Ben starts choosing...
    assert box.frame.private
    session.submit({"type": "double", "seat": 1, "color": "red", "play": True}, source="web")   # ...on his phone
    box.flush()
    assert not box.frame.private, "the pick closes when that seat's decision arrives"
    shows(box, "Ben \u2713", "Pass the box to", "Chloé")
    assert lit(mock_factory) == [1]
    box.press("ok")                                    # Chloé is choosing when someone holds BACK
    box.hold("back")
    assert not box.frame.private
    shows(box, "Undo the last action?")
    box.press("ok")
    shows(box, "Pass the box to", "Ben")
    assert "Ben \u2713" not in " ".join(box.frame.texts)
    assert session.public()["decided"] is None and lit(mock_factory) == []
    box.press("back")                                  # no decision locked: back to the row
    shows(box, "Heaven", "Hell", "positive")


def test_a_colour_started_on_a_phone_is_finished_on_the_box(box, session):
    start(box, session)
    session.submit({"type": "double", "seat": 1, "color": "Rot", "play": False}, source="web")
    box.flush()
    shows(box, "Round 1/3")
    box.press("ok")                                    # the box joins the colour under way
    enter_row(box, 5, 1)
    decide(box, session, 2, True)
    decide(box, session, 0, False)
    enter_hands(box, [1, 1, 4])
    p = session.public()
    assert p["scored"] == ["Rot"] and p["scores"] == [0, 0, 8] and p["doubles_left"] == [True, True, False]
    box.press("ok")
    box.press("ok")
    # Five colours at most: "Rot" and four usual names; "Rot" is scored.
    assert box.app.controller._colors() == ["red", "blue", "green", "yellow"]
    shows(box, "Which colour?", "1/5 \u2713", "red", "blue")
    box.press("up")                                    # the list wraps round to its last colour
    shows(box, "yellow")
    assert "purple" not in box.frame.texts


def test_a_row_tracked_on_the_phones_gives_the_sums(box, session):
    start(box, session)
    plan = [("red", "heaven", 5), ("red", "heaven", 4), ("blue", "hell", 2), ("red", "hell", 1),
            ("blue", "hell", 3), ("red", "heaven", 2), ("blue", "heaven", 1), ("blue", "heaven", 1),
            ("blue", "hell", 1), ("red", "hell", 3)]
    for turn, (color, side, value) in enumerate(plan):        # two rows closed: the play is over
        session.submit({"type": "place", "seat": (1 + turn) % 3, "color": color, "side": side, "value": value},
                       source="web")
    box.flush()
    choose_colour(box, "red")
    shows(box, "Heaven", "11", "Hell", "4")                    # the tracked row: 5+4+2 and 1+3
    box.press("ok")
    box.press("ok")
    for seat in (1, 2, 0):
        decide(box, session, seat, False)
    enter_hands(box, [3, 0, 0])
    assert session.public()["scores"] == [3, 0, 0]


@pytest.mark.parametrize("play", [False, True])
def test_the_mirror_shows_no_double_being_chosen(box, session, play):
    """Issue 13, finding 1 for Diabolo: while Ben moves between "Keep it" and
    "Play it ×2", the public mirror stays on "Ben is choosing…"."""
    start(box, session)
    choose_colour(box, "red")
    enter_row(box, 9, 2)                                  # positive: the doubles come next
    shows(box, "Pass the box to", "Ben")                  # the seat after the dealer (Ann)
    before = (box.mirror.version, box.frame_png(1))
    assert "is choosing\u2026" in box.mirror.texts and "Pass the box to" not in box.mirror.texts
    box.press("ok")
    for key in ("down", "up", "down"):
        box.press(key)
        assert (box.mirror.version, box.frame_png(1)) == before
    press_all(box, (["up"] if not play else []) + ["ok"])
    after = box.mirror.texts
    assert "is choosing\u2026" in after and "Ben \u2713" in " ".join(after)


def test_a_colour_with_decisions_entered_must_score_positive(box, session):
    # Secret-blind: the engine refuses hell or equal for a colour with
    # decisions, whatever they say; the sums screen says so before the hands.
    start(box, session)
    session.submit({"type": "double", "seat": 1, "color": "red", "play": False}, source="web")
    box.flush()
    box.press("ok")                                    # the box joins the colour under way
    ctrl = box.app.controller
    press_all(box, ctrl.field.keys_to(2))              # heaven 2
    keys = ctrl.field.keys_to(5)
    assert keys[-1] == "ok"
    press_all(box, keys[:-1])                          # hell 5, not yet confirmed
    shows(box, "not positive: undo first")
    box.press("ok")
    enter_hands(box, [1, 2, 3])
    assert session.public()["scored"] == [] and session.public()["decided"] == {"color": "red", "seats": [1]}
    shows(box, "red is not positive")                  # the refusal, naming nobody


def test_the_pass_screen_names_every_seat_that_has_decided(box, session):
    """Issue 19: with four seats, the third decision's pass screen showed
    "Li ✓ Ingrid ✓" and dropped Marc-Antoine.  Every decided seat is named
    (abbreviated to fit, never dropped), in play order."""
    players = ["Zoé", "Marc-Antoine", "Li", "Ingrid"]
    session.submit({"type": "new_game", "game": "diabolo", "players": players})
    box.flush()
    for seat in (1, 2, 3):                     # the seats after the dealer decide on phones
        session.submit({"type": "double", "seat": seat, "color": "red", "play": False}, source="web")
    box.flush()
    box.press("ok")                            # the box joins the colour under way: the row first
    ctrl = box.app.controller
    press_all(box, ctrl.field.keys_to(9))
    press_all(box, ctrl.field.keys_to(2))
    assert ctrl.mode == "pass" and ctrl.seat == 0, (ctrl.mode, ctrl.seat)
    marked = [t for t in box.frame.texts if t.endswith(" \u2713")]
    assert len(marked) == 3, box.frame.texts
    assert [t[:2] for t in marked] == ["Ma", "Li", "In"], marked
    assert any("Zoé" in t for t in box.frame.texts)       # whom to pass the box to


# -- colours: an id in the log, a word on the panel (issue 19: phones in their own language) --

def test_a_french_box_stores_a_usual_colour_as_its_id_and_names_it_in_french(session, mock_factory):
    from companion.i18n import set_language

    b = Box(session, box_config(bounce_ms=1, leds=LEDS, language="fr"), mock=True, pin_factory=mock_factory)
    b.start()
    try:
        start(b, session)
        b.press("ok")
        shows(b, "rouge", "bleu")                       # the list in the box's language
        assert "red" not in b.frame.texts
        b.press("ok")
        assert b.app.controller.color == "red"          # the log gets the id
        shows(b, "rouge")
    finally:
        b.close()
        set_language(None)


def test_a_usual_colour_named_in_another_language_is_not_offered_twice(box, session):
    """An older log (or a phone of before) named it "rouge": the box does
    not offer "red" beside it, which would make a sixth colour."""
    start(box, session)
    session.submit({"type": "score", "color": "rouge", "hands": [5, 10, 20], "heaven": 3, "hell": 9},
                   source="web")
    box.flush()
    offered = box.app.controller._colors()
    assert "red" not in offered and "rouge" not in offered      # scored this round
    assert offered == ["blue", "green", "yellow", "purple"]
