"""FIGHT? / FIGHT MORE? (rules.md §3) and its solver, read like the rulebook."""

from __future__ import annotations

import json
import random
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from companion import fight_solver as solver
from companion.errors import IllegalActionError, InvalidActionError
from companion.games import fight
from companion.timeline import ReplayError, Timeline, replay

STANDARD = {"20": 1, "10": 2, "5": 3, "1": 4}


def start(players=2, **options) -> Timeline:
    timeline = Timeline()
    action = {"type": "new_game", "game": "fight", "players": [f"P{i}" for i in range(players)]}
    if options:
        action["options"] = options
    timeline.apply(action)
    return timeline


def turn(timeline: Timeline, seat: int, play: int, take=None) -> dict:
    action = {"type": "turn", "seat": seat, "play": play}
    if take is not None:
        action["take"] = take
    timeline.apply(action)
    return timeline.public()


def refused(timeline: Timeline, action: dict, kind=IllegalActionError) -> str:
    before = timeline.public()
    with pytest.raises(kind) as info:
        timeline.apply(action)
    assert timeline.public() == before       # a refused action changes nothing
    return str(info.value)


# -- setting up ------------------------------------------------------------------

def test_each_seat_starts_with_one_20_two_10s_three_5s_four_1s():
    view = start(3).public()
    assert view["coins"] == [STANDARD] * 3
    assert view["scores"] == [59, 59, 59]
    assert view["table"] == {"20": 0, "10": 0, "5": 0, "1": 0}
    assert (view["turn"], view["out"], view["finished"], view["winner"]) == (0, [], False, None)


def test_public_view_has_exactly_the_replay_keys():
    assert set(start().public()) == {"game", "players", "scores", "coins", "table", "turn", "out",
                                     "finished", "winner"}


@pytest.mark.parametrize("players", [1, 7])
def test_two_to_six_players(players):
    with pytest.raises(InvalidActionError):
        start(players)


@pytest.mark.parametrize("players", [2, 6])
def test_two_and_six_players_are_fine(players):
    assert start(players).public()["scores"] == [59] * players


def test_option_coins_replaces_the_set_and_lists_every_value():
    view = start(2, coins={"1": 4, "4": 3, "7": 2, "13": 1}).public()
    assert view["coins"][0] == {"13": 1, "7": 2, "4": 3, "1": 4}
    assert view["table"] == {"13": 0, "7": 0, "4": 0, "1": 0}
    assert view["scores"] == [43, 43]


def test_a_value_with_zero_coins_is_in_the_set_but_nobody_holds_it():
    timeline = start(2, coins={"10": 0, "1": 2})
    assert timeline.public()["coins"][0] == {"10": 0, "1": 2}
    assert "holds no 10" in refused(timeline, {"type": "turn", "seat": 0, "play": 10})


@pytest.mark.parametrize("coins", [{}, {"1": 0}, {"05": 1}, {"0": 1}, {"-1": 1}, {"x": 1}, {"1.5": 1},
                                   {"10000": 1}, {"1": -1}, {"1": 100}, {"1": True}, {"1": 1.0}, [1]])
def test_a_bad_coin_set_is_refused(coins):
    with pytest.raises(InvalidActionError):
        start(2, coins=coins)


def test_presets_are_fight_more_variants():
    assert fight.PRESETS["standard"] == STANDARD
    assert "10" not in fight.PRESETS["no-tens"]
    fewer = fight.PRESETS["fewer"]
    assert fewer["5"] < 3 and fewer["1"] < 4
    assert fight.PRESETS["odd"] == {"1": 4, "4": 3, "7": 2, "13": 1}
    for coins in fight.PRESETS.values():
        assert start(2, coins=dict(coins)).public()["coins"][0] == coins


def test_option_first_chooses_the_opening_seat():
    timeline = start(3, first=2)
    assert timeline.public()["turn"] == 2
    assert turn(timeline, 2, 1)["turn"] == 0            # then on in seat order, wrapping
    with pytest.raises(InvalidActionError):
        start(2, first=2)


def test_unknown_option_is_refused():
    with pytest.raises(InvalidActionError):
        start(2, target=3)


