"""What the box's screens say, read like the rulebook: why a round ended and
its final scores, what an undo takes back (a secret by its seat only), and
what OK and BACK do next.

Everything runs on the mock box (its buttons are gpiozero mock pins) with the
real table session, store and game engines; what a frame says is read from
the texts it records, and two frames are compared pixel for pixel.
"""

from __future__ import annotations

import itertools

import pytest

from companion.games.third_man import score_bid
from companion.session import TableSession
from companion.store import Store
from hardware import Box
from hardware import draw as d
from hardware.testing import FrameLog, box_config
from hardware.ui.third_man import round_reason

from box_support import make_box, mock_factory, press_all  # noqa: F401 (fixtures)

FOUR = ["Ann", "Ben", "Chloé", "Dan"]


def shows(box, *words) -> None:
    """The current frame says each of ``words`` (a wrapped text is drawn line by line)."""
    drawn = " ".join(box.frame.texts)
    missing = [w for w in words if w not in drawn]
    assert not missing, f"frame {box.frame_version} lacks {missing}; it shows: {' | '.join(box.frame.texts)}"


def reach_plus_20(p: dict) -> tuple[int, ...]:
    """Cards (seat order) that push the top score furthest up."""
    best = None
    for cards in itertools.product(*p["hands"]):
        points = score_bid(cards)
        if points is not None:
            top = max(s + g for s, g in zip(p["scores"], points))
            if best is None or top > best[0]:
                best = (top, cards)
    return best[1]


def play_bid(session, cards) -> None:
    lead = session.public()["lead"]
    for k in range(4):
        seat = (lead + k) % 4
        session.submit({"type": "bid", "seat": seat, "card": cards[seat]}, source="web")


# -- round over ---------------------------------------------------------------------

def test_a_round_ended_by_plus_20_says_why_and_shows_the_final_scores(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR})
    box = make_box(box_config(bounce_ms=1))
    while not session.public()["rounds"]:
        play_bid(session, reach_plus_20(session.public()))
    box.flush()
    shows(box, "Revealed!")
    box.press("ok")                                     # the reveal → the round's result
    result = session.public()["rounds"][0]
    taker = FOUR[result["token"]]
    top = max(range(4), key=lambda s: result["scores"][s])
    assert result["scores"][top] >= 20
    shows(box, "Round 1 over", f"Token for {taker}")
    texts = box.frame.texts
    assert texts[1] == "+20", texts                     # why: the header's right end (the seat's score says who)
    for seat, name in enumerate(FOUR):                  # every seat's final score of the round
        assert d.number(result["scores"][seat]) in texts, (name, texts)
    assert session.public()["scores"] == [0, 0, 0, 0], "the next round has started: the screen keeps the last"
    shows(box, "OK: go on · BACK: menu")
    box.press("ok")
    shows(box, "Round 2 · bid 1", "leads", "OK: next bid · BACK: menu")


def test_a_long_name_is_shortened_never_the_words_around_it(make_box, session):
    players = ["Maximiliana Ostrowska", "Bartholomew Fairweather", "Chloé", "Dan"]
    session.submit({"type": "new_game", "game": "third-man", "players": players})
    box = make_box(box_config(bounce_ms=1))
    while not session.public()["rounds"]:
        play_bid(session, reach_plus_20(session.public()))
    box.press("ok")
    top = max(range(4), key=lambda s: session.public()["rounds"][0]["scores"][s])
    line = next(t for t in box.frame.texts if t.startswith("Token for "))
    assert d.text_width(line, d.STRONG) <= d.WIDTH - 2 * d.MARGIN
    assert players[top] == "Bartholomew Fairweather"            # (the seat these cards push to +20)
    # Abbreviated with a full stop, distinct among the table's names (base.short_name).
    name = line[len("Token for "):]
    assert name.startswith("Bartho") and name.endswith(".") and name != players[top], line
    # Every seat's name is in its column, none dropped.
    assert sum(1 for t in box.frame.texts if t[:3] in ("Max", "Bar", "Chl", "Dan")) == 4, box.frame.texts


@pytest.mark.parametrize("scores, reason", [
    ([21, -3, 4, 0], "Ann reached +20"),                # +20 or more ends the round
    ([20, -20, 0, 0], "Ann reached +20"),               # both at once: the +20 is said
    ([3, -22, 10, 9], "Ben reached \u221220"),          # −20 or less ends it too
    ([12, -5, 19, 7], "9 bids played"),                 # else only the 9th scored bid does
])
def test_why_a_round_ended(scores, reason):
    assert round_reason(FOUR, scores) == reason


