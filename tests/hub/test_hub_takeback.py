"""A result taken back at the table after its finish is taken back in the
league: the hub's game, seats, ranks, ratings and tournament result follow
the box's public log, and the ratings stay those of a from-scratch rerate."""

from __future__ import annotations

import random

from hub_support import (add_box, hub_db, hub_server, pg_server, public_log,  # noqa: F401 (fixtures)
                         third_man_log, third_man_retaken)
from web_support import http

P4 = ["Ann", "Ben", "Chloé", "Dan"]


def post(server, key, game, start, lines, **extra):
    return http(server.port, "POST", f"/api/box/games/{game}/lines",
                {"from": start, "lines": lines, **extra}, {"Authorization": f"Bearer {key}"}, timeout=60)


def league(server):
    status, _, body = http(server.port, "GET", "/api/league?game=third-man")
    assert status == 200, body
    return {p["name"]: p for p in body["players"]}


def snapshot(url):
    from hub.db import connect

    with connect(url) as conn:
        return (conn.execute("SELECT game, player_id, mu, sigma, rating, games FROM ratings ORDER BY 1, 2").fetchall(),
                conn.execute("SELECT * FROM rating_steps ORDER BY game_id, player_id").fetchall())


def rerated(url):
    from hub.db import connect
    from hub.league import rerate

    with connect(url) as conn:
        rerate(conn)
    return snapshot(url)


def test_an_undo_after_the_finish_unrates_the_game_and_a_new_finish_rates_the_new_winner(hub_server):
    key = add_box(hub_server.db, "t")
    first = third_man_log(P4, [3, 2, 1, 0])
    assert post(hub_server, key, 1, 0, first)[0] == 200
    assert league(hub_server)["Ann"]["games"] == 1
    undone = public_log(third_man_retaken(P4, [3, 2, 1, 0], 1, redo=False))
    status, _, body = post(hub_server, key, 1, len(first), undone[len(first):])
    assert (status, body["have"]) == (200, len(undone))
    assert league(hub_server) == {}                     # unfinished again: rated nowhere
    again = public_log(third_man_retaken(P4, [3, 2, 1, 0], 1))
    status, _, body = post(hub_server, key, 1, len(undone), again[len(undone):])
    assert (status, body["have"]) == (200, len(again))
    players = league(hub_server)
    assert max(players, key=lambda n: players[n]["rating"]) == "Ben"     # Ben won it in the end
    assert all(p["games"] == 1 for p in players.values())
    status, _, page = http(hub_server.port, "GET", "/api/players/Ben")
    assert [g["rank"] for g in page["games"]] == [1] and len(page["history"]["third-man"]) == 1
    before = snapshot(hub_server.db)
    assert rerated(hub_server.db) == before


def test_random_take_backs_keep_the_ratings_of_a_rerate(hub_server):
    names = ["Ann", "Ben", "Chloé", "Dan", "Eve", "Fay", "Gus"]
    keys = [add_box(hub_server.db, f"b{i}") for i in range(3)]
    rng = random.Random(20)
    outcomes = [[3, 2, 1, 0], [3, 0, 0, 0], [1, 1, 0, 3], [2, 3, 0, 1], [0, 0, 3, 2], [2, 2, 3, 1]]
    games = []          # (key, number, final log, sent so far)
    for number in range(1, 19):
        tokens = rng.choice(outcomes)
        players = rng.sample(names, 4)
        if rng.random() < 0.5:
            final = public_log(third_man_retaken(players, tokens, rng.randrange(4), rng.randrange(4),
                                                 redo=rng.random() < 0.8))
        else:
            final = third_man_log(players, tokens, rng.randrange(4))
        games.append([rng.choice(keys), number, final, 0])
    # Every game reaches its first finish, in random order, then the rest
    # (an undo, the bids played again) arrives in random steps, mixed with
    # other games' finishes.
    steps = []
    for g in games:
        finish = next(i for i in range(len(g[2])) if g[2][i].get("type") == "undo") if \
            any(a.get("type") == "undo" for a in g[2]) else len(g[2])
        steps.append((g, finish))
    rng.shuffle(steps)
    pending = [(g, len(g[2])) for g, _ in steps]
    rng.shuffle(pending)
    for g, upto in steps + pending:
        if rng.random() < 0.3 and upto > g[3] + 1:          # sometimes the undos arrive on their own first
            cut = rng.randrange(g[3] + 1, upto)
            assert post(hub_server, g[0], g[1], g[3], g[2][g[3]:cut])[0] == 200
            g[3] = cut
        status, _, body = post(hub_server, g[0], g[1], g[3], g[2][g[3]:upto])
        assert (status, body["have"]) == (200, upto), body
        g[3] = upto
    before = snapshot(hub_server.db)
    assert rerated(hub_server.db) == before
    # and the league counts each finished game once, with its final ranks
    from companion.timeline import replay
    import json

    finished = [replay([json.dumps(a) for a in g[2]]) for g in games]
    finished = [t for t in finished if t.finished]
    assert sum(p["games"] for p in league(hub_server).values()) == 4 * len(finished)
    assert len(finished) < len(games)          # some games were left undone