# -- a turn ----------------------------------------------------------------------

def test_turns_pass_in_seat_order():
    timeline = start(3)
    assert [turn(timeline, s, 1)["turn"] for s in (0, 1, 2)] == [1, 2, 0]


def test_play_then_take_change_worth_at_most_played_minus_1():
    timeline = start(3)
    turn(timeline, 0, 10, [])
    turn(timeline, 1, 5, [])
    view = turn(timeline, 2, 20, [10, 5])                # 15 <= 19
    assert view["scores"] == [49, 54, 54]
    assert view["coins"][2] == {"20": 0, "10": 3, "5": 4, "1": 4}
    assert view["table"] == {"20": 1, "10": 0, "5": 0, "1": 0}


def test_change_may_be_exactly_played_minus_1():
    timeline = start(2)
    for seat, coin in [(0, 5), (1, 1), (0, 1), (1, 1), (0, 1)]:
        turn(timeline, seat, coin)                      # table: 5 + 1 + 1 + 1 + 1 = 9
    view = turn(timeline, 1, 10, [5, 1, 1, 1, 1])        # 9 = 10 - 1
    assert view["table"] == {"20": 0, "10": 1, "5": 0, "1": 0}
    assert view["scores"] == [52, 56]


def test_take_may_be_omitted():
    view = turn(start(), 0, 20)
    assert view["scores"] == [39, 59] and view["table"]["20"] == 1


def test_change_worth_more_than_played_minus_1_is_refused():
    timeline = start(2)
    turn(timeline, 0, 5)
    turn(timeline, 1, 5)
    message = refused(timeline, {"type": "turn", "seat": 0, "play": 10, "take": [5, 5]})
    assert "worth 10 is more than 9" in message


def test_the_played_coin_cannot_be_taken_back():
    # It lands on the table first, but alone it is worth more than played - 1.
    message = refused(start(), {"type": "turn", "seat": 0, "play": 5, "take": [5]})
    assert "worth 5 is more than 4" in message


def test_change_the_table_does_not_hold_is_refused():
    timeline = start(2)
    turn(timeline, 0, 1)
    message = refused(timeline, {"type": "turn", "seat": 1, "play": 5, "take": [1, 1]})
    assert "holds 1 coin(s) of 1" in message


def test_a_coin_the_player_does_not_hold_is_refused():
    timeline = start(2)
    turn(timeline, 0, 20)
    turn(timeline, 1, 1)
    message = refused(timeline, {"type": "turn", "seat": 0, "play": 20, "take": []})
    assert "P0 (seat 1) holds no 20 coin" in message          # people count seats from 1


@pytest.mark.parametrize("action", [
    {"type": "turn", "seat": 0, "play": 3, "take": []},
    {"type": "turn", "seat": 0, "play": 0},
    {"type": "turn", "seat": 0, "play": 10, "take": [2]},
])
def test_a_coin_value_not_in_the_set_is_refused(action):
    assert "there is no" in refused(start(), action)


def test_no_tens_in_the_no_tens_variant():
    timeline = start(2, coins=dict(fight.PRESETS["no-tens"]))
    assert "no 10 coin in this game" in refused(timeline, {"type": "turn", "seat": 0, "play": 10})


def test_not_that_seats_turn_is_refused():
    timeline = start(3)
    message = refused(timeline, {"type": "turn", "seat": 1, "play": 1})
    assert "not seat 2's turn" in message and "seat 1 (P0)" in message      # people count seats from 1


@pytest.mark.parametrize("action, kind", [
    ({"type": "turn", "seat": 5, "play": 1}, InvalidActionError),
    ({"type": "turn", "seat": 0, "play": 1.0}, InvalidActionError),
    ({"type": "turn", "seat": 0, "play": True}, InvalidActionError),
    ({"type": "turn", "seat": 0, "play": 1, "take": 1}, InvalidActionError),
    ({"type": "turn", "seat": 0, "play": 1, "take": ["1"]}, InvalidActionError),
    ({"type": "turn", "seat": 0, "play": 1, "coin": 1}, InvalidActionError),
    ({"type": "turn", "seat": 0}, InvalidActionError),
])
def test_malformed_turns_are_refused(action, kind):
    refused(start(), action, kind)