def test_the_match_over_screen_shows_the_winner_and_everyones_tokens(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR, "options": {"tokens_to_win": 1}})
    box = make_box(box_config(bounce_ms=1))
    while not session.public()["finished"]:
        play_bid(session, reach_plus_20(session.public()))
    box.flush()
    box.press("ok")                                     # reveal → the round
    box.press("ok")                                     # the round → the match
    p = session.public()
    winner = FOUR[p["winner"][0]]
    shows(box, "Match over", f"{winner} wins!", "OK or BACK: menu", *FOUR)
    assert [f"{n}\u25cf" for n in p["tokens"]] == [t for t in box.frame.texts if t in ("0\u25cf", "1\u25cf")]


# -- the undo prompt ----------------------------------------------------------------

def undo_frame(tmp_path, mock_factory, name: str, actions: list[dict]):
    """The undo prompt's frame (image bytes and texts) after ``actions``,
    on a fresh session and box of its own."""
    session = TableSession(Store(tmp_path / name))
    for action in actions:
        session.submit(action, source="buttons" if action.get("type") != "new_game" else "")
    box = Box(session, box_config(bounce_ms=1), mock=True, pin_factory=mock_factory)
    box.start()
    try:
        assert box.hold("back")
        box.flush()
        return box.frame.image.tobytes(), list(box.frame.texts)
    finally:
        box.close()
        session.store.close()


@pytest.mark.parametrize("game, players, before, secret, values, says", [
    ("third-man", FOUR, [{"type": "bid", "seat": 0, "card": 5}], "card", (3, 7), "Ben's locked card"),
    ("scoreboard", FOUR, [], "value", (4, 9), "Ann's secret number"),
    ("diabolo", ["Ann", "Ben", "Chloé"], [], "play", (True, False), "Ben's double decision"),
])
def test_the_undo_of_a_secret_names_the_seat_never_the_value(tmp_path, mock_factory, game, players, before,
                                                             secret, values, says):
    seat = 0 if game == "scoreboard" else 1
    frames = []
    for i, value in enumerate(values):
        entry = {"type": {"third-man": "bid", "scoreboard": "secret", "diabolo": "double"}[game], "seat": seat,
                 secret: value}
        if game == "diabolo":
            entry["color"] = "red"
        actions = [{"type": "new_game", "game": game, "players": players}] + before + [entry]
        frames.append(undo_frame(tmp_path, mock_factory, f"s{i}", actions))
    (image_a, texts_a), (image_b, texts_b) = frames
    assert says in " ".join(texts_a) and "Undo the last action?" in texts_a
    assert image_a == image_b, "the undo prompt depends on the secret's value"
    assert texts_a == texts_b
    if game != "diabolo":
        assert not any(str(v) in t for v in values for t in texts_a), texts_a


def test_the_undo_of_the_leads_open_card_names_it(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR})
    session.submit({"type": "bid", "seat": 0, "card": 5}, source="web")
    box = make_box(box_config(bounce_ms=1))
    box.hold("back")
    shows(box, "Undo the last action?", "Ann's bid of 5", "OK: undo · BACK: keep it")
    box.press("ok")
    assert session.public()["pending"]["lead_card"] is None


def test_the_undo_of_the_last_secret_card_says_it_takes_the_reveal_back(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR})
    play_bid(session, (5, 1, 9, 2))
    box = make_box(box_config(bounce_ms=1))
    box.hold("back")
    shows(box, "Dan's locked card and the reveal")


def test_the_undo_prompt_follows_a_phone_entry_made_while_it_is_open(make_box, session):
    session.submit({"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Ben"]})
    session.submit({"type": "deal", "lead": 3}, source="web")
    box = make_box(box_config(bounce_ms=1))
    box.hold("back")
    shows(box, "the deal: Ben's dummy leads")
    session.submit({"type": "trick", "winner": 2, "points": 25}, source="web")
    box.flush()
    shows(box, "the trick won by Ann's dummy (25)")      # what OK would now undo
    box.press("ok")
    assert session.public()["tricks"] == [0, 0]


def test_the_undo_prompt_with_nothing_to_undo_says_so(make_box, session):
    session.submit({"type": "new_game", "game": "yenta", "players": FOUR})
    box = make_box(box_config(bounce_ms=1))
    box.hold("back")
    shows(box, "Nothing to undo yet")


def test_the_session_never_hands_a_secret_value_to_the_undo_description(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR})
    session.submit({"type": "bid", "seat": 0, "card": 5}, source="web")
    session.submit({"type": "bid", "seat": 1, "card": 8}, source="web")
    box = make_box(box_config(bounce_ms=1))
    step = box.app.last_step()
    assert step.secret and step.action == {"type": "bid", "seat": 1}