def test_a_changed_log_is_replaced_whole(hub_server):
    key = add_box(hub_server.db, "t")
    a = third_man_log(P4, [3, 0, 0, 0])
    assert post(hub_server, key, 1, 0, a)[0] == 200
    b = third_man_log(P4, [0, 3, 0, 0])
    status, _, body = post(hub_server, key, 1, 0, b)
    assert status == 409 and body["differs"] == 2 and body["have"] == len(a)
    status, _, body = post(hub_server, key, 1, 0, b, replace=True)
    assert (status, body["have"]) == (200, len(b))
    players = league(hub_server)
    assert max(players, key=lambda n: players[n]["rating"]) == "Ben" and players["Ben"]["games"] == 1
    for bad in ({"replace": 1}, {"replace": True, "from": 3}):
        status, _, body = http(hub_server.port, "POST", "/api/box/games/1/lines", {"from": 0, "lines": b, **bad},
                               {"Authorization": f"Bearer {key}"})
        assert status == 400 and "replace" in body["error"]
    assert rerated(hub_server.db) == snapshot(hub_server.db)


def test_a_tournament_result_follows_the_table_and_a_closed_round_is_flagged(hub_server, companion_cmd):
    import subprocess

    from hub.db import connect
    from hub import tournament

    key = add_box(hub_server.db, "t1")
    with connect(hub_server.db) as conn:
        tid = tournament.create(conn, "Cup", "third-man", P4, ["t1"])
        tournament.seat_round(conn, tid)
        seated = tournament.view(conn, tid)["rounds"][0]["tables"][0]["players"]
    log = third_man_log(seated, [3, 2, 1, 0])
    assert post(hub_server, key, 1, 0, log)[0] == 200
    undone = public_log(third_man_retaken(seated, [3, 2, 1, 0], 1, redo=False))
    assert post(hub_server, key, 1, len(log), undone[len(log):])[0] == 200
    with connect(hub_server.db) as conn:
        view = tournament.view(conn, tid)
        assert view["rounds"][0]["tables"][0]["done"] is False          # the round is open again
        assert all(s["played"] == 0 for s in view["standings"]) and view["notices"] == []
    again = public_log(third_man_retaken(seated, [3, 2, 1, 0], 1))
    assert post(hub_server, key, 1, len(undone), again[len(undone):])[0] == 200
    with connect(hub_server.db) as conn:
        assert tournament.view(conn, tid)["standings"][0]["name"] == seated[1]
        tournament.seat_round(conn, tid)              # round 1 closed
    # Round 1's result is taken back now: the organiser is told.
    longer = public_log(third_man_retaken(seated, [3, 2, 1, 0], 1)
                        + [{"type": "undo"}] * 8)
    assert post(hub_server, key, 1, len(again), longer[len(again):])[0] == 200
    with connect(hub_server.db) as conn:
        notes = tournament.view(conn, tid)["notices"]
    assert [(n["round"], n["table"], n["finished"]) for n in notes] == [(1, 1, False)]
    out = subprocess.run([*companion_cmd, "hub", "tournament", "show", str(tid), "--db", hub_server.db],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "after the round was closed" in out.stdout, out.stdout + out.stderr
    status, _, html = http(hub_server.port, "GET", f"/tournaments/{tid}")
    assert status == 200 and b"after the round was closed" in html


def test_take_backs_from_boxes_at_once_keep_the_ratings_of_a_rerate(hub_server):
    """Three boxes post finishes and take-backs at the same time (shared
    players, new names among them): every post lands, and the ratings are
    still those of a from-scratch rerate."""
    import threading

    names = ["Ann", "Ben", "Chloé", "Dan", "Eve", "Fay"]
    keys = [add_box(hub_server.db, f"c{i}") for i in range(3)]
    failures = []

    def box(i):
        rng = random.Random(100 + i)
        for number in range(1, 6):
            players = rng.sample(names + [f"New {i}-{number}"], 4)
            tokens = rng.choice([[3, 2, 1, 0], [0, 3, 1, 1], [1, 0, 3, 2]])
            first = third_man_log(players, tokens)
            final = public_log(third_man_retaken(players, tokens, rng.randrange(4), redo=rng.random() < 0.7))
            for start, lines in ((0, first), (len(first), final[len(first):])):
                try:
                    status, _, body = post(hub_server, keys[i], number, start, lines)
                except Exception as exc:         # a thread's failure must fail the test
                    status, body = None, repr(exc)
                if status != 200:
                    failures.append((status, body))
    threads = [threading.Thread(target=box, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    before = snapshot(hub_server.db)
    assert rerated(hub_server.db) == before