# -- out, skipped, the last purse wins ---------------------------------------------

def test_a_player_with_no_coins_is_out_and_skipped():
    timeline = start(3, coins={"5": 1, "1": 1})
    for seat in (0, 1, 2):
        turn(timeline, seat, 1)
    view = turn(timeline, 0, 5, [])                     # its last coin, no change: out
    assert view["out"] == [0] and view["coins"][0] == {"5": 0, "1": 0} and view["turn"] == 1
    turn(timeline, 1, 5, [1])
    view = turn(timeline, 2, 5, [1])
    assert view["turn"] == 1                             # seat 0 is skipped
    assert "not seat 1's turn" in refused(timeline, {"type": "turn", "seat": 0, "play": 1})


def test_out_lists_seats_in_the_order_they_went_out():
    timeline = start(4, coins={"1": 1}, first=2)
    turn(timeline, 2, 1)
    turn(timeline, 3, 1)
    view = turn(timeline, 0, 1)
    assert view["out"] == [2, 3, 0]
    assert view["winner"] == [1] and view["turn"] is None and view["finished"] is True


def test_the_last_player_holding_coins_wins_and_the_game_is_over():
    timeline = start(2, coins={"1": 2})
    turn(timeline, 0, 1)
    turn(timeline, 1, 1)
    view = turn(timeline, 0, 1)
    assert view["scores"] == [0, 1] and view["out"] == [0]
    assert (view["winner"], view["turn"], view["finished"]) == ([1], None, True)
    assert "game is over" in refused(timeline, {"type": "turn", "seat": 1, "play": 1})
    timeline.apply({"type": "undo"})                    # undo is still allowed
    assert timeline.public()["turn"] == 0 and timeline.public()["winner"] is None


def test_a_seat_view_shows_nothing_secret():
    timeline = start(2)
    assert timeline.private(1) == dict(timeline.public(), seat=1)


# -- change helpers ------------------------------------------------------------------

def test_legal_changes_largest_first_fewest_coins_first():
    table = {"10": 1, "5": 2, "1": 3}
    changes = fight.legal_changes(table, 20)
    assert changes[0] == [10, 5, 1, 1, 1]               # 18: the most the table can make
    assert changes[-1] == []
    worths = [sum(c) for c in changes]
    assert worths == sorted(worths, reverse=True)
    assert changes.index([10]) < changes.index([5, 5])  # same worth: fewer coins first
    assert len(changes) == len({tuple(c) for c in changes})
    assert all(sum(c) <= 19 for c in changes)
    assert fight.largest_change(table, 5) == [1, 1, 1]
    assert fight.largest_change({5: 1, 1: 4}, 5) == [1, 1, 1, 1]  # int keys too


def test_legal_changes_never_offer_the_played_coin():
    assert fight.legal_changes({"5": 3}, 5) == [[]]
    assert fight.legal_changes({"5": 3, "1": 0}, 1) == [[]]


@given(st.dictionaries(st.sampled_from([1, 2, 3, 5, 7, 10]), st.integers(0, 3), max_size=4),
       st.sampled_from([1, 4, 6, 10, 20]))
@settings(max_examples=150, deadline=None)
def test_legal_changes_are_every_affordable_sub_multiset(table, played):
    coins = [v for v, n in table.items() for _ in range(n)]
    expected = {tuple(sorted(c, reverse=True)) for r in range(len(coins) + 1)
                for c in combinations(coins, r) if sum(c) <= played - 1}
    got = fight.legal_changes(table, played)
    assert {tuple(c) for c in got} == expected and len(got) == len(expected)


# -- properties ------------------------------------------------------------------------

coin_sets = st.dictionaries(st.sampled_from(["1", "2", "3", "4", "5", "7", "10", "13", "20"]),
                            st.integers(0, 3), min_size=1, max_size=5).filter(lambda c: sum(c.values()) > 0)


