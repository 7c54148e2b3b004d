"""Sloppy Seconds (rules.md §4), rule by rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from companion.errors import ActionError, GameOver, IllegalActionError, InvalidActionError
from companion.games.sloppy_seconds import score_hand
from companion.timeline import ReplayError, Timeline, replay

SUITS = "SHDC"
RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]   # low to high
DECK4 = [r + s for s in SUITS for r in RANKS]
DECK3 = [c for c in DECK4 if c != "2D"]
NAMES = ["Ann", "Ben", "Cat", "Dan"]


def start(n=4, **options) -> Timeline:
    tl = Timeline()
    action = {"type": "new_game", "game": "sloppy-seconds", "players": NAMES[:n]}
    if options:
        action["options"] = options
    tl.apply(action)
    return tl


def play(tl: Timeline, *actions) -> dict:
    for action in actions:
        tl.apply(action)
    return tl.public()


def trick(*cards):
    return {"type": "trick", "cards": list(cards)}


def hand(*rows):
    """rows: one (S, H, D, C) tuple per seat."""
    return {"type": "hand", "points": [dict(zip(SUITS, row)) for row in rows]}


def refused(tl: Timeline, action, kind=ActionError) -> str:
    before = tl.public()
    with pytest.raises(kind) as info:
        tl.apply(action)
    assert tl.public() == before
    return str(info.value)


# A legal 4-player hand entry: seat 0 scores 43 per suit, seat 1 is first.
SIMPLE = hand((0, 0, 0, 0), (48, 48, 48, 48), (0, 0, 0, 0), (43, 43, 43, 43))


def points_of(card: str) -> int:
    rank = card[:-1]
    return {"A": 1, "J": 11, "Q": 12, "K": 13}.get(rank) or int(rank)


def reference_hand(tricks, first_lead, n):
    """An independent reading of the trick rules: the distinct suits broken,
    in order; the second of them is trump from the card that broke it on.
    Returns the lead of each trick and the per-seat suit totals."""
    broken, leads, lead = [], [], first_lead
    totals = [[0] * 4 for _ in range(n)]
    for cards in tricks:
        leads.append(lead)
        led = cards[0][-1]
        for c in cards:
            if c[-1] != led and c[-1] not in broken:
                broken.append(c[-1])
        trump = broken[1] if len(broken) > 1 else None
        contenders = [c for c in cards if c[-1] == trump] or [c for c in cards if c[-1] == led]
        best = max(contenders, key=lambda c: RANKS.index(c[:-1]))
        lead = (lead + cards.index(best)) % n
        for c in cards:
            totals[lead][SUITS.index(c[-1])] += points_of(c)
    return leads, totals


# -- table and deck ---------------------------------------------------------

@pytest.mark.parametrize("n", [2, 5])
def test_three_or_four_players(n):
    tl = Timeline()
    with pytest.raises(InvalidActionError):
        tl.apply({"type": "new_game", "game": "sloppy-seconds", "players": [f"P{i}" for i in range(n)]})


def test_public_state_at_the_start():
    state = start().public()
    assert state == {
        "game": "sloppy-seconds", "players": NAMES, "scores": [0, 0, 0, 0], "dealer": 0, "hands": [],
        "trump": None, "ineligible": None, "lead": 1, "tricks_played": 0,
        "taken": [{"S": 0, "H": 0, "D": 0, "C": 0}] * 4, "last_trick": None,
        "finished": False, "winner": None,
    }


def test_card_points_ace_1_to_king_13_so_a_suit_holds_91():
    assert sum(points_of(c) for c in DECK4 if c.endswith("S")) == 91
    tl = start()
    # Seat 1 leads AS; KH breaks hearts, QD breaks diamonds (trump): seat 3 takes.
    state = play(tl, trick("AS", "KH", "QD", "JC"))
    assert state["taken"][3] == {"S": 1, "H": 13, "D": 12, "C": 11}


# -- scoring a hand -----------------------------------------------------------

def test_the_second_highest_total_scores_it_nobody_else():
    # Per suit: 50 / 41 / 0 / 0 -> seat 1 scores 41.
    assert score_hand([(50, 0, 0, 0), (41, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)])[:2] == (5, 41)


def test_ties_for_first_push_the_next_lower_total_into_second():
    # "if Al & Bob have 34 points and Chris has 23 then Chris scores 23"
    assert score_hand([(34, 0, 0, 0), (34, 0, 0, 0), (23, 0, 0, 0)]) == (5, 5, 23)


def test_every_player_tied_for_second_scores_it():
    assert score_hand([(45, 0, 0, 0), (23, 0, 0, 0), (23, 0, 0, 0), (0, 0, 0, 0)]) == (5, 23, 23, 5)


def test_second_place_at_0_scores_0():
    assert score_hand([(0, 0, 0, 91), (0, 0, 0, 0), (0, 0, 0, 0)]) == (5, 5, 5)


def test_a_hand_score_below_5_counts_as_5():
    assert score_hand([(87, 0, 0, 0), (4, 0, 0, 0), (0, 0, 0, 0)]) == (5, 5, 5)
    assert score_hand([(86, 0, 0, 0), (5, 0, 0, 0), (0, 0, 0, 0)]) == (5, 5, 5)
    assert score_hand([(85, 0, 0, 0), (6, 0, 0, 0), (0, 0, 0, 0)]) == (5, 6, 5)


def test_hand_entry_adds_to_the_totals_and_passes_the_deal():
    tl = start(target=1000)
    state = play(tl, SIMPLE)
    assert state["scores"] == [5, 5, 5, 172]
    assert state["hands"][0]["points"] == [5, 5, 5, 172]
    assert state["dealer"] == 1 and state["lead"] == 2
    state = play(tl, SIMPLE)
    assert state["scores"] == [10, 10, 10, 344] and state["dealer"] == 2


def test_first_dealer_option_and_the_seat_after_the_dealer_leads():
    tl = start(first_dealer=3)
    assert tl.public()["dealer"] == 3 and tl.public()["lead"] == 0
    assert play(tl, SIMPLE)["dealer"] == 0


def test_error_suit_totals_not_adding_up_to_91():
    tl = start()
    message = refused(tl, hand((0, 0, 0, 0), (48, 48, 48, 48), (0, 0, 0, 0), (43, 43, 42, 43)), IllegalActionError)
    assert "D" in message and "90" in message and "91" in message


def test_with_3_players_diamonds_hold_89():
    tl = start(3)
    refused(tl, hand((48, 48, 48, 48), (43, 43, 43, 43), (0, 0, 0, 0)), IllegalActionError)
    state = play(tl, hand((48, 48, 46, 48), (43, 43, 43, 43), (0, 0, 0, 0)))
    assert state["scores"] == [5, 172, 5]


@pytest.mark.parametrize("points", [
    [{"S": 91, "H": 91, "D": 91, "C": 91}] * 3,                                   # one seat short
    [{"S": 91, "H": 91, "D": 91}] + [{"S": 0, "H": 0, "D": 0, "C": 0}] * 3,        # a suit missing
    [{"S": 92, "H": 91, "D": 91, "C": 91}] + [{"S": 0, "H": 0, "D": 0, "C": 0}] * 3,
    [{"S": -1, "H": 91, "D": 91, "C": 91}] + [{"S": 1, "H": 0, "D": 0, "C": 0}] * 3,
    [{"S": 91.0, "H": 91, "D": 91, "C": 91}] + [{"S": 0, "H": 0, "D": 0, "C": 0}] * 3,
])
def test_error_malformed_hand_entry(points):
    refused(start(), {"type": "hand", "points": points}, InvalidActionError)


# -- trick by trick: lead, trump, winners --------------------------------------

def test_the_winner_of_a_trick_leads_the_next():
    tl = start()                       # dealer 0: seat 1 leads
    state = play(tl, trick("4C", "KC", "2C", "3C"))
    assert state["lead"] == 2 and state["last_trick"] == {"cards": ["4C", "KC", "2C", "3C"], "lead": 1, "winner": 2}


def test_aces_rank_highest_for_winning_a_trick():
    tl = start()
    state = play(tl, trick("KS", "AS", "QS", "JS"))
    assert state["lead"] == 2 and state["taken"][2]["S"] == 13 + 1 + 12 + 11


def test_leading_a_suit_does_not_break_it():
    tl = start()
    state = play(tl, trick("4C", "KC", "2C", "3C"), trick("5S", "6S", "7S", "8S"))
    assert state["ineligible"] is None and state["trump"] is None


def test_the_first_suit_broken_is_never_trump_and_the_second_is_trump_at_once():
    # The scenario trick_entry_trump: hearts first broken, diamonds second.
    tl = start()
    state = play(tl, trick("4C", "KC", "9H", "2C"))
    assert state["ineligible"] == "H" and state["trump"] is None and state["lead"] == 2
    state = play(tl, trick("5S", "JS", "3D", "QS"))
    assert state["trump"] == "D" and state["lead"] == 0      # the 3D wins at once


def test_breaking_the_ineligible_suit_again_makes_no_trump():
    tl = start()
    play(tl, trick("4C", "KC", "9H", "2C"))                   # hearts ineligible; seat 2 leads
    state = play(tl, trick("5S", "JS", "10H", "QS"))
    assert state["ineligible"] == "H" and state["trump"] is None
    assert state["lead"] == 1                                 # QS (fourth card from seat 2)


def test_first_and_second_suit_can_break_in_the_same_trick():
    tl = start()
    state = play(tl, trick("AS", "2H", "2D", "KS"))
    assert state["ineligible"] == "H" and state["trump"] == "D"
    assert state["lead"] == 3                                 # seat 1 led; 2D (third card) is seat 3's


def test_the_trump_stays_for_the_rest_of_the_hand_and_the_highest_trump_wins():
    tl = start()
    play(tl, trick("AS", "2H", "2D", "KS"))                   # D trump; seat 3 leads
    state = play(tl, trick("AC", "3D", "9D", "2C"))           # a third broken suit changes nothing
    assert state["trump"] == "D" and state["ineligible"] == "H"
    assert state["lead"] == 1                                 # 9D is the third card from seat 3
    state = play(tl, trick("KD", "4D", "3C", "5D"))           # led in trump: highest trump
    assert state["lead"] == 1


def test_a_low_trump_beats_an_ace_of_the_led_suit():
    # Seat 1 leads 2S; AH breaks hearts (ineligible); AC breaks clubs (trump).
    tl = start()
    state = play(tl, trick("2S", "AH", "AC", "AS"))
    assert state["trump"] == "C" and state["lead"] == 3


def test_with_no_trump_only_the_led_suit_can_win():
    tl = start()
    play(tl, trick("2S", "AH", "3S", "4S"))                   # hearts ineligible; 4S: seat 0 leads
    state = play(tl, trick("2C", "KH", "3C", "5C"))
    assert state["trump"] is None and state["lead"] == 3      # 5C wins: KH is no trump


def test_a_hand_of_13_tricks_is_scored_by_the_engine():
    # Each trick holds the four cards of one rank in the order S H D C:
    # hearts break first, diamonds second, so the diamond (third card)
    # wins every trick: seats 3, 1, 3, 1 ... take them.
    tl = start()
    for number, rank in enumerate(RANKS, start=1):
        state = play(tl, trick(*(rank + s for s in SUITS)))
        if number < 13:
            assert state["hands"] == [] and state["tricks_played"] == number
    # Seat 3 takes 2 4 6 8 10 Q A (43 per suit), seat 1 takes 3 5 7 9 J K (48).
    assert state["hands"][0]["points"] == [5, 5, 5, 4 * 43]
    assert state["hands"][0]["totals"][1] == {"S": 48, "H": 48, "D": 48, "C": 48}
    assert state["scores"] == [5, 5, 5, 172]
    # After scoring, the trump tracker is back to the start and the deal passes.
    assert state["trump"] is None and state["ineligible"] is None and state["tricks_played"] == 0
    assert state["dealer"] == 1 and state["lead"] == 2
    # Every card comes back for the next hand.
    play(tl, trick("2S", "3S", "4S", "5S"))


def test_three_players_play_17_tricks_of_3_cards():
    tl = start(3)
    tricks = [DECK3[i:i + 3] for i in range(0, 51, 3)]
    leads, totals = reference_hand(tricks, 1, 3)
    for number, cards in enumerate(tricks, start=1):
        assert tl.public()["lead"] == leads[number - 1]
        state = play(tl, trick(*cards))
        assert len(state["hands"]) == (number == 17)
    assert state["hands"][0]["points"] == list(score_hand(totals))


# -- game end -----------------------------------------------------------------

def test_the_game_ends_when_someone_reaches_the_target_alone_on_top():
    tl = start(target=300)
    state = play(tl, SIMPLE)
    assert not state["finished"]
    state = play(tl, SIMPLE)                                  # seat 3: 344
    assert state["finished"] and state["winner"] == [3]
    # Keys stay as they ended: the last hand's dealer; nobody leads.
    assert state["dealer"] == 1 and state["lead"] is None


def test_a_tie_on_the_highest_total_plays_on():
    # Seats 1 and 3 tie for second in every suit: 80 each, both at the target.
    tl = start(target=80)
    state = play(tl, hand((48, 48, 48, 48), (20, 20, 20, 20), (3, 3, 3, 3), (20, 20, 20, 20)))
    assert state["scores"] == [5, 80, 5, 80]
    assert not state["finished"] and state["winner"] is None
    state = play(tl, SIMPLE)
    assert state["finished"] and state["winner"] == [3]


def test_the_default_target_is_300():
    tl = start()
    play(tl, SIMPLE)                                          # 172
    assert not tl.public()["finished"]
    assert play(tl, SIMPLE)["finished"]                       # 344


def test_undo_after_the_end_and_nothing_else():
    tl = start(target=100)
    play(tl, SIMPLE)
    refused(tl, SIMPLE, GameOver)
    refused(tl, trick("2S", "3S", "4S", "5S"), GameOver)
    assert not play(tl, {"type": "undo"})["finished"]


# -- errors -----------------------------------------------------------------

def test_error_hand_entry_while_a_hand_is_entered_trick_by_trick():
    tl = start()
    play(tl, trick("4C", "KC", "9H", "2C"))
    assert "trick by trick" in refused(tl, SIMPLE, IllegalActionError)
    play(tl, {"type": "undo"}, SIMPLE)


def test_error_repeated_card():
    tl = start()
    play(tl, trick("4C", "KC", "9H", "2C"))
    assert "KC" in refused(tl, trick("5S", "KC", "3D", "QS"), IllegalActionError)
    assert "twice" in refused(tl, trick("5S", "6S", "5S", "QS"), IllegalActionError)


@pytest.mark.parametrize("card", ["qs", "1S", "11H", "QX", "Q", "", "10", "TS", "0S", " QS"])
def test_error_unknown_card(card):
    message = refused(start(), trick(card, "2S", "3S", "4S"), InvalidActionError)
    assert "unknown card" in message


def test_error_the_2_of_diamonds_with_3_players():
    tl = start(3)
    assert "2D" in refused(tl, trick("3D", "2D", "4D"), IllegalActionError)
    play(start(4), trick("3D", "2D", "4D", "5D"))


@pytest.mark.parametrize("cards", [["2S", "3S", "4S"], ["2S", "3S", "4S", "5S", "6S"], []])
def test_error_wrong_number_of_cards(cards):
    refused(start(), trick(*cards), InvalidActionError)


def test_error_a_card_that_is_not_a_string():
    refused(start(), {"type": "trick", "cards": ["2S", 3, "4S", "5S"]}, InvalidActionError)


# -- properties -------------------------------------------------


@given(n=st.sampled_from([3, 4]), dealer=st.integers(0, 3), data=st.data())
@settings(max_examples=150, deadline=None)
def test_trick_entry_and_suit_total_entry_score_the_same(n, dealer, data):
    dealer %= n
    deck = data.draw(st.permutations(DECK3 if n == 3 else DECK4))
    picks = data.draw(st.lists(st.integers(0, 16), min_size=len(deck), max_size=len(deck)))
    per_seat = len(deck) // n
    hands = [list(deck[per_seat * s:per_seat * (s + 1)]) for s in range(n)]
    by_tricks = start(n, first_dealer=dealer)
    pick = iter(picks)
    tricks = []
    for _ in range(per_seat):
        lead = by_tricks.public()["lead"]
        cards = [hands[(lead + i) % n].pop(next(pick) % len(hands[(lead + i) % n])) for i in range(n)]
        tricks.append(cards)
        by_tricks.apply(trick(*cards))
    leads, totals = reference_hand(tricks, (dealer + 1) % n, n)
    assert by_tricks.public()["last_trick"]["cards"] == tricks[-1]
    by_totals = start(n, first_dealer=dealer)
    by_totals.apply(hand(*totals))
    a, b = by_tricks.public(), by_totals.public()
    assert a["hands"] == b["hands"]
    assert a["scores"] == b["scores"] == list(score_hand(totals))
    assert a["dealer"] == b["dealer"] == (dealer + 1) % n
    assert a["trump"] is None and a["ineligible"] is None


@given(n=st.sampled_from([3, 4]), data=st.data())
@settings(max_examples=100, deadline=None)
def test_the_engine_follows_the_reference_lead_trick_by_trick(n, data):
    deck = data.draw(st.permutations(DECK3 if n == 3 else DECK4))
    tricks = [list(deck[i:i + n]) for i in range(0, len(deck) - n, n)]   # all but the last trick
    leads, _ = reference_hand(tricks, 1, n)
    tl = start(n)
    for lead, cards in zip(leads, tricks):
        assert tl.public()["lead"] == lead
        tl.apply(trick(*cards))