# -- what OK and BACK do ------------------------------------------------------------

def test_the_score_track_explains_the_lead_marker_and_the_buttons(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": FOUR})
    box = make_box(box_config(bounce_ms=1))
    shows(box, "leads", "OK: next bid · BACK: menu")
    box.press("ok")
    shows(box, "Ann leads: show a card", "OK: show · BACK: track")
    box.press("back")
    shows(box, "OK: next bid · BACK: menu")
    box.press("back")
    shows(box, "Back to game")                          # BACK: the menu, as the hint says


def test_back_on_a_hand_result_goes_on_and_opens_the_menu(make_box, session):
    session.submit({"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Ben"]})
    box = make_box(box_config(bounce_ms=1))
    session.submit({"type": "deal", "lead": 0}, source="web")
    for winner, points in [(0, 30), (2, 24), (1, 10), (3, 12), (0, 28), (1, 15), (2, 26), (0, 20), (3, 14),
                           (2, 18), (1, 23)]:
        session.submit({"type": "trick", "winner": winner, "points": points}, source="web")
    box.flush()
    shows(box, "Hand 1 over", "Token for Ann", "6 tr.", "+26", "5 tr.", "\u221226", "OK: go on · BACK: menu")
    box.press("back")
    shows(box, "Back to game")
    box.press("back")
    shows(box, "Who has the red 0?", "OK: deal · BACK: menu")


def test_yenta_with_six_seats_keeps_its_hint_line_and_scrolls_to_the_cursor(make_box, session):
    six = ["Ann", "Ben", "Chloé", "Dan", "Élodie", "François"]
    session.submit({"type": "new_game", "game": "yenta", "players": six})
    session.submit({"type": "bid", "seat": 0, "amount": 20}, source="web")
    box = make_box(box_config(bounce_ms=1))
    shows(box, "Ann bid 20", "OK: ask · BACK: menu", "Ann", "Ben")
    for _ in range(4):
        box.press("down")                               # Ben → Chloé → Dan → Élodie → François
    shows(box, "François", "OK: ask · BACK: menu", "Ann")   # the asker stays on the first row
    assert "Ben" not in box.frame.texts, "three rows: the seats before the cursor scrolled away"
    box.press("down")
    shows(box, "OK: pass · BACK: menu")


# -- five or six seats: the hint line stays, UP/DOWN reach every seat --------------

def has_hint(frame) -> None:
    """The frame draws a hint line naming OK and BACK."""
    hints = [t for t in frame.texts if "OK" in t and "BACK" in t]
    assert hints, f"frame {frame.version} has no hint line: {' | '.join(frame.texts)}"


def seats_reached(box, names, log, keys=("down",) * 6 + ("up",) * 6) -> set:
    """Press ``keys`` (scrolling the rows); every frame keeps its hint line;
    the names drawn on the way."""
    mark = log.mark()
    for key in keys:
        box.press(key)
    frames = [box.frame] + log.since(mark)
    for frame in frames:
        has_hint(frame)
    return {name for frame in frames for name in names if name in frame.texts}


FIVE = ["Ann", "Ben", "Chloé", "Dan", "Élodie"]


def test_diabolo_with_five_seats_keeps_its_hint_line_and_every_seat_in_reach(make_box, session):
    session.submit({"type": "new_game", "game": "diabolo", "players": FIVE})
    box = make_box(box_config(bounce_ms=1))
    log = FrameLog(box)
    ctrl = box.app.controller
    shows(box, "Round 1/5", "OK: score · BACK: menu")
    # Every seat at once, two a row (a name abbreviated to fit its cell, "Élod.").
    assert all(any(t.startswith(n[:4]) for t in box.frame.texts) for n in FIVE), box.frame.texts
    # A negative colour on the buttons: the hand sums scroll with the seat entered.
    box.press("ok")
    box.press("ok")                                      # red
    press_all(box, ctrl.field.keys_to(2))
    mark = log.mark()
    press_all(box, ctrl.field.keys_to(9))
    assert ctrl.mode == "hands"
    for seat in range(4):
        press_all(box, ctrl.field.keys_to(10))
    shows(box, "Élodie")
    press_all(box, ["up", "up"])                         # a field's moves, not a scroll
    assert ctrl.seat == 4
    for frame in log.since(mark):
        has_hint(frame)
    # The round's other colours from a phone; its result, then the game's end.
    press_all(box, ctrl.field.keys_to(ctrl.field.value))
    for color in ["blue", "green", "yellow", "purple"]:
        session.submit({"type": "score", "color": color, "hands": [10] * 5, "heaven": 2, "hell": 9}, source="web")
    box.flush()
    box.press("ok")                                      # the last colour's result → the round's
    shows(box, "Round 1 over", "OK: go on · BACK: menu")
    assert set(FIVE) <= set(box.frame.texts), "every seat's total at once"
    assert seats_reached(box, FIVE, log) == set(FIVE)
    assert ctrl.mode == "round_end", "UP/DOWN do not dismiss the result"
    for r in range(2, 6):
        for color in ["red", "blue", "green", "yellow", "purple"]:
            session.submit({"type": "score", "color": color, "hands": [10] * 5, "heaven": 2, "hell": 9},
                           source="web")
    box.flush()
    box.press("ok")
    shows(box, "Game over", "OK or BACK: menu")
    assert all(any(t.startswith(n[:4]) for t in box.frame.texts) for n in FIVE), box.frame.texts
    box.press("ok")
    shows(box, "New game")


