"""A Swiss tournament of The Third Man, seated by the hub and played at its boxes."""

from __future__ import annotations

import subprocess
from itertools import combinations

from hub_support import add_box, hub_db, hub_server, pg_server, third_man_log  # noqa: F401 (fixtures)
from web_support import http

TOKENS_BY_SEAT = [3, 2, 1, 0]       # every table ends the same way: seat 0 takes the match


def assignment(server, key):
    status, _, body = http(server.port, "GET", "/api/box/assignment", headers={"Authorization": f"Bearer {key}"})
    assert status == 200
    return body["assignment"]


def play_round(server, keys, game_numbers):
    """Each box plays the table the hub offers it; returns the seating {box: players}."""
    seating = {}
    for box, key in keys.items():
        offer = assignment(server, key)
        if offer is None:
            continue
        seating[box] = offer["players"]
        game_numbers[box] = game_numbers.get(box, 0) + 1
        log = third_man_log(offer["players"], TOKENS_BY_SEAT)
        status, _, body = http(server.port, "POST", f"/api/box/games/{game_numbers[box]}/lines",
                               {"from": 0, "lines": log, "finished": True}, {"Authorization": f"Bearer {key}"})
        assert status == 200, body
        assert body["assignment"] is None        # the table has its result: nothing more to offer
    return seating


