"""Statistics per player name across stored games (companion/stats.py)."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.session import TableSession
from companion.stats import Result, longest_streak, match_scores, player_stats, results_of_store
from companion.store import Store


# -- hand-made stores ------------------------------------------------------------------

@pytest.fixture
def table(tmp_path):
    """A session on a store whose clock ticks one second per call, so the
    order of games is the order in which the test plays them."""
    ticks = itertools.count(1_000_000)
    store = Store(tmp_path / "data", clock=lambda: float(next(ticks)))
    yield TableSession(store)
    store.close()


def play(session, *actions):
    for action in actions:
        session.submit(action)
    return session.game_id


def scoreboard(session, players, target, *adds):
    """A scoreboard game to ``target``; ``adds`` are (seat, points)."""
    return play(session, {"type": "new_game", "game": "scoreboard", "players": list(players),
                          "options": {"target": target}},
                *({"type": "add", "seat": seat, "points": points} for seat, points in adds))


def third_man_won_by_chloe(session, players=("Ann", "Ben", "Chloé", "Dan")):
    """One round to 20: Chloé (seat 2) takes the only token needed."""
    bids = [(0, 9), (1, 7), (2, 5), (3, 2), (2, 6), (0, 8), (3, 7), (1, 0)]
    return play(session, {"type": "new_game", "game": "third-man", "players": list(players),
                          "options": {"tokens_to_win": 1}},
                *({"type": "bid", "seat": seat, "card": card} for seat, card in bids))


def costly_tricks_won_by_first(session, players=("Ann", "Ben")):
    """One hand to win: side 0 takes 5 tricks of 40 points (+100), side 1
    six tricks worth 20 in all (-100)."""
    tricks = [{"type": "trick", "winner": 0, "points": 40}] * 5
    tricks += [{"type": "trick", "winner": 1, "points": p} for p in (5, 5, 5, 5, 0, 0)]
    return play(session, {"type": "new_game", "game": "costly-tricks", "players": list(players),
                          "options": {"hands_to_win": 1}},
                {"type": "deal", "lead": 0}, *tricks)


def by_name(stats):
    return {p["name"]: p for p in stats}


# -- what counts as a win, a score, a game played -----------------------------------------

def test_played_and_won_count_finished_games_only(table):
    scoreboard(table, ["Ann", "Ben"], 10, (0, 10))
    scoreboard(table, ["Ann", "Ben"], 10, (1, 12))
    scoreboard(table, ["Ann", "Ben"], 10, (0, 3))            # left unfinished
    stats = by_name(player_stats(results_of_store(table.store)))
    assert stats["Ann"]["played"] == 2 and stats["Ann"]["won"] == 1
    assert stats["Ann"]["unfinished"] == 1
    assert stats["Ben"]["played"] == 2 and stats["Ben"]["won"] == 1


def test_a_shared_win_is_a_win_for_every_seat_in_winner(table):
    # Target 0: the first add that leaves a score at 0 or more ends the game,
    # and every seat on the highest score wins (rules: scoreboard).
    shared = scoreboard(table, ["Ann", "Ben", "Cat"], 0, (2, -1))
    assert table.store.game(shared).winner == [0, 1]
    scoreboard(table, ["Ann", "Ben", "Cat"], 5, (2, 5))
    stats = by_name(player_stats(results_of_store(table.store)))
    assert (stats["Ann"]["won"], stats["Ben"]["won"], stats["Cat"]["won"]) == (1, 1, 1)
    assert stats["Ann"]["streak"] == 1 and stats["Cat"]["streak"] == 1


def test_ties_on_the_winner_list_count_for_both(table):
    # Hand-made results: winner lists come straight from the store's records.
    results = [
        Result(1, "scoreboard", ("Ann", "Ben", "Cat"), True, (0, 1), (7, 7, 2), 10.0),
        Result(2, "fight", ("Ann", "Ben"), True, (1,), (0, 5), 20.0),
    ]
    stats = by_name(player_stats(results))
    assert stats["Ann"]["won"] == 1 and stats["Ben"]["won"] == 2 and stats["Cat"]["won"] == 0
    # Ordered by wins, then games played, then name.
    assert [p["name"] for p in player_stats(results)] == ["Ben", "Ann", "Cat"]


def test_players_with_the_same_number_of_wins_are_ordered_by_games_then_name():
    results = [
        Result(1, "scoreboard", ("Zoë", "Ann"), True, (0, 1), (3, 3), 1.0),
        Result(2, "scoreboard", ("Zoë", "Dan"), True, (1,), (0, 4), 2.0),
        Result(3, "scoreboard", ("Ben", "Cat"), True, (0, 1), (1, 1), 3.0),
    ]
    ranked = [(p["name"], p["won"], p["played"]) for p in player_stats(results)]
    assert ranked == [("Zoë", 1, 2), ("Ann", 1, 1), ("Ben", 1, 1), ("Cat", 1, 1), ("Dan", 1, 1)]


def test_costly_tricks_winner_is_per_player_and_its_score_is_hands_won(table):
    costly_tricks_won_by_first(table)
    stats = by_name(player_stats(results_of_store(table.store)))
    assert stats["Ann"]["won"] == 1 and stats["Ben"]["won"] == 0
    assert stats["Ann"]["games"]["costly-tricks"]["best"] == 1     # one hand won
    assert stats["Ben"]["games"]["costly-tricks"]["best"] == 0


def test_third_man_scores_are_tokens_and_the_winner_is_the_token_holder(table):
    third_man_won_by_chloe(table)
    stats = by_name(player_stats(results_of_store(table.store)))
    assert stats["Chloé"]["won"] == 1
    assert {name: stats[name]["games"]["third-man"]["best"] for name in stats} == \
        {"Ann": 0, "Ben": 0, "Chloé": 1, "Dan": 0}


def test_fight_winner_and_money_per_seat(table):
    play(table, {"type": "new_game", "game": "fight", "players": ["Ann", "Ben"], "options": {"coins": {"1": 2}}},
         {"type": "turn", "seat": 0, "play": 1, "take": []},
         {"type": "turn", "seat": 1, "play": 1, "take": []},
         {"type": "turn", "seat": 0, "play": 1, "take": []})
    stats = by_name(player_stats(results_of_store(table.store)))
    assert stats["Ben"]["won"] == 1 and stats["Ann"]["won"] == 0
    assert stats["Ben"]["games"]["fight"]["best"] == 1 and stats["Ann"]["games"]["fight"]["best"] == 0


def test_average_and_best_score_per_game_type(table):
    scoreboard(table, ["Ann", "Ben"], 10, (0, 10))                  # Ann 10, Ben 0
    scoreboard(table, ["Ann", "Ben"], 10, (1, 12))                  # Ann 0, Ben 12
    scoreboard(table, ["Ann", "Ben"], 10, (0, 5), (1, 3), (0, 6))   # Ann 11, Ben 3
    third_man_won_by_chloe(table, players=("Ann", "Ben", "Cat", "Dan"))
    ann = by_name(player_stats(results_of_store(table.store)))["Ann"]
    assert ann["games"]["scoreboard"] == {"played": 3, "won": 2, "average": 7.0, "best": 11, "streak": 1}
    assert ann["games"]["third-man"]["played"] == 1 and ann["games"]["third-man"]["average"] == 0.0
    assert ann["played"] == 4 and ann["won"] == 2


def test_average_is_rounded_to_two_decimals():
    results = [Result(i, "fight", ("Ann", "Ben"), True, (0,), (s, 0), float(i)) for i, s in enumerate((1, 1, 2))]
    assert by_name(player_stats(results))["Ann"]["games"]["fight"]["average"] == 1.33


# -- streaks -------------------------------------------------------------------------------

def test_longest_winning_streak_in_chronological_order(table):
    # Ann: win, win, loss, win, win, win -> 3 (Ben plays only some of them).
    for winner in (0, 0, 1, 0, 0, 0):
        scoreboard(table, ["Ann", "Ben"], 1, (winner, 1))
    stats = by_name(player_stats(results_of_store(table.store)))
    assert stats["Ann"]["streak"] == 3
    assert stats["Ben"]["streak"] == 1


def test_the_streak_follows_time_not_game_numbers():
    # Game 3 ended first: in time order Ann goes loss, win, win.
    results = [Result(1, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 20.0),
               Result(2, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 30.0),
               Result(3, "fight", ("Ann", "Ben"), True, (1,), (0, 1), 10.0)]
    assert by_name(player_stats(results))["Ann"]["streak"] == 2
    shuffled = [results[1], results[2], results[0]]
    assert by_name(player_stats(shuffled))["Ann"]["streak"] == 2


def test_games_a_player_did_not_play_do_not_break_the_streak():
    results = [Result(1, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 1.0),
               Result(2, "fight", ("Cat", "Dan"), True, (0,), (1, 0), 2.0),   # Ann not there
               Result(3, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 3.0)]
    assert by_name(player_stats(results))["Ann"]["streak"] == 2


def test_unfinished_games_neither_extend_nor_break_a_streak():
    results = [Result(1, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 1.0),
               Result(2, "fight", ("Ann", "Ben"), False, (), None, 2.0),
               Result(3, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 3.0)]
    ann = by_name(player_stats(results))["Ann"]
    assert ann["streak"] == 2 and ann["played"] == 2 and ann["unfinished"] == 1


def test_streak_per_game_type_counts_only_that_game():
    results = [Result(1, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 1.0),
               Result(2, "yenta", ("Ann", "Ben"), True, (1,), (0, 1), 2.0),
               Result(3, "fight", ("Ann", "Ben"), True, (0,), (1, 0), 3.0)]
    ann = by_name(player_stats(results))["Ann"]
    assert ann["streak"] == 1
    assert ann["games"]["fight"]["streak"] == 2 and ann["games"]["yenta"]["streak"] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=40))
def test_longest_streak_is_the_longest_run_of_wins(wins):
    expected = max((len(run) for run in "".join("W" if w else "L" for w in wins).split("L")), default=0)
    assert longest_streak(wins) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Ann", "Ben", "Cat"]), st.booleans()), max_size=30))
def test_wins_never_exceed_games_played_and_streak_never_exceeds_wins(games):
    results = []
    for i, (name, won) in enumerate(games):
        other = "Zed"
        results.append(Result(i, "fight", (name, other), True, (0,) if won else (1,), (1, 0), float(i)))
    for entry in player_stats(results):
        assert 0 <= entry["streak"] <= entry["won"] <= entry["played"]
        assert sum(g["played"] for g in entry["games"].values()) == entry["played"]


# -- names ------------------------------------------------------------------------------------

def test_a_name_is_one_player_whatever_its_unicode_form_or_case():
    decomposed = unicodedata.normalize("NFD", "Chloé")
    results = [Result(1, "fight", ("Chloé", "Ben"), True, (0,), (1, 0), 1.0),
               Result(2, "fight", (decomposed, "Ben"), True, (0,), (1, 0), 2.0),
               Result(3, "fight", ("chloé", "Ben"), True, (0,), (1, 0), 3.0)]
    stats = player_stats(results)
    chloe = [p for p in stats if p["name"] != "Ben"]
    assert len(chloe) == 1
    assert chloe[0]["played"] == 3 and chloe[0]["streak"] == 3
    assert chloe[0]["name"] == "chloé"       # the spelling of the latest game


def test_match_scores_uses_tokens_only_for_token_games():
    assert match_scores({"game": "third-man", "scores": [3, 1, 22, 0], "tokens": [0, 0, 1, 0]}) == (0, 0, 1, 0)
    assert match_scores({"game": "costly-tricks", "scores": [0, 0], "tokens": [2, 3]}) == (2, 3)
    assert match_scores({"game": "scoreboard", "scores": [5, 1], "tokens": [9, 9]}) == (5, 1)
    assert match_scores(None) is None and match_scores({"game": None}) is None


def test_an_empty_store_has_no_statistics(table):
    assert player_stats(results_of_store(table.store)) == []
