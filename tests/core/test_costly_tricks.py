"""Costly Tricks (rules.md §2), rule by rule, plus the seed's worked trick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from companion.errors import ActionError, GameOver, IllegalActionError, InvalidActionError
from companion.games.tricks_judge import DISCARD, FOLLOW, LEAD, TRUMP, judge
from companion.timeline import ReplayError, Timeline, replay

COLOURS = ("red", "blue", "black", "yellow")
DECK = [(suit, value) for suit in COLOURS for value in range(11)]


def start(**options) -> Timeline:
    tl = Timeline()
    action = {"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Bob"]}
    if options:
        action["options"] = options
    tl.apply(action)
    return tl


def play(tl: Timeline, *actions) -> dict:
    for action in actions:
        tl.apply(action)
    return tl.public()


def deal(lead=0):
    return {"type": "deal", "lead": lead}


def quick(winner, points):
    return {"type": "trick", "winner": winner, "points": points}


def full(*cards):
    return {"type": "trick", "cards": [list(c) for c in cards]}


def refused(tl: Timeline, action, kind=ActionError) -> str:
    """The action is refused with ``kind`` and the state is unchanged."""
    before = tl.public()
    with pytest.raises(kind) as info:
        tl.apply(action)
    assert tl.public() == before
    return str(info.value)


def hand_won_by(side: int):
    """A quick-entry hand: ``side`` takes two 40-point tricks (+40), the
    other side the other nine tricks for 140 points (-40)."""
    other = 1 - side
    return [deal(0), quick(side, 40), quick(side, 40)] + \
        [quick(other, p) for p in (20, 20, 20, 20, 20, 10, 10, 10, 10)]


# -- the table --------------------------------------------------------------

def test_exactly_two_players():
    tl = Timeline()
    with pytest.raises(InvalidActionError):
        tl.apply({"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Bob", "Cy"]})
    with pytest.raises(InvalidActionError):
        tl.apply({"type": "new_game", "game": "costly-tricks", "players": ["Ann"]})


def test_public_state_keys_and_start():
    state = start().public()
    assert state == {
        "game": "costly-tricks", "players": ["Ann", "Bob"], "scores": [0, 0], "tokens": [0, 0],
        "tricks": [0, 0], "lead": None, "hands": [], "last_trick": None,
        "finished": False, "winner": None,
    }
    json.dumps(state)


def test_deal_names_the_seat_holding_the_red_0_which_leads():
    tl = start()
    assert play(tl, deal(3))["lead"] == 3


def test_seats_belong_to_sides_s_mod_2():
    # Seat 2 is the first player's dummy, seat 3 the second player's dummy.
    tl = start()
    state = play(tl, deal(0), quick(2, 30), quick(3, 15))
    assert state["tricks"] == [1, 1]
    assert state["scores"] == [30 - 20, 15 - 20]


def test_whoever_wins_a_trick_leads_the_next_dummy_included():
    tl = start()
    assert play(tl, deal(1), quick(3, 10))["lead"] == 3
    assert play(tl, quick(0, 10))["lead"] == 0


# -- the trick judge ----------------------------------------------------------

def test_seed_example_black_10_wins_and_scores_plus_4():
    # Red 5 led, blue 3 (blue trump), black 10 (black trump, blue displaced),
    # blue 6 (discard) -> black 10 wins: 5 + 3 + 10 + 6 - 20 = +4.
    verdict = judge([("red", 5), ("blue", 3), ("black", 10), ("blue", 6)])
    assert verdict.winner == 2
    assert [s.role for s in verdict.steps] == [LEAD, TRUMP, TRUMP, DISCARD]
    assert [s.displaces for s in verdict.steps] == [None, None, "blue", None]
    assert verdict.trump == "black"
    assert verdict.points - 20 == 4
    assert verdict.summary() == ("red 5 led; blue 3 makes blue trump; black 10 makes black trump, "
                                 "displacing blue; blue 6 is a discard (blue was displaced); black 10 wins")


def test_seed_example_in_a_game_scores_for_the_lead_side():
    # Antoinette (seat 0) leads; her dummy (seat 2) plays the black 10.
    tl = start()
    state = play(tl, deal(0), full(("red", 5), ("blue", 3), ("black", 10), ("blue", 6)))
    assert state["scores"] == [4, 0]
    assert state["tricks"] == [1, 0]
    assert state["lead"] == 2
    last = state["last_trick"]
    assert last["winner"] == 2 and last["seats"] == [0, 1, 2, 3] and last["points"] == 24
    assert [s["role"] for s in last["steps"]] == ["lead", "trump", "trump", "discard"]
    assert last["steps"][2] == {"card": ["black", 10], "role": "trump", "displaces": "blue",
                                "new_trump": True, "seat": 2}
    assert last["summary"].endswith("black 10 wins")


def test_cards_of_the_led_suit_follow_and_the_highest_wins_without_trump():
    verdict = judge([("red", 2), ("red", 9), ("red", 0), ("red", 7)])
    assert [s.role for s in verdict.steps] == [LEAD, FOLLOW, FOLLOW, FOLLOW]
    assert verdict.trump is None and verdict.winner == 1


def test_a_trump_beats_any_card_of_the_led_suit():
    verdict = judge([("red", 10), ("red", 9), ("blue", 0), ("red", 8)])
    assert verdict.winner == 2


def test_a_card_of_the_standing_trump_is_a_trump_and_the_highest_trump_wins():
    verdict = judge([("red", 10), ("blue", 2), ("blue", 7), ("red", 9)])
    assert [s.role for s in verdict.steps] == [LEAD, TRUMP, TRUMP, FOLLOW]
    assert verdict.steps[2].new_trump is False
    assert verdict.winner == 2


def test_each_new_suit_displaces_the_trump_so_the_last_one_wins_even_low():
    verdict = judge([("red", 1), ("blue", 10), ("black", 9), ("yellow", 0)])
    assert [s.displaces for s in verdict.steps] == [None, None, "blue", "black"]
    assert verdict.trump == "yellow" and verdict.winner == 3


def test_trump_chain_a_displaced_suit_is_never_trump_again_in_that_trick():
    # blue is displaced by black: the blue 10 after it is only a discard.
    verdict = judge([("red", 1), ("blue", 2), ("black", 3), ("blue", 10)])
    assert verdict.steps[3].role == DISCARD
    assert verdict.trump == "black" and verdict.winner == 2
    # A longer chain (the judge takes any number of cards): blue and black
    # are both displaced, so neither may come back.
    verdict = judge([("red", 1), ("blue", 2), ("black", 3), ("yellow", 0), ("blue", 9), ("black", 8)])
    assert [s.role for s in verdict.steps][4:] == [DISCARD, DISCARD]
    assert verdict.trump == "yellow" and verdict.winner == 3


def test_the_led_suit_is_never_trump_and_never_a_discard():
    verdict = judge([("red", 1), ("blue", 2), ("red", 10), ("black", 0)])
    assert verdict.steps[2].role == FOLLOW
    assert verdict.winner == 3


def test_trumps_are_forgotten_at_the_end_of_each_trick():
    tl = start()
    # Trick 1: blue is displaced by black.
    play(tl, deal(0), full(("red", 5), ("blue", 3), ("black", 10), ("blue", 6)))
    # Trick 2 (seat 2 leads): blue may be trump again, and wins.
    state = play(tl, full(("red", 9), ("blue", 0), ("red", 10), ("red", 8)))
    assert state["last_trick"]["steps"][1]["role"] == "trump"
    assert state["lead"] == 3            # seat 2 led, the blue 0 was the second card


@given(st.lists(st.sampled_from(DECK), min_size=1, max_size=8, unique=True))
@settings(max_examples=300)
def test_judge_agrees_with_the_latest_new_suit_reading(cards):
    # Every suit other than the led one becomes trump at its first card, so
    # the trump standing at the end is the non-led suit seen first last.
    led = cards[0][0]
    first_seen = {}
    for i, (suit, _) in enumerate(cards):
        if suit != led:
            first_seen.setdefault(suit, i)
    trump = max(first_seen, key=first_seen.get) if first_seen else None
    pool = [c for c in cards if c[0] == (trump or led)]
    verdict = judge(cards)
    assert verdict.trump == trump
    assert cards[verdict.winner] == max(pool, key=lambda c: c[1])
    for i, step in enumerate(verdict.steps[1:], start=1):
        suit = step.card[0]
        displaced = suit != led and any(first_seen[suit] < j < i for j in first_seen.values())
        assert (step.role == DISCARD) == displaced


# -- hand points and tokens ---------------------------------------------------

def test_hand_points_are_card_values_minus_20_per_trick():
    tl = start()
    state = play(tl, deal(0), quick(0, 23), quick(0, 12), quick(1, 31))
    assert state["scores"] == [23 + 12 - 40, 31 - 20]
    assert state["tricks"] == [2, 1]


def test_a_hand_is_11_tricks_then_the_positive_side_takes_a_token():
    tl = start()
    actions = hand_won_by(1)
    play(tl, *actions[:-1])
    assert tl.public()["hands"] == []
    state = play(tl, actions[-1])
    assert state["hands"] == [{"tricks": [9, 2], "points": [-40, 40], "token": 1}]
    assert state["tokens"] == [0, 1]


def test_between_hands_scores_and_tricks_are_0_and_lead_is_null():
    tl = start()
    state = play(tl, *hand_won_by(0))
    assert state["scores"] == [0, 0] and state["tricks"] == [0, 0] and state["lead"] is None
    assert state["hands"][-1]["points"] == [40, -40]


def test_a_hand_at_0_0_gives_nobody_a_token():
    tl = start()
    state = play(tl, deal(0), *[quick(i % 2, 20) for i in range(11)])
    assert state["hands"] == [{"tricks": [6, 5], "points": [0, 0], "token": None}]
    assert state["tokens"] == [0, 0]


def test_full_entry_hand_winner_leads_and_sides_sum_to_0():
    # Trick i holds the four i's: red led, blue trump, black then yellow
    # displace, so the yellow card (fourth) always wins: 3, 2, 1, 0, 3 ...
    tl = start()
    tl.apply(deal(0))
    winners = []
    for i in range(11):
        state = play(tl, full(*[(c, i) for c in COLOURS]))
        winners.append(state["last_trick"]["winner"])
    assert winners == [3 - (i % 4) for i in range(11)]
    # Side 1 takes the even i: 4 * 30 - 120 = 0; side 0 the odd: 4 * 25 - 100 = 0.
    assert state["hands"] == [{"tricks": [5, 6], "points": [0, 0], "token": None}]


def test_the_match_goes_to_the_first_side_to_win_3_hands():
    tl = start()
    for side in (0, 1, 0):
        play(tl, *hand_won_by(side))
    assert not tl.public()["finished"]
    state = play(tl, *hand_won_by(0))
    assert state["finished"] and state["winner"] == [0] and state["tokens"] == [3, 1]


def test_hands_to_win_option_and_final_state_keeps_the_last_hand():
    tl = start(hands_to_win=1)
    state = play(tl, *hand_won_by(1))
    assert state["finished"] and state["winner"] == [1]
    # The game is over: the last hand's scores and tricks stay, nobody leads.
    assert state["scores"] == [-40, 40] and state["tricks"] == [9, 2] and state["lead"] is None


def test_quick_and_full_entry_mix_within_a_hand():
    tl = start()
    state = play(tl, deal(0), quick(1, 30), full(("red", 5), ("red", 6), ("red", 0), ("red", 1)))
    # Seat 1 led the full trick: red 6 (second card) is seat 2's.
    assert state["lead"] == 2 and state["scores"] == [12 - 20, 30 - 20]


def test_undo_after_the_end_reopens_the_match():
    tl = start(hands_to_win=1)
    play(tl, *hand_won_by(0))
    refused(tl, deal(0), GameOver)
    state = play(tl, {"type": "undo"})
    assert not state["finished"] and state["tricks"] == [2, 8]


# -- errors -----------------------------------------------------------------

def test_error_trick_before_the_deal():
    tl = start()
    assert "not dealt" in refused(tl, quick(0, 10), IllegalActionError)
    play(tl, *hand_won_by(0))
    refused(tl, full(("red", 1), ("red", 2), ("red", 3), ("red", 4)), IllegalActionError)


def test_error_deal_during_a_hand():
    tl = start()
    play(tl, deal(0))
    refused(tl, deal(1), IllegalActionError)
    play(tl, quick(0, 20))
    refused(tl, deal(1), IllegalActionError)


@pytest.mark.parametrize("action", [
    {"type": "deal", "lead": 4}, {"type": "deal", "lead": -1}, {"type": "deal", "lead": True},
    quick(4, 10), quick(0, 41), quick(0, -1), quick(0, 10.0),
])
def test_error_seat_or_points_out_of_range(action):
    tl = start()
    if action["type"] == "trick":
        tl.apply(deal(0))
    refused(tl, action, InvalidActionError)


@pytest.mark.parametrize("cards", [
    [["red", 11], ["red", 1], ["red", 2], ["red", 3]],
    [["red", -1], ["red", 1], ["red", 2], ["red", 3]],
    [["red", 1], ["red", 2], ["red", 3]],
    [["red", 1], ["red", 2], ["red", 3], ["red", 4], ["red", 5]],
    [["red", 1, 2], ["red", 2], ["red", 3], ["red", 4]],
    [[1, "red"], ["red", 2], ["red", 3], ["red", 4]],
    [["", 1], ["red", 2], ["red", 3], ["red", 4]],
])
def test_error_malformed_full_entry(cards):
    tl = start()
    tl.apply(deal(0))
    refused(tl, {"type": "trick", "cards": cards}, InvalidActionError)


@pytest.mark.parametrize("action", [
    {"type": "trick", "winner": 0, "points": 10, "cards": [["red", 1], ["red", 2], ["red", 3], ["red", 4]]},
    {"type": "trick", "points": 10, "cards": [["red", 1], ["red", 2], ["red", 3], ["red", 4]]},
    {"type": "trick", "winner": 0},
    {"type": "trick", "points": 10},
    {"type": "trick"},
])
def test_error_a_trick_has_one_shape(action):
    tl = start()
    tl.apply(deal(0))
    refused(tl, action, InvalidActionError)


def test_error_repeated_card_in_a_hand():
    tl = start()
    play(tl, deal(0), full(("red", 5), ("blue", 3), ("black", 10), ("blue", 6)))
    message = refused(tl, full(("red", 1), ("red", 2), ("blue", 3), ("red", 4)), IllegalActionError)
    assert "blue 3" in message and "trick 1" in message
    assert "twice" in refused(tl, full(("red", 1), ("red", 2), ("red", 1), ("red", 4)), IllegalActionError)


def test_a_card_comes_back_in_the_next_hand():
    tl = start()
    play(tl, deal(0), full(("red", 5), ("blue", 3), ("black", 10), ("blue", 6)),
         *[quick(0, 20) for _ in range(9)], quick(0, 196 - 180))
    assert len(tl.public()["hands"]) == 1
    play(tl, deal(0), full(("red", 5), ("blue", 3), ("black", 10), ("blue", 6)))


def test_error_a_fifth_suit():
    tl = start()
    play(tl, deal(0), full(("red", 1), ("blue", 1), ("black", 1), ("yellow", 1)))
    message = refused(tl, full(("red", 2), ("green", 2), ("blue", 2), ("black", 2)), IllegalActionError)
    assert "green" in message and "fifth" in message


def test_suits_are_compared_exactly():
    tl = start()
    play(tl, deal(0), full(("red", 1), ("blue", 1), ("black", 1), ("yellow", 1)))
    refused(tl, full(("Red", 2), ("red", 2), ("blue", 2), ("black", 2)), IllegalActionError)


def test_error_trick_points_over_220_in_a_hand():
    tl = start()
    play(tl, deal(0), *[quick(0, 40) for _ in range(5)])      # 200
    play(tl, quick(1, 20))                                     # 220 exactly is fine
    message = refused(tl, quick(1, 1), IllegalActionError)
    assert "221" in message


def test_error_11_tricks_not_adding_up_to_220():
    tl = start()
    play(tl, deal(0), *[quick(0, 20) for _ in range(10)])
    assert "219" in refused(tl, quick(1, 19), IllegalActionError)
    assert tl.public()["tricks"] == [10, 0]
    play(tl, quick(1, 20))


def test_error_actions_after_the_match_ended():
    tl = start(hands_to_win=1)
    play(tl, *hand_won_by(0))
    refused(tl, deal(0), GameOver)
    refused(tl, quick(0, 20), GameOver)


# -- properties -------------------------------------------------


@given(deck=st.permutations(DECK), picks=st.lists(st.integers(0, 10), min_size=44, max_size=44))
@settings(max_examples=150, deadline=None)
def test_random_full_card_hands_always_sum_to_0(deck, picks):
    # Deal 11 cards per seat; the red 0 leads; each seat plays some card
    # of its hand (following suit is the players' business).
    hands = [list(deck[11 * s:11 * s + 11]) for s in range(4)]
    lead = next(s for s in range(4) if ("red", 0) in hands[s])
    tl = start()
    tl.apply(deal(lead))
    pick = iter(picks)
    for number in range(11):
        lead = tl.public()["lead"] if number else lead
        cards = []
        for i in range(4):
            hand = hands[(lead + i) % 4]
            cards.append(hand.pop(next(pick) % len(hand)))
        state = play(tl, full(*cards))
        assert state["last_trick"]["winner"] == (lead + judge(cards).winner) % 4
    done = state["hands"][-1]
    assert sum(done["points"]) == 0
    assert sum(done["tricks"]) == 11
    positive = [s for s in (0, 1) if done["points"][s] > 0]
    assert done["token"] == (positive[0] if positive else None)
    assert state["scores"] == [0, 0] and state["lead"] is None