def play_yenta_hand(session) -> None:
    """A Yenta hand from a phone: Ann bids 20 and asks Ben for pairs, then each
    seat asks the next one with dice (a miss every third entry), the last
    seat with dice gives them."""
    session.submit({"type": "bid", "seat": 0, "amount": 20}, source="web")
    for entry in range(300):
        p = session.public()
        if p["bidder"] is None or p["finished"]:
            return
        turn, n = p["turn"], len(p["players"])
        if sum(1 for k in p["dice"] if k) == 1:
            session.submit({"type": "last", "seat": turn, "dice": [6] * p["dice"][turn]}, source="web")
            continue
        target = next((turn + k) % n for k in range(1, n) if p["dice"][(turn + k) % n])
        session.submit({"type": "ask", "seat": turn, "target": target, "value": 6 if turn else 5,
                        "hit": turn == 0 or entry % 3 == 0}, source="web")
    raise AssertionError("the hand never ended")


def test_yenta_results_with_six_seats_keep_their_hint_line_and_every_seat_in_reach(make_box, session):
    six = ["Ann", "Ben", "Chloé", "Dan", "Élodie", "François"]
    session.submit({"type": "new_game", "game": "yenta", "players": six, "options": {"target": 100}})
    box = make_box(box_config(bounce_ms=1))
    log = FrameLog(box)
    ctrl = box.app.controller
    play_yenta_hand(session)
    box.flush()
    shows(box, "Ann made 20", "OK: go on · BACK: menu")
    assert "François" not in box.frame.texts, "three rows above the hint line"
    assert seats_reached(box, six, log) == set(six)
    assert ctrl.mode == "hand_end", "UP/DOWN scroll the result, they do not dismiss it"
    box.press("ok")
    shows(box, "Hand 2: the winning bid")
    while not session.public()["finished"]:
        play_yenta_hand(session)
    box.flush()
    shows(box, "wins!", "OK or BACK: menu")
    assert seats_reached(box, six, log) == set(six)
    box.press("ok")
    shows(box, "New game")


# -- the scoreboard with many seats -----------------------------------------------

EIGHT = ["Ann", "Ben", "Chloé", "Dan", "Élodie", "François", "Gaëlle", "Hugo"]


def test_scoreboard_with_eight_seats_reaches_every_seat_and_reveals_them_all_at_once(make_box, session):
    from hardware.layout import problems

    session.submit({"type": "new_game", "game": "scoreboard", "players": EIGHT})
    box = make_box(box_config(bounce_ms=1))
    log = FrameLog(box)
    # Two seats a row, three rows: the first six at once; DOWN scrolls on
    # to the last two and the Secret round row, ▼/▲ in the header.
    assert all(any(t.startswith(n[:4]) for t in box.frame.texts) for n in EIGHT[:6]), box.frame.texts
    assert "\u25bc" in box.frame.texts[1], box.frame.texts
    ctrl = box.app.controller

    def layout_problems():
        c = d.Canvas()                      # the controller's frame again, on a recording canvas
        ctrl.draw(c, session.public())
        return problems(c)
    assert layout_problems() == []
    start = log.mark()
    for _ in range(8):
        box.press("down")
        assert layout_problems() == [], box.frame.texts
    shown = " ".join(t for frame in log.since(start) for t in frame.texts)
    assert all(n[:4] in shown for n in EIGHT), shown
    assert "Secret round \u25b8" in box.frame.texts
    for seat, value in enumerate(range(8)):
        session.submit({"type": "secret", "seat": seat, "value": value}, source="web")
    box.flush()
    assert ctrl.mode == "reveal"
    assert all(any(t.startswith(n[:4]) for t in box.frame.texts) for n in EIGHT), "every seat's number at once"
    assert layout_problems() == [], box.frame.texts