@given(coin_sets, st.integers(2, 6), st.data())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_money_is_kept_players_money_falls_and_the_game_ends(coins, players, data):
    timeline = start(players, coins=coins, first=data.draw(st.integers(0, players - 1)))
    view = timeline.public()
    total = sum(view["scores"])
    for turns in range(total + 1):
        if view["finished"]:
            break
        seat = view["turn"]
        assert seat not in view["out"] and view["scores"][seat] > 0
        play = data.draw(st.sampled_from(sorted(int(v) for v, n in view["coins"][seat].items() if n)))
        take = data.draw(st.sampled_from(fight.legal_changes(view["table"], play)))
        after = turn(timeline, seat, play, take)
        money = lambda v: sum(v["scores"]) + sum(int(k) * n for k, n in v["table"].items())
        assert money(after) == total                                  # coins only move
        assert after["scores"][seat] < view["scores"][seat]          # the mover's money falls
        assert sum(after["scores"]) < sum(view["scores"])            # so does all money held
        assert after["out"] == view["out"] + ([seat] if after["scores"][seat] == 0 else [])
        view = after
    assert view["finished"] and turns <= total                        # the game always ends
    (winner,) = view["winner"]
    assert view["scores"][winner] > 0 and sum(view["scores"]) == view["scores"][winner]
    assert sorted(view["out"] + [winner]) == list(range(players)) and view["turn"] is None


@given(st.integers(1, 20), st.lists(st.sampled_from([1, 5, 10, 20]), max_size=6))
@settings(max_examples=150, deadline=None)
def test_any_change_the_table_holds_is_legal_iff_worth_at_most_played_minus_1(play_index, take):
    timeline = start(2)
    for seat, coin in [(0, 5), (1, 5), (0, 1), (1, 1), (0, 10), (1, 1)]:
        turn(timeline, seat, coin)                  # table: 10, 5, 5, 1, 1, 1
    play = [1, 5, 10, 20][play_index % 4]
    table = {10: 1, 5: 2, 1: 3}
    table[play] = table.get(play, 0) + 1
    holdable = all(take.count(v) <= table.get(v, 0) for v in set(take))
    action = {"type": "turn", "seat": 0, "play": play, "take": take}
    if holdable and sum(take) <= play - 1:
        assert turn(timeline, 0, play, take)["scores"][0] == 59 - 5 - 1 - 10 - play + sum(take)
    else:
        refused(timeline, action)


# -- the solver: checked against a plain minimax ------------------------------------

def brute_force(coins: dict) -> dict:
    """Every reachable two-player position -> (mover wins, turns left), by
    naive minimax over lists of coin values (winner quickest, loser slowest)."""
    memo: dict = {}

    def value(mover, other, table):
        if not other:
            return True, 0
        key = (mover, other, table)
        if key not in memo:
            results = []
            for coin in set(mover):
                rest = list(mover)
                rest.remove(coin)
                board = list(table) + [coin]
                takes = {c for r in range(len(board) + 1) for c in combinations(sorted(board), r)
                         if sum(c) <= coin - 1}
                for take in takes:
                    left, mine = list(board), rest + list(take)
                    for c in take:
                        left.remove(c)
                    won, turns = value(other, tuple(sorted(mine)), tuple(sorted(left)))
                    results.append((not won, turns + 1))
            wins = [t for w, t in results if w]
            memo[key] = (True, min(wins)) if wins else (False, max(t for _, t in results))
        return memo[key]

    purse = tuple(sorted(int(v) for v, n in coins.items() for _ in range(n)))
    value(purse, purse, ())
    return memo


def as_position(values, mover, other, table) -> solver.Position:
    count = lambda coins: tuple(coins.count(v) for v in values)
    return solver.Position(values, count(mover), count(other), count(table))


@pytest.mark.parametrize("coins", [{"1": 2, "3": 1}, {"1": 3, "4": 1}, {"2": 1, "5": 1, "1": 2},
                                   {"1": 2, "4": 1, "7": 1}, {"1": 3}])