def hub_cmd(companion_cmd, server, *args):
    out = subprocess.run([*companion_cmd, "hub", *args, "--db", server.db], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in out.stderr
    return out


def test_twelve_players_three_rounds(hub_server, companion_cmd):
    from hub import tournament
    from hub.db import connect

    keys = {name: add_box(hub_server.db, name) for name in ("t1", "t2", "t3")}
    players = [f"P{i:02}" for i in range(1, 13)]
    out = hub_cmd(companion_cmd, hub_server, "tournament", "create", "Autumn cup", "--game", "third-man",
                  "--players", ",".join(players), "--boxes", "t1,t2,t3")
    assert out.returncode == 0 and "Tournament 1 created" in out.stdout, out.stderr
    assert all(assignment(hub_server, k) is None for k in keys.values())
    numbers: dict = {}

    # Round 1: nobody has points or a rating yet, so the Swiss order is by name.
    assert hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1").returncode == 0
    offer = assignment(hub_server, keys["t2"])
    assert offer == {"tournament": 1, "round": 1, "table": 2, "game": "third-man",
                     "players": ["P05", "P06", "P07", "P08"]}
    again = hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1")
    assert again.returncode == 1 and "without a result" in again.stderr
    assert play_round(hub_server, keys, numbers) == {
        "t1": ["P01", "P02", "P03", "P04"], "t2": ["P05", "P06", "P07", "P08"], "t3": ["P09", "P10", "P11", "P12"]}

    # Round 2, by hand: points 3 (P01, P05, P09), 2 (P02, P06, P10), 1, 0; equal
    # points have equal ratings here (the same result at each table), so names
    # decide.  Table 1 takes P01, P05, P09, then P02 (everyone left has met one
    # of them: the first in order).  Table 2: P06, P10, P03 (strangers), then
    # P07 (all the rest have met one of them).  Table 3: the rest.
    assert hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1").returncode == 0
    assert play_round(hub_server, keys, numbers) == {
        "t1": ["P01", "P05", "P09", "P02"], "t2": ["P06", "P10", "P03", "P07"], "t3": ["P11", "P04", "P08", "P12"]}
    after_two = {"P01": 6, "P05": 5, "P06": 5, "P09": 4, "P10": 4, "P11": 4,
                 "P02": 2, "P03": 2, "P04": 2, "P07": 1, "P08": 1, "P12": 0}
    with connect(hub_server.db) as conn:
        assert {s["name"]: s["points"] for s in tournament.standings(conn, 1)} == after_two

    # Round 3: ties are now broken by league rating, which we do not work out by
    # hand; the seating must still be whole, and no pair meets a third time.
    assert hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1").returncode == 0
    third = play_round(hub_server, keys, numbers)
    assert sorted(n for table in third.values() for n in table) == players
    earlier = [["P01", "P02", "P03", "P04"], ["P05", "P06", "P07", "P08"], ["P09", "P10", "P11", "P12"],
               ["P01", "P05", "P09", "P02"], ["P06", "P10", "P03", "P07"], ["P11", "P04", "P08", "P12"]]
    for table in third.values():
        for a, b in combinations(table, 2):
            assert sum(a in t and b in t for t in earlier) < 2, (a, b)
    expected = dict(after_two)
    for table in third.values():
        for seat, name in enumerate(table):
            expected[name] += TOKENS_BY_SEAT[seat]

    status, _, view = http(hub_server.port, "GET", "/api/tournaments/1")
    assert status == 200 and view["round"] == 3 and len(view["rounds"]) == 3
    final = view["standings"]
    assert {s["name"]: s["points"] for s in final} == expected
    assert [s["points"] for s in final] == sorted(expected.values(), reverse=True)
    assert sum(s["points"] for s in final) == 3 * 3 * sum(TOKENS_BY_SEAT)
    assert all(s["played"] == 3 and s["byes"] == 0 for s in final)
    assert final[0]["name"] == "P01" and final[0]["points"] == 6 + TOKENS_BY_SEAT[third["t1"].index("P01")]
    status, _, html = http(hub_server.port, "GET", "/tournaments/1")
    assert status == 200 and b"Round 3" in html and b"P12" in html


def test_byes_go_round_and_late_arrivals_join_the_next_round(hub_server):
    from hub import tournament
    from hub.db import HubError, connect

    key = add_box(hub_server.db, "t1")
    with connect(hub_server.db) as conn:
        tid = tournament.create(conn, "Small", "third-man", ["P1", "P2", "P3", "P4", "P5"], ["t1"])
        tournament.seat_round(conn, tid)
    assert assignment(hub_server, key)["players"] == ["P1", "P2", "P3", "P4"]
    with connect(hub_server.db) as conn:
        assert tournament.view(conn, tid)["rounds"][0]["byes"] == ["P5"]
        assert tournament.join(conn, tid, "P6") == 2       # arrives during round 1
    play_round(hub_server, {"t1": key}, {})
    with connect(hub_server.db) as conn:
        tournament.seat_round(conn, tid)
        second = tournament.view(conn, tid)["rounds"][1]
        seated = second["tables"][0]["players"]
        # Six players, one table: two byes, never P5 again while others have had none.
        assert len(seated) == 4 and len(second["byes"]) == 2 and "P5" not in second["byes"]
        assert "P6" in seated + second["byes"]
        points = {s["name"]: s["points"] for s in tournament.standings(conn, tid)}
        assert points["P5"] == tournament.BYE_POINTS and points["P1"] == 3 + (tournament.BYE_POINTS if "P1" in second["byes"] else 0)
        try:
            tournament.create(conn, "Bad", "third-man", ["A", "B"], ["nowhere"])
        except HubError as exc:
            assert "nowhere" in str(exc)
        else:
            raise AssertionError("a tournament at an unknown box was created")


def _brute_force(n, size, met):
    """Every split of 0 … n-1 into tables of ``size``: the fewest repeats."""
    def splits(left):
        if not left:
            yield []
            return
        for combo in combinations(left[1:], size - 1):
            table = (left[0], *combo)
            rest = [p for p in left if p not in table]
            for more in splits(rest):
                yield [table, *more]
    return min(sum(met(a, b) for t in s for a, b in combinations(t, 2)) for s in splits(list(range(n))))


def test_seating_makes_the_fewest_repeat_pairings_there_are():
    import random

    from hub.tournament import seat_tables

    rng = random.Random(5)
    for n, size in ((12, 4), (8, 4), (12, 3), (10, 2), (12, 2), (9, 3)):
        for _ in range(4):
            history = {frozenset(p): rng.choice([0, 0, 1, 1, 2]) for p in combinations(range(n), 2)}
            met = lambda i, j: history[frozenset((i, j))]  # noqa: E731
            tables, repeats, exact = seat_tables(n, [size] * (n // size), met)
            assert exact and sorted(p for t in tables for p in t) == list(range(n))
            assert repeats == sum(met(a, b) for t in tables for a, b in combinations(t, 2))
            assert repeats == _brute_force(n, size, met), (n, size)


def test_more_tables_than_boxes_is_refused_and_the_commands_print_tables(hub_server, companion_cmd):
    import json

    for name in ("live-1", "live-2", "live-10"):
        add_box(hub_server.db, name)
    players = ",".join(f"P{i:02}" for i in range(1, 13))
    assert hub_cmd(companion_cmd, hub_server, "tournament", "create", "Cup", "--game", "third-man",
                   "--players", players, "--boxes", "live-1,live-2").returncode == 0
    out = hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1")
    assert out.returncode == 1 and "3 tables" in out.stderr and "2 box" in out.stderr
    assert hub_cmd(companion_cmd, hub_server, "tournament", "boxes", "1", "live-1,live-2,live-10").returncode == 0
    out = hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1")
    assert out.returncode == 0, out.stderr
    assert "Table 3 at live-10" in out.stdout and "seat 1: P09" in out.stdout and "seat 0" not in out.stdout
    assert "Repeat pairings: 0 (the fewest possible)" in out.stdout
    out = hub_cmd(companion_cmd, hub_server, "tournament", "show", "1")
    assert out.returncode == 0 and "Player" in out.stdout and "seat 4: P12" in out.stdout and "{" not in out.stdout
    data = json.loads(hub_cmd(companion_cmd, hub_server, "tournament", "show", "1", "--json").stdout)
    assert data["rounds"][0]["tables"][2]["players"] == ["P09", "P10", "P11", "P12"]
    assert json.loads(hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1", "--json").stdout or "{}") == {}
    status, _, html = http(hub_server.port, "GET", "/tournaments/1")
    assert status == 200 and b'<ol start="0">' not in html


def test_tables_beyond_the_boxes_get_the_organisers_result(hub_server, companion_cmd):
    from hub import tournament
    from hub.db import connect

    keys = {name: add_box(hub_server.db, name) for name in ("t1", "t2")}
    players = ",".join(f"P{i:02}" for i in range(1, 13))
    assert hub_cmd(companion_cmd, hub_server, "tournament", "create", "Cup", "--game", "third-man",
                   "--players", players, "--boxes", "t1,t2").returncode == 0
    out = hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1", "--without-boxes")
    assert out.returncode == 0 and "Table 3 without a box" in out.stdout, out.stderr
    play_round(hub_server, keys, {})
    again = hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1")
    assert again.returncode == 1 and "1 table(s) without a result" in again.stderr
    bad = hub_cmd(companion_cmd, hub_server, "tournament", "result", "1", "3", "--order", "P09,P10,P11,P01")
    assert bad.returncode == 1 and "P09, P10, P11, P12" in bad.stderr
    bad = hub_cmd(companion_cmd, hub_server, "tournament", "result", "1", "1", "--order", "P01,P02,P03,P04")
    assert bad.returncode == 1 and "from the box" in bad.stderr
    out = hub_cmd(companion_cmd, hub_server, "tournament", "result", "1", "3", "--order", "P12,P11,P10,P09",
                  "--points", "3,2,1,0")
    assert out.returncode == 0, out.stderr
    with connect(hub_server.db) as conn:
        points = {s["name"]: s for s in tournament.standings(conn, 1)}
        assert points["P12"]["points"] == 3 and points["P12"]["wins"] == 1 and points["P09"]["played"] == 1
        assert tournament.view(conn, 1)["rounds"][0]["tables"][2]["done"] is True
    assert hub_cmd(companion_cmd, hub_server, "tournament", "seat", "1", "--without-boxes").returncode == 0
    assert "entered: P12, P11, P10, P09" in hub_cmd(companion_cmd, hub_server, "tournament", "show", "1").stdout
