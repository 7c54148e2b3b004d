"""Diabolo (rules.md §6, replay.md "diabolo"), rule by rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from companion.errors import GameOver, IllegalActionError, InvalidActionError
from companion.games import diabolo
from companion.timeline import ReplayError, Timeline, replay

PLAYERS = ["Ann", "Ben", "Cat"]
COLOURS = ["blue", "red", "green", "yellow", "purple"]
KEYS = {"game", "players", "scores", "finished", "winner",
        "round", "dealer", "doubles_left", "scored", "decided",
        "colors", "rows", "turn"}     # the last three: extras for screens


def new(players=PLAYERS, **options) -> Timeline:
    t = Timeline()
    action = {"type": "new_game", "game": "diabolo", "players": list(players)}
    if options:
        action["options"] = options
    t.apply(action)
    return t


def score(t, color, hands, doubles=None, heaven=None, hell=None):
    action = {"type": "score", "color": color, "hands": hands}
    for key, value in (("doubles", doubles), ("heaven", heaven), ("hell", hell)):
        if value is not None:
            action[key] = value
    return t.apply(action)


def double(t, seat, color, play):
    return t.apply({"type": "double", "seat": seat, "color": color, "play": play})


def place(t, seat, color, side, value):
    return t.apply({"type": "place", "seat": seat, "color": color, "side": side, "value": value})


def place_in_turn(t, cards):
    """Place ``cards`` ((colour, side, value), ...) each by the seat whose turn it is."""
    for color, side, value in cards:
        place(t, t.state.turn, color, side, value)


# Two closed rows for a 3- or 4-player round: blue positive (15 - 2), red negative (1 - 6).
CLOSE_TWO = [("blue", "heaven", 5), ("blue", "heaven", 5), ("blue", "heaven", 5),
             ("blue", "hell", 1), ("blue", "hell", 1),
             ("red", "heaven", 1), ("red", "hell", 2), ("red", "hell", 2), ("red", "hell", 2),
             ("green", "heaven", 4),
             ("red", "heaven", 1)]      # closes red (5 cards): play ends


def zeros(t):
    return [0] * len(t.players)


def finish_round(t, hands=None):
    """Score the colours of the round not yet scored as equal (nobody scores)."""
    for color in COLOURS:
        if color not in t.state.scored:
            score(t, color, hands or zeros(t), heaven=3, hell=3)


# -- setup ---------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4, 5])
def test_three_to_five_players(n):
    view = new([f"P{i}" for i in range(n)]).public()
    assert view["doubles_left"] == [True] * n and view["scores"] == [0] * n


@pytest.mark.parametrize("n", [2, 6])
def test_other_player_counts_are_refused(n):
    with pytest.raises(InvalidActionError):
        new([f"P{i}" for i in range(n)])


def test_public_state_has_exactly_the_replay_keys():
    t = new()
    assert t.public() == {"game": "diabolo", "players": PLAYERS, "scores": [0, 0, 0], "round": 1, "dealer": 0,
                          "doubles_left": [True, True, True], "scored": [], "decided": None,
                          "colors": [], "rows": [], "turn": 1,
                          "finished": False, "winner": None}
    double(t, 1, "blue", True)
    assert set(t.public()) == KEYS
    json.dumps(t.public())


def test_the_first_dealer_is_an_option_defaulting_to_seat_0():
    assert new().public()["dealer"] == 0
    assert new(first_dealer=2).public()["dealer"] == 2
    with pytest.raises(InvalidActionError):
        new(first_dealer=3)


# -- scoring a colour ----------------------------------------------------------------

def test_heaven_larger_the_highest_hand_sum_scores_it_and_nobody_else():
    t = new()
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    assert t.public()["scores"] == [0, 9, 0]
    assert t.public()["scored"] == ["blue"]


def test_heaven_larger_a_double_doubles_the_top_hand():
    t = new()
    score(t, "blue", [2, 9, 4], doubles=[1], heaven=8, hell=3)
    assert t.public()["scores"] == [0, 18, 0]
    assert t.public()["doubles_left"] == [True, False, True]


def test_a_double_is_spent_even_when_its_player_does_not_score():
    t = new()
    score(t, "blue", [2, 9, 4], doubles=[0, 2], heaven=8, hell=3)
    assert t.public()["scores"] == [0, 9, 0]
    assert t.public()["doubles_left"] == [False, True, False]


def test_hell_larger_the_highest_hand_sum_scores_it_as_negative_points():
    t = new()
    score(t, "red", [3, 3, 7], heaven=2, hell=5)
    assert t.public()["scores"] == [0, 0, -7]


def test_equal_sides_nobody_scores_the_colour_but_it_counts_as_scored():
    t = new()
    score(t, "green", [3, 8, 7], heaven=4, hell=4)
    assert t.public()["scores"] == [0, 0, 0] and t.public()["scored"] == ["green"]


@pytest.mark.parametrize("heaven, hell", [(2, 5), (4, 4)])
def test_doubles_cannot_be_played_on_a_colour_that_is_not_positive(heaven, hell):
    t = new()
    with pytest.raises(IllegalActionError, match="not positive"):
        score(t, "red", [3, 3, 7], doubles=[2], heaven=heaven, hell=hell)
    assert t.public()["scored"] == []


@pytest.mark.parametrize("first_dealer, winner", [(0, 1), (1, 2), (2, 0)])
def test_ties_go_to_the_first_seat_after_the_dealer(first_dealer, winner):
    t = new(first_dealer=first_dealer)
    score(t, "blue", [5, 5, 5], heaven=6, hell=1)
    expected = [0, 0, 0]
    expected[winner] = 5
    assert t.public()["scores"] == expected


def test_the_dealer_comes_last_in_a_tie():
    t = new(["A", "B", "C", "D"], first_dealer=1)
    score(t, "blue", [6, 6, 2, 2], heaven=6, hell=1)   # A and B tie; B deals, so A first
    assert t.public()["scores"] == [6, 0, 0, 0]


def test_ties_in_hell_use_the_same_order():
    t = new(first_dealer=1)
    score(t, "red", [4, 4, 4], heaven=1, hell=6)
    assert t.public()["scores"] == [0, 0, -4]


def test_a_colour_scored_twice_in_a_round_is_an_error():
    t = new()
    score(t, "blue", [1, 2, 3], heaven=3, hell=1)
    with pytest.raises(IllegalActionError, match="blue has already been scored in round 1"):
        score(t, "blue", [1, 2, 3], heaven=3, hell=1)


def test_a_second_double_by_the_same_player_in_a_round_is_an_error():
    t = new()
    score(t, "blue", [2, 9, 4], doubles=[1], heaven=8, hell=3)
    with pytest.raises(IllegalActionError, match="Ben has already played its double in round 1"):
        score(t, "red", [2, 9, 4], doubles=[1], heaven=8, hell=3)
    with pytest.raises(IllegalActionError, match="Ben has already played its double"):
        double(t, 1, "red", False)


def test_a_seat_listed_twice_in_doubles_is_an_error():
    with pytest.raises(IllegalActionError, match="twice"):
        score(new(), "blue", [2, 9, 4], doubles=[1, 1], heaven=8, hell=3)


def test_the_colours_are_the_first_five_names_and_a_sixth_is_an_error():
    t = new()
    for color in COLOURS:
        score(t, color, [0, 0, 0], heaven=1, hell=1)
    t2 = new()
    for color in COLOURS[:4]:
        score(t2, color, [0, 0, 0], heaven=1, hell=1)
    score(t2, "Blue", [0, 0, 0], heaven=1, hell=1)      # names are case-sensitive: a fifth colour
    with pytest.raises(IllegalActionError, match="sixth colour"):
        score(t2, "purple", [0, 0, 0], heaven=1, hell=1)
    with pytest.raises(IllegalActionError, match="sixth colour"):
        double(t2, 0, "purple", True)


def test_a_sixth_colour_is_an_error_in_a_later_round_too():
    t = new()
    finish_round(t)
    with pytest.raises(IllegalActionError, match="sixth colour"):
        score(t, "orange", [0, 0, 0], heaven=1, hell=1)


@pytest.mark.parametrize("hands", [[1, 2], [1, 2, 3, 4], [1, -2, 3], [1, 2, 71], [1, 2.0, 3]])
def test_hands_hold_one_sum_from_0_to_70_per_seat(hands):
    with pytest.raises(InvalidActionError):
        score(new(), "blue", hands, heaven=3, hell=1)


@pytest.mark.parametrize("heaven, hell", [(-1, 0), (16, 0), (0, -2), (3, True)])
def test_heaven_and_hell_are_sums_of_at_most_three_cards(heaven, hell):
    with pytest.raises(InvalidActionError):
        score(new(), "blue", [1, 2, 3], heaven=heaven, hell=hell)


@pytest.mark.parametrize("color", ["", "  ", 3, None])
def test_a_colour_is_a_non_empty_name(color):
    with pytest.raises(InvalidActionError):
        score(new(), color, [1, 2, 3], heaven=3, hell=1)


@pytest.mark.parametrize("missing", ["heaven", "hell"])
def test_in_an_untracked_round_heaven_and_hell_are_required(missing):
    t = new()
    action = {"type": "score", "color": "blue", "hands": [1, 2, 3], "heaven": 3, "hell": 1}
    del action[missing]
    with pytest.raises(IllegalActionError, match="give both heaven and hell"):
        t.apply(action)


# -- rounds and the end of the game --------------------------------------------------

def test_the_round_ends_at_the_fifth_colour_and_the_next_starts_at_once():
    t = new(first_dealer=1)
    score(t, "blue", [2, 9, 4], doubles=[1], heaven=8, hell=3)
    finish_round(t)
    view = t.public()
    assert view["round"] == 2 and view["dealer"] == 2
    assert view["doubles_left"] == [True, True, True] and view["scored"] == []
    assert view["scores"] == [0, 18, 0]
    score(t, "blue", [2, 9, 4], doubles=[1], heaven=8, hell=3)   # colours and doubles are back
    assert view["scores"] == [0, 18, 0] and t.public()["scores"] == [0, 36, 0]


def test_the_dealer_moves_to_the_next_seat_each_round_and_ties_follow_it():
    t = new(first_dealer=2)
    finish_round(t)
    assert t.public()["dealer"] == 0
    score(t, "blue", [5, 5, 5], heaven=6, hell=1)
    assert t.public()["scores"] == [0, 5, 0]       # seat 1 is now after the dealer


def test_as_many_rounds_as_players_then_the_highest_total_wins():
    t = new(["A", "B", "C", "D"])
    score(t, "blue", [1, 2, 3, 4], heaven=5, hell=0)
    for rnd in range(1, 5):
        assert t.public()["round"] == rnd and not t.public()["finished"]
        finish_round(t, [0, 0, 0, 0])
    view = t.public()
    assert view["finished"] is True and view["winner"] == [3]
    # Every key stays as it ended.
    assert view["round"] == 4 and view["dealer"] == 3 and view["scored"] == COLOURS


def test_tied_totals_share_the_win():
    t = new()
    score(t, "blue", [9, 0, 0], heaven=5, hell=0)
    score(t, "red", [0, 9, 0], heaven=5, hell=0)
    for _ in range(3):
        finish_round(t)
    assert t.public()["winner"] == [0, 1]


def test_the_winner_may_have_a_negative_total():
    t = new()
    score(t, "blue", [9, 0, 0], heaven=0, hell=5)
    score(t, "red", [0, 9, 0], heaven=0, hell=5)
    score(t, "green", [0, 0, 1], heaven=0, hell=5)
    for _ in range(3):
        finish_round(t)
    assert t.public()["scores"] == [-9, -9, -1] and t.public()["winner"] == [2]


def test_only_undo_is_allowed_after_the_game_ended():
    t = new()
    for _ in range(3):
        finish_round(t)
    assert t.public()["finished"]
    with pytest.raises(GameOver):
        double(t, 0, "blue", True)
    t.apply({"type": "undo"})
    assert t.public()["finished"] is False and t.public()["scored"] == COLOURS[:4]


# -- secret double decisions -------------------------------------------------------

def test_a_double_decision_is_a_secret_entry():
    t = new()
    pending = t.check({"type": "double", "seat": 0, "color": "blue", "play": False})
    assert pending.step.secret is True
    assert diabolo.GAME.secret_owner(("blue", 2)) == 2


def test_decided_shows_who_has_entered_never_what():
    t = new()
    double(t, 2, "blue", True)
    double(t, 0, "blue", False)
    assert t.public() == {"game": "diabolo", "players": PLAYERS, "scores": [0, 0, 0], "round": 1, "dealer": 0,
                          "doubles_left": [True, True, True], "scored": [],
                          "decided": {"color": "blue", "seats": [0, 2]},
                          "colors": ["blue"], "rows": [], "turn": 1, "finished": False, "winner": None}


def test_a_seat_sees_its_own_pending_decision_only():
    t = new()
    double(t, 2, "blue", True)
    double(t, 0, "blue", False)
    assert t.private(2)["secret"] == {"color": "blue", "play": True}
    assert t.private(0)["secret"] == {"color": "blue", "play": False}
    assert t.private(1)["secret"] is None
    assert {k: v for k, v in t.private(1).items() if k not in ("secret", "seat")} == t.public()


def test_doubles_omitted_the_seats_whose_decisions_say_play_double():
    t = new()
    double(t, 1, "blue", True)
    double(t, 2, "blue", True)
    double(t, 0, "blue", False)
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    view = t.public()
    assert view["scores"] == [0, 18, 0]
    assert view["doubles_left"] == [True, False, False]
    assert view["decided"] is None
    assert t.private(1)["secret"] is None


def test_doubles_omitted_and_nothing_entered_nobody_doubles():
    t = new()
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    assert t.public()["scores"] == [0, 9, 0] and t.public()["doubles_left"] == [True] * 3


def test_doubles_cannot_be_given_for_a_colour_with_entries_whatever_they_list():
    # Secret-blind: the refusal is the same for every subset, the right one included.
    t = new()
    double(t, 1, "blue", True)
    double(t, 0, "blue", False)
    messages = set()
    for wrong in ([], [0], [1], [0, 1], [1, 2], [0, 1, 2]):
        with pytest.raises(IllegalActionError, match="'doubles' cannot be given for blue") as err:
            score(t, "blue", [2, 9, 4], doubles=wrong, heaven=8, hell=3)
        messages.add(str(err.value))
    assert len(messages) == 1
    assert t.public()["decided"] == {"color": "blue", "seats": [0, 1]}
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    assert t.public()["scores"] == [0, 18, 0]


def test_a_colour_with_entries_that_scores_hell_or_equal_is_an_error_whatever_they_say():
    for play in (True, False):
        for heaven, hell in ((2, 5), (4, 4)):
            t = new()
            double(t, 1, "red", play)
            with pytest.raises(IllegalActionError, match="red is not positive") as err:
                score(t, "red", [2, 9, 4], heaven=heaven, hell=hell)
            assert "Ben" not in str(err.value)          # never say whose decision it is
            assert "undo" in str(err.value)
            assert t.public()["decided"] == {"color": "red", "seats": [1]}


def test_a_negative_colour_is_scored_once_its_entries_are_taken_back():
    t = new()
    double(t, 1, "red", False)
    t.apply({"type": "undo"})
    score(t, "red", [2, 9, 4], heaven=2, hell=5)
    assert t.public()["scores"] == [0, -9, 0] and t.public()["doubles_left"] == [True] * 3
    assert t.public()["decided"] is None


def test_a_second_decision_by_a_seat_for_the_same_colour_is_an_error():
    t = new()
    double(t, 1, "blue", False)
    with pytest.raises(IllegalActionError, match="Ben has already entered its double decision for blue"):
        double(t, 1, "blue", True)


def test_a_decision_for_a_colour_already_scored_is_an_error():
    t = new()
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    with pytest.raises(IllegalActionError, match="blue has already been scored"):
        double(t, 0, "blue", True)


def test_one_colour_at_a_time_a_decision_for_another_colour_waits_for_the_pending_score():
    # Our choice: the table scores colour by colour, so decisions for a second
    # colour while the first awaits its score are refused (that also stops one
    # double being staked on two colours at once).
    t = new()
    double(t, 1, "blue", True)
    with pytest.raises(IllegalActionError, match="double decisions for blue await its score"):
        double(t, 0, "red", False)
    with pytest.raises(IllegalActionError, match="score blue before red"):
        score(t, "red", [1, 1, 1], heaven=1, hell=4)
    score(t, "blue", [2, 9, 4], heaven=8, hell=3)
    double(t, 0, "red", False)
    assert t.public()["decided"] == {"color": "red", "seats": [0]}


def test_decision_errors_never_depend_on_the_secret_value():
    # The same refusal, with the same words, whatever the seat decided.
    messages = set()
    for play in (True, False):
        t = new()
        double(t, 1, "blue", play)
        with pytest.raises(IllegalActionError) as err:
            double(t, 1, "blue", not play)
        messages.add(str(err.value))
    assert len(messages) == 1


def test_undo_takes_back_a_decision():
    t = new()
    double(t, 1, "blue", True)
    t.apply({"type": "undo"})
    assert t.public()["decided"] is None
    double(t, 1, "blue", False)


# -- row tracking ----------------------------------------------------------------------

def test_placing_starts_with_the_seat_after_the_dealer_and_follows_play_order():
    t = new(first_dealer=1)
    with pytest.raises(IllegalActionError, match="Cat's turn to place a card, not Ann's"):
        place(t, 0, "blue", "heaven", 3)
    place(t, 2, "blue", "heaven", 3)
    place(t, 0, "blue", "heaven", 3)
    with pytest.raises(IllegalActionError, match="Ben's turn"):
        place(t, 2, "blue", "hell", 3)
    place(t, 1, "blue", "hell", 3)


def test_a_row_holds_at_most_three_cards_on_one_side():
    t = new()
    place_in_turn(t, [("blue", "hell", 1)] * 3)
    with pytest.raises(IllegalActionError, match="hell side of the blue row already holds 3 cards"):
        place(t, t.state.turn, "blue", "hell", 1)
    place_in_turn(t, [("blue", "heaven", 1)])


def test_a_row_is_closed_at_five_cards():
    t = new()
    place_in_turn(t, [("blue", "hell", 1)] * 3 + [("blue", "heaven", 2)] * 2)
    with pytest.raises(IllegalActionError, match="blue row already holds 5 cards"):
        place(t, t.state.turn, "blue", "heaven", 1)


@pytest.mark.parametrize("value, side", [(0, "heaven"), (6, "hell"), (3, "Heaven"), (3, "left")])
def test_a_card_is_a_value_1_to_5_on_heaven_or_hell(value, side):
    with pytest.raises(InvalidActionError):
        place(new(), 1, "blue", side, value)


def test_play_ends_when_two_rows_are_closed():
    t = new()
    place_in_turn(t, CLOSE_TWO)
    with pytest.raises(IllegalActionError, match="play of round 1 has ended"):
        place(t, t.state.turn, "green", "heaven", 1)


def test_with_five_players_play_ends_when_three_rows_are_closed():
    t = new([f"P{i}" for i in range(5)])
    place_in_turn(t, CLOSE_TWO)
    place(t, t.state.turn, "green", "heaven", 1)        # still open: only two rows closed
    place_in_turn(t, [("green", "hell", 1)] * 3)
    with pytest.raises(IllegalActionError, match="has ended"):
        place(t, t.state.turn, "yellow", "heaven", 1)


def test_in_a_tracked_round_a_score_before_the_play_ended_is_an_error():
    t = new()
    place(t, 1, "blue", "heaven", 4)
    with pytest.raises(IllegalActionError, match="has not ended: blue cannot be scored yet"):
        score(t, "blue", [1, 2, 3], heaven=4, hell=0)


def test_heaven_and_hell_omitted_come_from_the_tracked_row():
    t = new()
    place_in_turn(t, CLOSE_TWO)
    score(t, "blue", [1, 8, 3])             # 15 - 2: positive
    score(t, "red", [1, 8, 3])              # 2 - 6: negative
    score(t, "green", [1, 2, 3])            # 4 - 0: positive
    score(t, "yellow", [5, 2, 3])           # untouched: 0 / 0, nobody scores
    assert t.public()["scores"] == [0, 0, 3]


def test_heaven_and_hell_given_must_match_the_tracked_row():
    t = new()
    place_in_turn(t, CLOSE_TWO)
    with pytest.raises(IllegalActionError, match="blue row holds heaven 15 and hell 2, but the score says heaven 14 and hell 2"):
        score(t, "blue", [1, 8, 3], heaven=14, hell=2)
    with pytest.raises(IllegalActionError, match="hell 0"):
        score(t, "yellow", [1, 8, 3], heaven=1, hell=1)  # an untouched row of a tracked round is 0 / 0
    score(t, "blue", [1, 8, 3], heaven=15, hell=2)
    score(t, "red", [1, 8, 3], hell=6)
    assert t.public()["scores"] == [0, 0, 0]


def test_a_place_after_the_scoring_began_is_an_error():
    t = new()
    score(t, "blue", [1, 2, 3], heaven=1, hell=0)
    with pytest.raises(IllegalActionError, match="round 1 is being scored"):
        place(t, 1, "red", "heaven", 1)


def test_a_place_while_double_decisions_await_their_score_is_an_error():
    t = new()
    double(t, 0, "blue", False)
    with pytest.raises(IllegalActionError, match="round 1 is being scored"):
        place(t, 1, "red", "heaven", 1)


def test_a_placed_colour_counts_among_the_five():
    t = new()
    place_in_turn(t, [(c, "heaven", 1) for c in COLOURS])
    with pytest.raises(IllegalActionError, match="sixth colour"):
        place(t, t.state.turn, "orange", "heaven", 1)


def test_in_a_tracked_round_decisions_wait_for_the_end_of_play_and_a_positive_row():
    t = new()
    place(t, 1, "green", "heaven", 4)
    with pytest.raises(IllegalActionError, match="has not ended: doubles are decided at scoring"):
        double(t, 0, "blue", True)
    place_in_turn(t, [card for card in CLOSE_TWO if card[0] != "green"])
    # Refused for the row, whatever the decision would have been.
    for play in (True, False):
        with pytest.raises(IllegalActionError, match="red is not positive"):
            double(t, 0, "red", play)
    double(t, 0, "blue", True)
    score(t, "blue", [9, 8, 3])
    assert t.public()["scores"] == [2 * 9, 0, 0]


def test_rows_are_fresh_each_round():
    t = new()
    place_in_turn(t, CLOSE_TWO)
    for color in COLOURS:
        score(t, color, [0, 0, 0])
    assert t.public()["round"] == 2
    # Untracked again: heaven and hell are required, and placing starts after the new dealer.
    with pytest.raises(IllegalActionError, match="give both"):
        score(t, "blue", [0, 0, 0])
    with pytest.raises(IllegalActionError, match="Cat's turn"):
        place(t, 0, "blue", "heaven", 1)
    place(t, 2, "blue", "heaven", 1)


# -- property: decisions stay hidden until their colour is scored ----------------------

def _public_outputs(t: Timeline, probes) -> list[str]:
    """Everything public: the public view, every seat's view minus its own
    secret, and the error text of each probing action."""
    out = [json.dumps(t.public(), sort_keys=True)]
    for seat in range(len(t.players)):
        view = t.private(seat)
        view.pop("secret")
        out.append(json.dumps(view, sort_keys=True))
    for probe in probes:
        try:
            t.check(probe)
            out.append("ok")
        except IllegalActionError as err:
            out.append(str(err))
    return out


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_double_decisions_stay_hidden_until_their_colour_is_scored(data):
    n = data.draw(st.integers(3, 5), label="players")
    dealer = data.draw(st.integers(0, n - 1), label="dealer")
    players = [f"P{i}" for i in range(n)]
    a, b = new(players, first_dealer=dealer), new(players, first_dealer=dealer)
    # Some colours already scored, some doubles already spent (in public).
    before = data.draw(st.lists(st.tuples(st.lists(st.integers(0, 20), min_size=n, max_size=n),
                                          st.integers(0, 15), st.integers(0, 15), st.sets(st.integers(0, n - 1))),
                                max_size=3), label="scored before")
    for i, (hands, heaven, hell, doublers) in enumerate(before):
        doubles = sorted(s for s in doublers if a.state.doubles_left[s]) if heaven > hell else []
        for t in (a, b):
            score(t, COLOURS[i], hands, doubles=doubles, heaven=heaven, hell=hell)
    color = COLOURS[len(before)]
    free = [s for s in range(n) if a.state.doubles_left[s]]
    seats = data.draw(st.permutations(free), label="entry order")[:data.draw(st.integers(0, len(free)))]
    probes = [{"type": "double", "seat": s, "color": color, "play": True} for s in range(n)]
    probes.append({"type": "double", "seat": 0, "color": COLOURS[4], "play": False})
    # Scores too, now that refusals are secret-blind (every `doubles` subset, both signs).
    for heaven, hell in ((5, 1), (1, 5)):
        probes.append({"type": "score", "color": color, "hands": [1] * n, "heaven": heaven, "hell": hell})
        for mask in range(1 << n):
            probes.append({"type": "score", "color": color, "hands": [1] * n, "heaven": heaven, "hell": hell,
                           "doubles": [s for s in range(n) if mask >> s & 1]})
    assert _public_outputs(a, probes) == _public_outputs(b, probes)
    for seat in seats:
        double(a, seat, color, data.draw(st.booleans()))
        double(b, seat, color, data.draw(st.booleans()))
        assert _public_outputs(a, probes) == _public_outputs(b, probes)
    # The score reveals them: the doubles spent now follow each timeline's own decisions.
    for t in (a, b):
        played = sorted(s for (c, s), play in t.state.hidden.items() if play)
        score(t, color, [1] * n, heaven=5, hell=1)
        assert t.public()["decided"] is None
        assert [s for s in free if not t.public()["doubles_left"][s]] == played