def test_solver_agrees_with_plain_minimax_on_every_reachable_position(coins):
    values = tuple(sorted((int(v) for v in coins), reverse=True))
    expected = brute_force(coins)
    assert expected
    for (mover, other, table), (won, turns) in expected.items():
        position = as_position(values, mover, other, table)
        duel = solver.duel_for(position)
        got = duel.turns_left(duel.encode(position.mover), duel.encode(position.other))
        assert (got % 2 == 0, got) == (won, turns), (mover, other, table)
    start_value = solver.solve(coins)
    purse = tuple(sorted(int(v) for v, n in coins.items() for _ in range(n)))
    assert (start_value["result"] == "win", start_value["turns"]) == expected[(purse, purse, ())]


def test_default_start_solved_from_a_cold_memo():
    # How long it takes is a figure of the bench (fight_solve_cold_s), not a test.
    values, totals = (20, 10, 5, 1), (2, 4, 6, 8)
    cold = solver.Duel(values, totals)           # a fresh memo, not the shared one
    turns = cold.turns_left(cold.encode((1, 2, 3, 4)), cold.encode((1, 2, 3, 4)))
    assert turns == solver.solve(STANDARD)["turns"] == 49
    assert turns % 2 == 1                        # the first player loses with perfect play


def test_default_start_value_is_consistent_on_random_reachable_positions():
    # The plain minimax is too slow for the full set: check the recurrence instead.
    start_position = solver.Position.start(STANDARD)
    duel = solver.duel_for(start_position)
    rng = random.Random(2024)
    checked = 0
    for _game in range(40):
        a, b = duel.encode(start_position.mover), duel.encode(start_position.other)
        while b:
            here = duel.turns_left(a, b)
            children = [duel.turns_left(b, a + delta)
                        for i in duel.held(a) for delta in duel.changes(i, duel.total - a - b)]
            losing_for_them = [c for c in children if c % 2 == 1]
            assert (here % 2 == 0) == bool(losing_for_them)   # win iff a move leaves them lost
            assert here == 1 + (min(losing_for_them) if losing_for_them else max(children))
            checked += 1
            i = rng.choice(duel.held(a))
            a, b = b, a + rng.choice(duel.changes(i, duel.total - a - b))
    assert checked > 400


# -- hints ---------------------------------------------------------------------------

def test_hint_on_a_winning_position_wins():
    # P1 to move: 5 and 1 against a lone 1 - playing the 1 leaves P0 to play its last coin.
    position = solver.Position((5, 1), (1, 1), (0, 1), (0, 0))
    hint = solver.hint(position)
    assert hint and hint.exact and hint.result == "win"
    assert (hint.play, hint.take, hint.turns) == (1, (), 2)


def test_hint_on_a_losing_position_survives_longest():
    hint = solver.hint(solver.Position.start(STANDARD))
    assert (hint.result, hint.play, hint.take, hint.turns) == ("lose", 1, (), 49)


def test_hint_from_state_and_public_view_agree_and_are_legal():
    timeline = start(2)
    turn(timeline, 0, 5)
    from_state, from_view = solver.hint(timeline.state), solver.hint(timeline.public())
    assert from_state == from_view and from_state.seat == 1
    assert from_state.result == "win"                 # opening with the 5 still loses for P0
    timeline.apply(from_state.action())               # the hint is a legal move


def test_hint_for_two_players_left_of_more_is_exact():
    timeline = start(3, coins={"5": 1, "1": 1})
    for seat in (0, 1, 2):
        turn(timeline, seat, 1)
    turn(timeline, 0, 5, [])                          # seat 0 out: a duel of seats 1 and 2
    hint = solver.hint(timeline.state)
    assert hint.exact and hint.seat == 1
    timeline.apply(hint.action())


def test_coalition_hint_for_three_players_is_labelled():
    timeline = start(3, coins={"5": 1, "1": 1})
    hint = solver.hint(timeline.state)
    assert hint and not hint.exact and hint.result in ("win", "lose") and hint.reason
    timeline.apply(hint.action())


def test_coalition_win_is_found():
    # Mover holds 5 and 1, the two others a single 1 each: both run dry first.
    state = fight.Fight(("A", "B", "C"), (5, 1), ((1, 1), (0, 1), (0, 1)), (0, 0), 0)
    hint = solver.hint(state)
    assert (hint.result, hint.turns, hint.exact) == ("win", 3, False)


