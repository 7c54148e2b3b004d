"""The Third Man (rules.md §1, replay.md third-man), rule by rule.

Bids are written as the four cards in seat order; the helper :func:`bid_round`
enters them the way the table does: the lead's card first, then the three
secret cards in play order after the lead.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import random
from collections import Counter
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from companion.errors import GameOver, IllegalActionError, InvalidActionError
from companion.games import third_man
from companion.games.base import Sealed, SecretAccess
from companion.games.third_man import GAME, leader, score_bid
from companion.timeline import ReplayError, Timeline, replay

PLAYERS = ["Ann", "Ben", "Cat", "Dan"]
FULL = list(range(10))


# -- helpers ------------------------------------------------------------------

def new_match(**options) -> Timeline:
    tl = Timeline()
    tl.apply({"type": "new_game", "game": "third-man", "players": PLAYERS, "options": options})
    return tl


def bid(tl: Timeline, seat: int, card: int):
    return tl.apply({"type": "bid", "seat": seat, "card": card})


def bid_round(tl: Timeline, cards: list[int]) -> dict:
    """Enter one whole bid (cards in seat order): lead first, then the others."""
    lead = tl.public()["lead"]
    for k in range(4):
        seat = (lead + k) % 4
        bid(tl, seat, cards[seat])
    return tl.public()


def quick_round(tl: Timeline) -> dict:
    """Two bids that give the current lead L the round at +30:
    L+1 and L+2 pair high (at first), L takes third, L+3 is fourth."""
    lead = tl.public()["lead"]
    for mine, pair, low in ((8, 9, 0), (7, 8, 1)):
        cards = [0] * 4
        cards[lead], cards[(lead + 1) % 4], cards[(lead + 2) % 4], cards[(lead + 3) % 4] = mine, pair, pair, low
        view = bid_round(tl, cards)
    return view


def assert_refused(tl: Timeline, action: dict, error=IllegalActionError) -> str:
    """``action`` is refused with ``error`` and nothing changes; returns the message."""
    state, public, log, depth = tl.state, tl.public(), list(tl.log), len(tl.steps)
    with pytest.raises(error) as info:
        tl.apply(action)
    assert tl.state is state
    assert tl.public() == public
    assert tl.log == log and len(tl.steps) == depth
    return str(info.value)


# -- scoring one bid (§1 examples and more ties) --------------------------------

@pytest.mark.parametrize("cards, points", [
    # the examples of §1
    ([9, 7, 5, 2], [1, -7, 10, 0]),
    ([9, 9, 5, 2], [-4, -4, 10, 0]),
    ([9, 7, 7, 2], [1, -7, -7, 0]),
    ([9, 7, 5, 5], [1, -7, 10, 10]),
    ([9, 9, 5, 5], [-4, -4, 10, 10]),
])
def test_rulebook_examples(cards, points):
    assert score_bid(cards) == points


def test_points_follow_the_seats_not_the_card_order():
    assert score_bid([2, 5, 7, 9]) == [0, 10, -7, 1]
    assert score_bid([5, 9, 2, 9]) == [10, -4, 0, -4]


def test_single_at_first_scores_ten_minus_card():
    assert score_bid([6, 5, 1, 0])[0] == 4


def test_single_at_second_loses_its_card():
    assert score_bid([9, 8, 1, 0])[1] == -8


def test_single_at_third_scores_double():
    assert score_bid([9, 8, 7, 6]) == [1, -8, 14, 0]


def test_zero_at_third_scores_zero():
    assert score_bid([9, 8, 0, 5]) == [1, -8, 0, 10]


def test_pair_at_first_scores_five_minus_card_and_skips_second():
    assert score_bid([4, 4, 2, 1]) == [1, 1, 4, 0]


def test_pair_at_second_skips_third_so_the_last_card_is_fourth():
    assert score_bid([9, 3, 3, 2]) == [1, -3, -3, 0]


def test_pair_at_third_both_double():
    assert score_bid([8, 6, 4, 4]) == [2, -6, 8, 8]


def test_two_pairs_first_and_third():
    assert score_bid([3, 1, 3, 1]) == [2, 2, 2, 2]
    assert score_bid([9, 9, 0, 0]) == [-4, -4, 0, 0]
    assert score_bid([5, 0, 5, 0]) == [0, 0, 0, 0]


def test_fourth_scores_zero_whatever_its_card():
    assert score_bid([9, 8, 7, 6])[3] == 0
    assert score_bid([3, 2, 1, 0])[3] == 0


@pytest.mark.parametrize("cards", [[5, 5, 5, 2], [9, 1, 1, 1], [0, 7, 0, 0], [4, 4, 4, 4]])
def test_three_or_four_equal_cards_annul_the_bid(cards):
    assert score_bid(cards) is None


# -- the leader rule ------------------------------------------------------------

def test_leader_is_the_highest_score_whatever_the_gains():
    assert leader([5, 9, 0, 0], [0, 1, 8, 0], 0) == 1


def test_leader_tie_goes_to_who_gained_most_in_the_last_bid():
    assert leader([5, 3, 5, 0], [1, 0, 2, 0], 0) == 2
    assert leader([5, 3, 5, 0], [2, 0, 1, 0], 2) == 0


def test_leader_gains_of_seats_not_tied_do_not_count():
    assert leader([5, 3, 5, 0], [1, 9, 1, 0], 3) == 0


@pytest.mark.parametrize("from_seat, expected", [(0, 0), (1, 2), (2, 2), (3, 0)])
def test_leader_last_tie_goes_to_first_in_play_order_from_seat(from_seat, expected):
    assert leader([5, 3, 5, 0], [2, 0, 2, 0], from_seat) == expected


def test_leader_from_seat_is_inclusive():
    assert leader([0, 0, 0, 0], [0, 0, 0, 0], 3) == 3


# -- setup and the public view --------------------------------------------------

def test_setup_public_state():
    view = new_match().public()
    assert view == {
        "game": "third-man", "players": PLAYERS, "scores": [0, 0, 0, 0], "tokens": [0, 0, 0, 0],
        "round": 1, "bids": 0, "lead": 0, "hands": [FULL] * 4, "last": None, "rounds": [],
        "pending": {"lead_card": None, "entered": []}, "finished": False, "winner": None,
    }


def test_first_lead_option():
    assert new_match(first_lead=2).public()["lead"] == 2


@pytest.mark.parametrize("players", [PLAYERS[:3], PLAYERS + ["Eve"]])
def test_exactly_four_players(players):
    with pytest.raises(InvalidActionError):
        Timeline().apply({"type": "new_game", "game": "third-man", "players": players})


@pytest.mark.parametrize("options", [
    {"first_lead": 4}, {"first_lead": -1}, {"first_lead": True}, {"tokens_to_win": 0},
    {"tokens_to_win": 2.0}, {"tokens": 3},
])
def test_bad_options_are_refused(options):
    with pytest.raises(InvalidActionError):
        new_match(**options)


def test_lead_card_is_public_and_leaves_the_hand_at_once():
    tl = new_match()
    bid(tl, 0, 6)
    view = tl.public()
    assert view["pending"] == {"lead_card": 6, "entered": [0]}
    assert 6 not in view["hands"][0]


def test_secret_card_stays_in_its_hand_until_the_reveal():
    tl = new_match()
    bid(tl, 0, 6)
    bid(tl, 2, 3)
    view = tl.public()
    assert view["pending"] == {"lead_card": 6, "entered": [0, 2]}
    assert view["hands"][2] == FULL


def test_entered_is_ascending_whatever_the_entry_order():
    tl = new_match(first_lead=2)
    bid(tl, 2, 5)
    bid(tl, 1, 4)
    bid(tl, 0, 7)
    assert tl.public()["pending"]["entered"] == [0, 1, 2]


def test_only_non_lead_bids_are_secret():
    tl = new_match(first_lead=1)
    state = tl.state
    assert GAME.is_secret(state, {"type": "bid", "seat": 1, "card": 8}) is False
    assert all(GAME.is_secret(state, {"type": "bid", "seat": s, "card": 8}) for s in (0, 2, 3))
    bid_round(tl, [2, 8, 6, 4])
    assert [step.secret for step in tl.steps[1:]] == [False, True, True, True]


def test_reveal_scores_all_at_once_and_passes_the_lead():
    tl = new_match(first_lead=1)
    view = bid_round(tl, [2, 8, 6, 4])
    assert view["last"] == {"cards": [2, 8, 6, 4], "points": [0, 2, -6, 8], "annulled": False}
    assert view["scores"] == [0, 2, -6, 8]
    assert view["bids"] == 1
    assert view["lead"] == 3
    assert view["pending"] == {"lead_card": None, "entered": []}
    assert [8 in h for h in view["hands"]] == [True, False, True, True]


def test_next_lead_tie_on_score_goes_to_the_bigger_gain():
    tl = new_match()
    view = bid_round(tl, [9, 9, 5, 2])  # -4, -4, +10, 0
    assert view["lead"] == 2
    view = bid_round(tl, [8, 7, 0, 5])  # +2, -7, 0, +10 -> (-2, -11, 10, 10)
    assert view["scores"] == [-2, -11, 10, 10]
    assert view["lead"] == 3            # tied on 10: seat 3 gained 10, the lead seat 2 nothing


def test_next_lead_full_tie_goes_to_first_from_the_bid_lead():
    tl = new_match(first_lead=2)
    view = bid_round(tl, [5, 0, 5, 0])  # all score 0, all gains 0
    assert view["scores"] == [0, 0, 0, 0]
    assert view["lead"] == 2


# -- annulled bids --------------------------------------------------------------

@pytest.mark.parametrize("cards", [[5, 5, 5, 2], [4, 4, 4, 4]])
def test_annulled_bid_puts_cards_back_and_the_same_lead_bids_again(cards):
    tl = new_match()
    bid_round(tl, [9, 7, 6, 3])          # +1, -7, +12, 0
    before = tl.public()
    lead = before["lead"]
    assert lead == 2
    view = bid_round(tl, cards)
    assert view["last"] == {"cards": cards, "points": [0, 0, 0, 0], "annulled": True}
    assert view["scores"] == before["scores"]
    assert view["hands"] == before["hands"]
    assert view["bids"] == 1
    assert view["lead"] == lead
    assert view["pending"] == {"lead_card": None, "entered": []}
    bid(tl, lead, cards[lead])          # the returned card can be played again
    assert tl.public()["pending"]["lead_card"] == cards[lead]


# -- round end, tokens, new round -----------------------------------------------

def test_round_ends_at_plus_twenty_and_token_goes_to_leader():
    tl = new_match()
    bid_round(tl, [8, 9, 9, 0])          # +16, -4, -4, 0
    view = bid_round(tl, [6, 5, 0, 4])  # +4, -5, 0, +8 -> (20, -9, -4, 8)
    assert view["rounds"] == [{"scores": [20, -9, -4, 8], "token": 0}]
    assert view["tokens"] == [1, 0, 0, 0]
    # the new round starts at once
    assert view["round"] == 2 and view["bids"] == 0
    assert view["scores"] == [0, 0, 0, 0] and view["hands"] == [FULL] * 4
    # led by who progressed most in the last bid (seat 3, +8), not the token holder
    assert view["lead"] == 3
    # the last bid stays visible across the boundary
    assert view["last"] == {"cards": [6, 5, 0, 4], "points": [4, -5, 0, 8], "annulled": False}
    assert not view["finished"]


def test_round_ends_at_minus_twenty():
    tl = new_match()
    bid_round(tl, [9, 8, 8, 0])          # +1, -8, -8, 0
    bid_round(tl, [8, 7, 7, 1])          # +2, -7, -7, 0 -> (3, -15, -15, 0)
    view = bid_round(tl, [6, 5, 5, 2])  # +4, -5, -5, 0 -> (7, -20, -20, 0)
    assert view["rounds"] == [{"scores": [7, -20, -20, 0], "token": 0}]
    assert view["round"] == 2 and view["scores"] == [0, 0, 0, 0]
    assert view["lead"] == 0


def test_round_goes_on_at_nineteen():
    tl = new_match()
    bid_round(tl, [8, 9, 9, 0])          # +16
    view = bid_round(tl, [7, 6, 5, 1])  # +3, -6, +10, 0 -> (19, -10, 6, 0)
    assert view["scores"] == [19, -10, 6, 0]
    assert view["round"] == 1 and view["rounds"] == []


def test_round_ends_after_the_ninth_scored_bid():
    # seats 0 and 1 pair on x, seats 2 and 3 pair on y: scores stay small
    pairs = [(9, 0), (0, 9), (5, 1), (1, 5), (8, 2), (2, 8), (7, 3), (3, 7), (6, 4)]
    tl = new_match()
    bid_round(tl, [4, 4, 4, 5])          # an annulled bid does not count
    for n, (x, y) in enumerate(pairs, start=1):
        view = bid_round(tl, [x, x, y, y])
        if n < 9:
            assert view["round"] == 1 and view["bids"] == n
            assert [len(h) for h in view["hands"]] == [10 - n] * 4
    # seats 2 and 3 tie on 11 and both gained 8 in the ninth bid, led by
    # seat 0: the token goes to the first of them from seat 0, seat 2
    assert view["rounds"] == [{"scores": [2, 2, 11, 11], "token": 2}]
    assert view["tokens"] == [0, 0, 1, 0]
    assert view["round"] == 2 and view["bids"] == 0 and view["hands"] == [FULL] * 4
    assert view["lead"] == 2


def test_match_ends_at_tokens_to_win_and_everything_stays():
    tl = new_match()
    for n in (1, 2):
        view = quick_round(tl)
        assert view["tokens"] == [n, 0, 0, 0] and not view["finished"]
    view = quick_round(tl)
    assert view["finished"] is True
    assert view["winner"] == [0]
    assert view["tokens"] == [3, 0, 0, 0]
    assert view["lead"] is None
    assert view["round"] == 3 and view["bids"] == 2
    assert view["scores"] == [30, -7, -7, 0]
    assert len(view["rounds"]) == 3
    assert view["hands"][0] == [0, 1, 2, 3, 4, 5, 6, 9]
    assert view["pending"] == {"lead_card": None, "entered": []}


def test_tokens_to_win_option():
    tl = new_match(tokens_to_win=1)
    view = quick_round(tl)
    assert view["finished"] and view["winner"] == [0] and view["round"] == 1


def test_after_the_end_only_undo():
    tl = new_match(tokens_to_win=1)
    quick_round(tl)
    for seat in range(4):
        assert_refused(tl, {"type": "bid", "seat": seat, "card": 3}, GameOver)
    tl.apply({"type": "undo"})
    assert not tl.public()["finished"]
    assert tl.public()["lead"] == 0


def test_bid_function_refuses_after_the_end_too():
    tl = new_match(tokens_to_win=1)
    quick_round(tl)
    with pytest.raises(GameOver):
        third_man.bid(tl.state, {"type": "bid", "seat": 0, "card": 3})


# -- errors (rejected, state unchanged) -----------------------------------------

@pytest.mark.parametrize("action", [
    {"type": "bid", "seat": 4, "card": 3},
    {"type": "bid", "seat": -1, "card": 3},
    {"type": "bid", "seat": 0, "card": 10},
    {"type": "bid", "seat": 0, "card": -1},
    {"type": "bid", "seat": 0, "card": 3.0},
    {"type": "bid", "seat": 0, "card": True},
    {"type": "bid", "seat": 0},
    {"type": "bid", "seat": 0, "card": 3, "face": "up"},
])
def test_malformed_bids_are_refused(action):
    assert_refused(new_match(), action, InvalidActionError)


def test_lead_card_already_played_this_round():
    tl = new_match()
    bid_round(tl, [9, 7, 5, 2])
    lead = tl.public()["lead"]
    assert lead == 2
    message = assert_refused(tl, {"type": "bid", "seat": 2, "card": 5})
    assert "Cat" in message and "5" in message   # the lead's card is public


def test_secret_card_already_played_this_round_does_not_name_the_card():
    tl = new_match()
    bid_round(tl, [9, 7, 5, 2])          # lead now seat 2
    bid(tl, 2, 8)
    message = assert_refused(tl, {"type": "bid", "seat": 3, "card": 2})
    assert "Dan" in message
    assert not any(ch.isdigit() for ch in message)


def test_second_secret_card_from_the_same_seat():
    tl = new_match()
    bid(tl, 0, 6)
    bid(tl, 2, 3)
    message = assert_refused(tl, {"type": "bid", "seat": 2, "card": 4})
    assert "Cat" in message
    assert not any(ch.isdigit() for ch in message)


def test_second_card_from_the_lead():
    tl = new_match()
    bid(tl, 0, 6)
    bid(tl, 1, 3)
    assert_refused(tl, {"type": "bid", "seat": 0, "card": 4})


def test_non_lead_cannot_bid_before_the_lead():
    tl = new_match(first_lead=1)
    message = assert_refused(tl, {"type": "bid", "seat": 2, "card": 4})
    assert "Cat" in message and "Ben" in message
    assert "4" not in message


def test_errors_do_not_depend_on_the_secret_values():
    # the same refused action gives the same message whatever others entered
    messages = set()
    for secret in (0, 5, 9):
        tl = new_match()
        bid(tl, 0, 6)
        bid(tl, 1, secret)
        messages.add(assert_refused(tl, {"type": "bid", "seat": 1, "card": 2}))
    assert len(messages) == 1


# -- seat views --------------------------------------------------------------------

def test_seat_view_shows_only_its_own_locked_card():
    tl = new_match()
    bid(tl, 0, 6)
    bid(tl, 2, 3)
    assert tl.private(2)["locked"] == 3
    assert tl.private(2)["hand"] == FULL
    assert tl.private(0)["locked"] == 6
    assert tl.private(1)["locked"] is None
    assert tl.private(3)["locked"] is None


def test_seat_view_of_others_does_not_depend_on_a_secret():
    views = set()
    for secret in (0, 3, 9):
        tl = new_match()
        bid(tl, 0, 6)
        bid(tl, 2, secret)
        views.add(json.dumps([tl.public(), tl.private(1), tl.private(3), tl.private(0)], sort_keys=True))
    assert len(views) == 1


# -- undo (Timeline) ---------------------------------------------------------------

def test_undo_through_a_reveal():
    tl = new_match()
    for seat, card in ((0, 6), (1, 2), (2, 3)):
        bid(tl, seat, card)
    under_way = tl.public()
    bid(tl, 3, 9)
    assert tl.public()["bids"] == 1
    tl.apply({"type": "undo"})
    assert tl.public() == under_way
    assert tl.private(2)["locked"] == 3
    bid(tl, 3, 3)                       # now a pair of 3s at second instead
    assert tl.public()["last"] == {"cards": [6, 2, 3, 3], "points": [4, 0, -3, -3], "annulled": False}


def test_undo_across_a_round_boundary():
    tl = new_match()
    bid_round(tl, [8, 9, 9, 0])
    for seat, card in ((0, 6), (1, 5), (2, 0)):
        bid(tl, seat, card)
    before = tl.public()
    bid(tl, 3, 4)                        # ends round 1
    after = tl.public()
    assert after["round"] == 2
    tl.apply({"type": "undo"})
    assert tl.public() == before
    assert tl.public()["rounds"] == [] and tl.public()["round"] == 1
    bid(tl, 3, 4)
    assert tl.public() == after


def test_undo_the_lead_card_returns_it():
    tl = new_match()
    bid(tl, 0, 6)
    tl.apply({"type": "undo"})
    assert tl.public()["hands"][0] == FULL
    assert tl.public()["pending"] == {"lead_card": None, "entered": []}


# -- properties over random legal bid sequences -------------------------------------

def legal_bid(view: dict, choice: int) -> dict:
    """A legal bid for the public ``view``: the lead's if no card is shown,
    else one of the seats still to enter; any card of that seat's hand."""
    pending = view["pending"]
    if pending["lead_card"] is None:
        seat = view["lead"]
    else:
        waiting = [s for s in range(4) if s not in pending["entered"]]
        seat = waiting[choice % len(waiting)]
    hand = view["hands"][seat]
    return {"type": "bid", "seat": seat, "card": hand[(choice // 3) % len(hand)]}


# A match: tokens_to_win, the first choices (what hypothesis shrinks), and a
# seed that plays on after them until the match is over, so that every
# example goes through whole rounds and reaches the end of the match.
matches = st.tuples(st.integers(1, 2), st.lists(st.integers(0, 10_000), max_size=60), st.integers(0, 2**32 - 1))
fast = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_ACTIONS = 3000


def choices(picks: list[int], seed: int):
    yield from picks
    rng = random.Random(seed)
    for _ in range(MAX_ACTIONS):
        yield rng.randrange(10_001)


def walk(match):
    """Play legal bids to the end of the match; yield (before, action, after,
    timeline) for each."""
    tokens_to_win, picks, seed = match
    tl = new_match(tokens_to_win=tokens_to_win, first_lead=seed % 4)
    for choice in choices(picks, seed):
        before = tl.public()
        if before["finished"]:
            return
        action = legal_bid(before, choice)
        tl.apply(action)
        yield before, action, tl.public(), tl
    raise AssertionError("the match did not end")


@fast
@given(matches)
def test_property_scores_are_the_sum_of_the_rounds_bid_results(match):
    total = [0] * 4
    cards = {}
    for before, action, after, _ in walk(match):
        cards[action["seat"]] = action["card"]
        if len(cards) == 4:                       # this action revealed the bid
            shown = [cards[s] for s in range(4)]
            cards = {}
            points = score_bid(shown)
            assert after["last"]["cards"] == shown
            assert after["last"]["annulled"] is (points is None)
            assert after["last"]["points"] == (points or [0, 0, 0, 0])
            if points is not None:
                total = [t + p for t, p in zip(total, points)]
                assert after["bids"] in (before["bids"] + 1, 0) or after["finished"]
            else:
                assert after["lead"] == before["lead"] and after["bids"] == before["bids"]
        if len(after["rounds"]) > len(before["rounds"]):
            assert after["rounds"][-1]["scores"] == total
            if not after["finished"]:
                total = [0] * 4
        assert after["scores"] == total


@fast
@given(matches)
def test_property_revealed_cards_never_return_within_the_round(match):
    played = [set() for _ in range(4)]
    round_no = 1
    for before, action, after, _ in walk(match):
        if after["round"] != round_no:
            played, round_no = [set() for _ in range(4)], after["round"]
        elif after["last"] is not None and not after["last"]["annulled"] and after["bids"] != before["bids"]:
            for seat, card in enumerate(after["last"]["cards"]):
                played[seat].add(card)
        for seat, hand in enumerate(after["hands"]):
            assert not set(hand) & played[seat]
            out = set(played[seat])
            if seat == after["lead"] and after["pending"]["lead_card"] is not None:
                out.add(after["pending"]["lead_card"])
            # every card is either in the hand, shown by the lead, or revealed
            assert sorted(set(hand) | out) == FULL and len(hand) + len(out) == 10
            assert hand == sorted(hand)


@fast
@given(matches)
def test_property_one_token_per_completed_round(match):
    tokens_to_win = match[0]
    for before, action, after, _ in walk(match):
        rounds = after["rounds"]
        assert sum(after["tokens"]) == len(rounds)
        counted = Counter(r["token"] for r in rounds)
        assert after["tokens"] == [counted[s] for s in range(4)]
        assert after["round"] == len(rounds) + (0 if after["finished"] else 1)
        if len(rounds) > len(before["rounds"]):
            # the token, and the next lead, by the leader rule
            gains, lead = after["last"]["points"], before["lead"]
            assert rounds[-1]["token"] == leader(rounds[-1]["scores"], gains, lead)
            if not after["finished"]:
                assert after["lead"] == leader([0, 0, 0, 0], gains, lead)
        elif after["bids"] != before["bids"]:
            assert after["lead"] == leader(after["scores"], after["last"]["points"], before["lead"])
        if after["finished"]:
            winner = rounds[-1]["token"]
            assert after["winner"] == [winner] and after["lead"] is None
            assert after["tokens"][winner] == tokens_to_win
            assert all(n < tokens_to_win for s, n in enumerate(after["tokens"]) if s != winner)


@fast
@given(matches)
def test_property_public_view_never_holds_a_pending_secret(match):
    for before, action, after, tl in walk(match):
        # tl.public() above built the view from a Sealed state without raising
        state = tl.state
        sealed = GAME.sealed(state).hidden
        assert isinstance(sealed, Sealed) and sorted(sealed) == sorted(state.hidden)
        if not state.hidden:
            continue
        with pytest.raises(SecretAccess):
            sealed[next(iter(sealed))]
        public = json.dumps(tl.public(), sort_keys=True)
        others = [s for s in range(4) if s not in state.hidden]
        seen = {s: json.dumps(GAME.private(state, s), sort_keys=True) for s in others}
        for seat in state.hidden:
            for card in state.hands[seat][::3]:     # a few other cards suffice
                hidden = dict(state.hidden)
                hidden[seat] = card
                other = dataclasses.replace(state, hidden=MappingProxyType(hidden))
                assert json.dumps(GAME.public(other), sort_keys=True) == public
                for s in others:
                    assert json.dumps(GAME.private(other, s), sort_keys=True) == seen[s]


@fast
@given(matches, st.integers(3, 12))
def test_property_replaying_the_log_gives_the_same_public_state(match, undo_every):
    tokens_to_win, picks, seed = match
    tl = new_match(tokens_to_win=tokens_to_win, first_lead=seed % 4)
    history = [tl.public()]
    for choice in choices(picks, seed):
        if choice % undo_every == 0 and len(tl.steps) > 1:
            tl.apply({"type": "undo"})          # allowed after the end too
            history.pop()
            assert tl.public() == history[-1]
            continue
        view = tl.public()
        if view["finished"]:
            break
        tl.apply(legal_bid(view, choice))
        history.append(tl.public())
    assert tl.public()["finished"]
    again = replay(json.dumps(action) for action in tl.log)
    assert again.public() == tl.public()
    assert [again.private(s) for s in range(4)] == [tl.private(s) for s in range(4)]
