"""Yenta (rules.md §5, replay.md "yenta"), rule by rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from companion.errors import GameOver, IllegalActionError, InvalidActionError, NothingToUndo
from companion.timeline import ReplayError, Timeline, replay

PLAYERS = ["Ann", "Ben", "Cat"]
KEYS = {"game", "players", "scores", "finished", "winner",
        "hand_points", "dice", "turn", "bidder", "bid", "hands"}


def new(players=PLAYERS, **options) -> Timeline:
    t = Timeline()
    action = {"type": "new_game", "game": "yenta", "players": list(players)}
    if options:
        action["options"] = options
    t.apply(action)
    return t


def bid(t, seat, amount):
    return t.apply({"type": "bid", "seat": seat, "amount": amount})


def ask(t, seat, target, value, hit):
    return t.apply({"type": "ask", "seat": seat, "target": target, "value": value, "hit": hit})


def pass_(t, seat):
    return t.apply({"type": "pass", "seat": seat})


def last(t, seat, dice):
    return t.apply({"type": "last", "seat": seat, "dice": dice})


def sweep(t, asker, target, values, last_seat, last_dice):
    """A quick hand for three players: ``asker`` pairs five dice with ``target``,
    then ``last_seat`` (the only one left with dice) shows ``last_dice``."""
    for v in values:
        ask(t, asker, target, v, True)
    return last(t, last_seat, last_dice)


# -- setup ---------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_three_to_six_players_with_five_dice_each(n):
    view = new([f"P{i}" for i in range(n)]).public()
    assert view["dice"] == [5] * n
    assert view["scores"] == [0] * n and view["hand_points"] == [0] * n


@pytest.mark.parametrize("n", [2, 7])
def test_other_player_counts_are_refused(n):
    with pytest.raises(InvalidActionError):
        new([f"P{i}" for i in range(n)])


def test_public_state_has_exactly_the_replay_keys_and_is_json():
    t = new()
    assert set(t.public()) == KEYS
    assert t.public() == {"game": "yenta", "players": PLAYERS, "scores": [0, 0, 0], "hand_points": [0, 0, 0],
                          "dice": [5, 5, 5], "turn": None, "bidder": None, "bid": None, "hands": [],
                          "finished": False, "winner": None}
    bid(t, 1, 4)
    ask(t, 1, 0, 3, False)
    assert set(t.public()) == KEYS
    json.dumps(t.public())
    assert t.private(2) == {**t.public(), "seat": 2}


def test_target_defaults_to_100_and_is_an_option():
    assert new().state.target == 100
    assert new(target=30).state.target == 30
    with pytest.raises(InvalidActionError):
        new(target=0)
    with pytest.raises(InvalidActionError):
        new(goal=50)


# -- the open auction -------------------------------------------------------------

def test_the_winning_bid_is_recorded_and_that_seat_plays_first():
    t = new()
    bid(t, 2, 12)
    view = t.public()
    assert (view["bidder"], view["bid"], view["turn"]) == (2, 12, 2)


def test_any_seat_may_win_the_auction_and_a_bid_of_zero_is_allowed():
    t = new()
    bid(t, 1, 0)
    assert t.public()["bid"] == 0


@pytest.mark.parametrize("amount", [-1, 2.0, True, "5"])
def test_a_bid_is_a_whole_number_of_at_least_zero(amount):
    with pytest.raises(InvalidActionError):
        bid(new(), 0, amount)


def test_a_second_bid_in_a_hand_is_an_error():
    t = new()
    bid(t, 0, 5)
    with pytest.raises(IllegalActionError, match="second bid"):
        bid(t, 1, 8)


@pytest.mark.parametrize("action", [
    {"type": "ask", "seat": 0, "target": 1, "value": 3, "hit": True},
    {"type": "pass", "seat": 0},
    {"type": "last", "seat": 0, "dice": [1, 2, 3, 4, 5]},
])
def test_play_before_the_bid_is_an_error(action):
    t = new()
    with pytest.raises(IllegalActionError, match="no bid yet"):
        t.apply(action)


# -- asking ------------------------------------------------------------------------

def test_asking_out_of_turn_is_an_error():
    t = new()
    bid(t, 0, 5)
    with pytest.raises(IllegalActionError, match="Ann's turn, not Ben's"):
        ask(t, 1, 0, 3, True)
    with pytest.raises(IllegalActionError, match="Ann's turn"):
        pass_(t, 2)


def test_asking_oneself_is_an_error():
    t = new()
    bid(t, 0, 5)
    with pytest.raises(IllegalActionError, match="cannot ask itself"):
        ask(t, 0, 0, 3, True)


def test_asking_a_player_without_dice_is_an_error():
    t = new(["A", "B", "C", "D"])
    bid(t, 0, 5)
    for _ in range(5):
        ask(t, 0, 1, 2, True)          # A and B pair all their dice
    assert t.public()["dice"] == [0, 0, 5, 5] and t.public()["turn"] == 2
    with pytest.raises(IllegalActionError, match="B has no dice left"):
        ask(t, 2, 1, 4, True)
    with pytest.raises(IllegalActionError, match="A has no dice left"):
        ask(t, 2, 0, 4, False)


@pytest.mark.parametrize("value", [0, 7, -1, 3.0, True])
def test_the_value_asked_is_1_to_6(value):
    t = new()
    bid(t, 0, 5)
    with pytest.raises(InvalidActionError):
        ask(t, 0, 1, value, True)


def test_hit_must_be_true_or_false():
    t = new()
    bid(t, 0, 5)
    with pytest.raises(InvalidActionError):
        ask(t, 0, 1, 3, 1)


def test_a_hit_removes_one_die_from_each_scores_twice_the_value_and_the_asker_goes_on():
    t = new()
    bid(t, 0, 5)
    ask(t, 0, 2, 6, True)
    view = t.public()
    assert view["dice"] == [4, 5, 4]
    assert view["hand_points"] == [12, 0, 0]
    assert view["turn"] == 0
    assert t.state.paired == 2 and t.state.discarded == (0, 0, 0)


def test_a_miss_discards_the_askers_die_and_passes_the_turn():
    t = new()
    bid(t, 1, 5)
    ask(t, 1, 0, 4, False)
    view = t.public()
    assert view["dice"] == [5, 4, 5] and view["hand_points"] == [0, 0, 0]
    assert view["turn"] == 2
    assert t.state.discarded == (0, 1, 0)


def test_the_turn_wraps_around_the_table():
    t = new()
    bid(t, 2, 5)
    ask(t, 2, 1, 4, False)
    assert t.public()["turn"] == 0


def test_a_pass_does_not_discard_and_passes_the_turn():
    t = new()
    bid(t, 0, 5)
    pass_(t, 0)
    view = t.public()
    assert view["dice"] == [5, 5, 5] and view["turn"] == 1


def test_seats_without_dice_are_skipped_on_a_miss_and_a_pass():
    t = new(["A", "B", "C", "D"])
    bid(t, 0, 5)
    for _ in range(4):
        ask(t, 0, 1, 1, True)          # A 1 die, B 1 die
    ask(t, 0, 2, 1, False)             # A discards its last die -> B
    assert t.public()["dice"] == [0, 1, 5, 5] and t.public()["turn"] == 1
    ask(t, 1, 2, 3, True)              # B pairs its last die -> C
    assert t.public()["dice"] == [0, 0, 4, 5] and t.public()["turn"] == 2
    pass_(t, 2)
    assert t.public()["turn"] == 3
    pass_(t, 3)
    assert t.public()["turn"] == 2      # A and B are skipped


def test_a_hit_with_the_askers_last_die_passes_the_turn_to_the_next_seat_with_dice():
    t = new(["A", "B", "C", "D"])
    bid(t, 1, 5)
    for _ in range(5):
        ask(t, 1, 3, 2, True)
    # B used its last die; C is next and still has dice.
    assert t.public()["dice"] == [5, 0, 5, 0] and t.public()["turn"] == 2


# -- the end of a hand ----------------------------------------------------------------

def _only_cat_left():
    t = new()
    bid(t, 0, 10)
    for _ in range(5):
        ask(t, 0, 1, 3, True)
    return t


def test_when_one_seat_alone_has_dice_the_hand_waits_for_its_last_dice():
    t = _only_cat_left()
    view = t.public()
    assert view["dice"] == [0, 0, 5] and view["turn"] == 2 and view["hands"] == []
    with pytest.raises(IllegalActionError, match="only Cat still has dice"):
        ask(t, 2, 0, 4, True)
    with pytest.raises(IllegalActionError, match="only Cat still has dice"):
        pass_(t, 2)


def test_last_by_another_seat_is_an_error():
    t = _only_cat_left()
    with pytest.raises(IllegalActionError, match="only Cat shows its last dice"):
        last(t, 0, [])


def test_last_while_two_seats_have_dice_is_an_error():
    t = new()
    bid(t, 0, 10)
    ask(t, 0, 1, 3, True)
    with pytest.raises(IllegalActionError, match="3 seats still have dice"):
        last(t, 0, [1, 2, 3, 4])


@pytest.mark.parametrize("dice", [[1, 2, 3, 4], [1, 2, 3, 4, 5, 6], []])
def test_the_last_dice_must_match_the_die_count(dice):
    t = _only_cat_left()
    with pytest.raises(IllegalActionError, match="Cat has 5 dice left"):
        last(t, 2, dice)


@pytest.mark.parametrize("dice", [[0, 1, 1, 1, 1], [7, 1, 1, 1, 1], ["1", 1, 1, 1, 1]])
def test_the_last_dice_are_values_1_to_6(dice):
    with pytest.raises(InvalidActionError):
        last(_only_cat_left(), 2, dice)


def test_the_last_seat_adds_its_dice_values_and_the_hand_is_settled():
    t = _only_cat_left()
    last(t, 2, [6, 6, 5, 1, 2])
    view = t.public()
    assert view["hands"] == [{"bidder": 0, "bid": 10, "points": [30, 0, 20], "delta": [30, 0, 20]}]
    assert view["scores"] == [30, 0, 20]


def test_after_a_hand_dice_points_bidder_bid_and_turn_are_reset():
    t = _only_cat_left()
    last(t, 2, [1, 1, 1, 1, 1])
    view = t.public()
    assert view["dice"] == [5, 5, 5] and view["hand_points"] == [0, 0, 0]
    assert (view["bidder"], view["bid"], view["turn"]) == (None, None, None)
    bid(t, 2, 7)                        # the next hand opens with a new auction
    assert (t.public()["bidder"], t.public()["turn"]) == (2, 2)


def _nobody_left():
    """Cat pairs twice with Ann and Ben, then misses its last die; Ann and Ben
    (three dice each) pair the rest together."""
    t = new()
    bid(t, 2, 4)
    ask(t, 2, 0, 1, True)
    ask(t, 2, 0, 1, True)
    ask(t, 2, 1, 1, True)
    ask(t, 2, 1, 1, True)
    ask(t, 2, 0, 5, False)
    assert t.public()["dice"] == [3, 3, 0] and t.public()["turn"] == 0
    ask(t, 0, 1, 2, True)
    ask(t, 0, 1, 2, True)
    return t


def test_a_hit_that_leaves_nobody_with_dice_ends_the_hand_at_once():
    t = _nobody_left()
    ask(t, 0, 1, 6, True)
    view = t.public()
    assert view["hands"] == [{"bidder": 2, "bid": 4, "points": [20, 0, 8], "delta": [20, 0, 8]}]
    assert view["dice"] == [5, 5, 5] and view["turn"] is None


# -- bid settlement ----------------------------------------------------------------

def test_a_bid_made_scores_twice_the_bid_when_that_is_larger():
    t = replay([
        '{"type": "new_game", "game": "yenta", "players": ["Ann", "Ben", "Cat"]}',
        '{"type": "bid", "seat": 1, "amount": 10}',
        '{"type": "ask", "seat": 1, "target": 2, "value": 3, "hit": true}',
        '{"type": "ask", "seat": 1, "target": 2, "value": 6, "hit": true}',
        '{"type": "ask", "seat": 1, "target": 0, "value": 2, "hit": false}',
        '{"type": "ask", "seat": 2, "target": 0, "value": 5, "hit": true}',
        '{"type": "ask", "seat": 2, "target": 1, "value": 2, "hit": false}',
        '{"type": "ask", "seat": 0, "target": 1, "value": 4, "hit": true}',
        '{"type": "ask", "seat": 0, "target": 1, "value": 4, "hit": true}',
        '{"type": "ask", "seat": 0, "target": 2, "value": 4, "hit": true}',
        '{"type": "last", "seat": 0, "dice": [1]}',
    ])
    assert t.public()["hands"][0]["delta"][1] == 20      # 18 points on a bid of 10


def test_a_bid_made_scores_the_hand_points_when_they_are_larger():
    t = _only_cat_left()
    last(t, 2, [1, 1, 1, 1, 1])
    assert t.public()["hands"][0]["delta"] == [30, 0, 5]   # 30 points on a bid of 10


def test_a_bid_made_exactly_scores_twice_the_bid():
    t = new()
    bid(t, 0, 10)
    sweep(t, 0, 1, [1, 1, 1, 1, 1], 2, [1, 1, 1, 1, 1])
    assert t.public()["hands"][0]["delta"] == [20, 0, 5]


def test_a_bid_missed_scores_nothing_and_loses_the_bid_while_others_score_their_points():
    t = new()
    bid(t, 1, 31)
    sweep(t, 1, 0, [3, 3, 3, 3, 3], 2, [4, 4, 4, 4, 4])
    view = t.public()
    assert view["hands"][0] == {"bidder": 1, "bid": 31, "points": [0, 30, 20], "delta": [0, -31, 20]}
    assert view["scores"] == [0, -31, 20]                    # totals may go negative


def test_totals_accumulate_over_hands():
    t = new()
    bid(t, 1, 31)
    sweep(t, 1, 0, [3] * 5, 2, [4] * 5)
    bid(t, 0, 0)
    sweep(t, 0, 1, [1] * 5, 2, [2] * 5)
    assert t.public()["scores"] == [10, -31, 30]
    assert len(t.public()["hands"]) == 2


# -- the end of the game ----------------------------------------------------------

def test_the_game_ends_after_a_hand_leaving_someone_alone_at_the_top_at_or_above_the_target():
    t = new(target=25)
    bid(t, 0, 10)
    sweep(t, 0, 1, [3] * 5, 2, [6, 6, 5, 1, 2])
    view = t.public()
    assert view["scores"] == [30, 0, 20]
    assert view["finished"] is True and view["winner"] == [0]


def test_at_the_end_every_key_stays_but_turn_becomes_null():
    t = new(target=25)
    bid(t, 0, 10)
    sweep(t, 0, 1, [3] * 5, 2, [6, 6, 5, 1, 2])
    view = t.public()
    assert view["dice"] == [0, 0, 5]            # the last dice stay with their owner
    assert view["hand_points"] == [30, 0, 20]
    assert (view["bidder"], view["bid"], view["turn"]) == (0, 10, None)


def test_a_tie_at_the_top_keeps_the_game_going():
    t = new(target=10)
    bid(t, 0, 0)
    sweep(t, 0, 1, [1] * 5, 2, [2] * 5)
    assert t.public()["scores"] == [10, 0, 10]
    assert t.public()["finished"] is False and t.public()["winner"] is None
    bid(t, 1, 0)
    sweep(t, 1, 2, [1] * 5, 0, [1] * 5)
    assert t.public()["scores"] == [15, 10, 10]
    assert t.public()["winner"] == [0]


def test_the_highest_total_wins_even_if_others_passed_the_target_too():
    t = new(target=10)
    bid(t, 0, 0)
    sweep(t, 0, 1, [2] * 5, 2, [3] * 5)
    assert t.public()["scores"] == [20, 0, 15] and t.public()["winner"] == [0]


def test_below_the_target_the_game_goes_on():
    t = new()
    bid(t, 0, 0)
    sweep(t, 0, 1, [6] * 5, 2, [6] * 5)
    assert t.public()["scores"] == [60, 0, 30] and t.public()["finished"] is False


def test_only_undo_is_allowed_after_the_game_ended():
    t = new(target=25)
    bid(t, 0, 10)
    sweep(t, 0, 1, [3] * 5, 2, [6, 6, 5, 1, 2])
    with pytest.raises(GameOver):
        bid(t, 1, 3)
    t.apply({"type": "undo"})
    assert t.public()["dice"] == [0, 0, 5] and t.public()["finished"] is False


def test_undo_takes_back_the_latest_action():
    t = new()
    bid(t, 0, 5)
    before = t.public()
    ask(t, 0, 1, 4, False)
    t.apply({"type": "undo"})
    assert t.public() == before
    t.apply({"type": "undo"})
    with pytest.raises(NothingToUndo):
        t.apply({"type": "undo"})


def test_a_refused_action_leaves_the_state_unchanged():
    t = new()
    bid(t, 0, 5)
    before = t.public()
    with pytest.raises(IllegalActionError):
        ask(t, 1, 0, 2, True)
    assert t.public() == before


def test_a_replay_error_names_the_line():
    lines = [json.dumps({"type": "new_game", "game": "yenta", "players": PLAYERS}),
             json.dumps({"type": "bid", "seat": 0, "amount": 3}),
             json.dumps({"type": "bid", "seat": 1, "amount": 4})]
    with pytest.raises(ReplayError) as err:
        replay(lines)
    assert err.value.line == 3


# -- property: dice are conserved ------------------------------------------------------

def _legal_action(draw, state):
    """One legal action for ``state``, drawn by hypothesis."""
    n = len(state.players)
    if state.bidder is None:
        return {"type": "bid", "seat": draw(st.integers(0, n - 1)), "amount": draw(st.integers(0, 40))}
    holders = [s for s in range(n) if state.dice[s] > 0]
    if len(holders) == 1:
        seat = holders[0]
        return {"type": "last", "seat": seat,
                "dice": draw(st.lists(st.integers(1, 6), min_size=state.dice[seat], max_size=state.dice[seat]))}
    seat = state.turn
    if draw(st.integers(0, 9)) == 0:
        return {"type": "pass", "seat": seat}
    target = draw(st.sampled_from([s for s in holders if s != seat]))
    return {"type": "ask", "seat": seat, "target": target, "value": draw(st.integers(1, 6)), "hit": draw(st.booleans())}


@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(3, 6), st.integers(20, 100))
def test_dice_are_conserved_through_any_legal_play(data, n, steps):
    t = new([f"P{i}" for i in range(n)], target=60)
    for _ in range(steps):
        state = t.state
        assert sum(state.dice) + state.paired + sum(state.discarded) == 5 * n
        view = t.public()
        assert set(view) == KEYS and json.loads(json.dumps(view)) == view
        assert sum(view["scores"]) == sum(sum(h["delta"]) for h in view["hands"])
        if view["finished"]:
            assert view["turn"] is None
            break
        if view["turn"] is not None:
            assert view["dice"][view["turn"]] > 0            # the seat to play holds dice
        if data.draw(st.integers(0, 19)) == 0 and len(t.steps) > 1:
            t.apply({"type": "undo"})
            continue
        t.apply(_legal_action(data.draw, state))