def brute_force_coalition(coins: dict, players: int) -> tuple[bool, int]:
    """Seat 0 against all the others as one team, by naive minimax: (seat 0
    wins, turns).  Seat 0 wins fast or loses slowly; the team the reverse."""
    memo: dict = {}

    def value(purses, table, k):
        key = (purses, table, k)
        if key not in memo:
            results = []
            for coin in set(purses[k]):
                rest = list(purses[k])
                rest.remove(coin)
                board = list(table) + [coin]
                for take in {c for r in range(len(board) + 1) for c in combinations(sorted(board), r)
                             if sum(c) <= coin - 1}:
                    left = list(board)
                    for c in take:
                        left.remove(c)
                    after = purses[:k] + (tuple(sorted(rest + list(take))),) + purses[k + 1:]
                    if not after[0]:
                        results.append((False, 1))
                    elif not any(after[1:]):
                        results.append((True, 1))
                    else:
                        nxt = next(s for s in [(k + i) % players for i in range(1, players + 1)] if after[s])
                        won, turns = value(after, tuple(sorted(left)), nxt)
                        results.append((won, turns + 1))
            rank = lambda r: -r[1] if r[0] else r[1] - 10**6    # how good for seat 0
            memo[key] = max(results, key=rank) if k == 0 else min(results, key=rank)
        return memo[key]

    purse = tuple(sorted(int(v) for v, n in coins.items() for _ in range(n)))
    return value((purse,) * players, (), 0)


@pytest.mark.parametrize("coins, players", [({"1": 2, "3": 1}, 3), ({"1": 1, "2": 1}, 3), ({"1": 2}, 4),
                                            ({"2": 1, "1": 2}, 3), ({"4": 1, "1": 2}, 3)])
def test_coalition_agrees_with_plain_minimax(coins, players):
    won, turns = brute_force_coalition(coins, players)
    value = solver.solve(coins, players)
    assert (value["result"] == "win", value["turns"], value["exact"]) == (won, turns, False)


def test_no_hint_when_three_players_is_too_large():
    # The search stops at its node budget (COALITION_BUDGET), not at a clock.
    hint = solver.hint(start(3).state)
    assert not hint and hint.play is None and "too large" in hint.reason


def test_no_hint_after_the_end():
    timeline = start(2, coins={"1": 1})
    turn(timeline, 0, 1)
    hint = solver.hint(timeline.public())
    assert not hint and "over" in hint.reason


def test_hint_refuses_other_things():
    with pytest.raises(TypeError):
        solver.hint({"game": "scoreboard"})


# -- companion solve fight ----------------------------------------------------------

def test_solve_cli_prints_the_value_and_best_first_moves(capsys):
    assert solver.solve_cli(["fight"]) == 0
    out = capsys.readouterr().out
    assert "first player loses" in out and "49 turns" in out and "Best first moves: play 1" in out


def test_solve_cli_json_for_a_preset(capsys):
    assert solver.solve_cli(["fight", "--preset", "fewer", "--json"]) == 0
    value = json.loads(capsys.readouterr().out)
    assert value["exact"] is True and value["coins"] == fight.PRESETS["fewer"]
    assert value["result"] in ("win", "lose") and value["best"]


def test_solve_cli_coins_and_players(capsys):
    assert solver.solve_cli(["fight", "--coins", "3:1,1:2", "--players", "3", "--json"]) == 0
    value = json.loads(capsys.readouterr().out)
    assert value["exact"] is False and value["players"] == 3


def test_solve_cli_too_large_exits_1(capsys):
    assert solver.solve_cli(["fight", "--players", "3", "--max-positions", "500"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "too large" in err


@pytest.mark.parametrize("argv", [[], ["chess"], ["fight", "--coins", "20"], ["fight", "--coins", "a:1"],
                                  ["fight", "--coins", "1:0"], ["fight", "--preset", "huge"],
                                  ["fight", "--players", "7"], ["fight", "--coins", "1:1", "--preset", "odd"],
                                  ["fight", "--coins", "1:1,1:2"], ["fight", "--bogus"]])
def test_solve_cli_usage_errors_exit_2_with_one_line(argv, capsys):
    assert solver.solve_cli(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("companion solve: error:") and "Traceback" not in captured.err
