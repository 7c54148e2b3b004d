"""The club hub on a real PostgreSQL: boxes' lines in, league, live tables."""

from __future__ import annotations

import json
import subprocess
import threading
import time


from hub_support import add_box, hub_db, hub_server, pg_server, third_man_log  # noqa: F401 (fixtures)
from web_support import http

P4 = ["Ann", "Ben", "Chloé", "Dan"]


def post(server, key, game, start, lines, finished=False):
    return http(server.port, "POST", f"/api/box/games/{game}/lines",
                {"from": start, "lines": lines, "finished": finished}, {"Authorization": f"Bearer {key}"})


def league(server, game="third-man", query=""):
    status, _, body = http(server.port, "GET", f"/api/league?game={game}{query}")
    assert status == 200, body
    return body


def test_schema_migrates_once_and_records_its_version(hub_db):
    from hub.db import MIGRATIONS, connect, migrate

    with connect(hub_db) as conn:
        assert migrate(conn) == len(MIGRATIONS)
        assert migrate(conn) == len(MIGRATIONS)         # a second start changes nothing
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [{"version": len(MIGRATIONS)}]


def test_a_finished_game_enters_the_league(hub_server):
    key = add_box(hub_server.db, "table-1")
    log = third_man_log(P4, [3, 2, 1, 0])
    status, _, body = post(hub_server, key, 7, 0, log[:10])
    assert (status, body["have"]) == (200, 10)
    assert league(hub_server)["players"] == []          # not finished yet: no rating
    status, _, body = post(hub_server, key, 7, 10, log[10:], finished=True)
    assert (status, body["have"]) == (200, len(log))
    players = league(hub_server)["players"]
    assert [p["name"] for p in players] == P4            # tokens 3, 2, 1, 0: best first
    assert all(p["games"] == 1 for p in players)
    assert players[0]["rating"] > players[1]["rating"] > players[2]["rating"] > players[3]["rating"]


def test_lines_sent_again_are_skipped_and_a_game_counts_once(hub_server):
    key = add_box(hub_server.db, "table-1")
    log = third_man_log(P4, [3, 0, 0, 0])
    for _ in range(3):
        status, _, body = post(hub_server, key, 1, 0, log, finished=True)
        assert (status, body["have"]) == (200, len(log))
    status, _, body = post(hub_server, key, 1, 5, log[5:20])   # an overlap only
    assert (status, body["have"]) == (200, len(log))
    assert [p["games"] for p in league(hub_server)["players"]] == [1, 1, 1, 1]


def test_a_gap_or_a_changed_line_is_refused_with_what_the_hub_has(hub_server):
    key = add_box(hub_server.db, "table-1")
    log = third_man_log(P4, [3, 0, 0, 0])
    post(hub_server, key, 1, 0, log[:5])
    status, _, body = post(hub_server, key, 1, 8, log[8:12])
    assert (status, body["have"]) == (409, 5)
    changed = dict(log[3], card=(log[3]["card"] + 1) % 10)
    status, _, body = post(hub_server, key, 1, 3, [changed])
    assert (status, body["have"]) == (409, 5)
    assert "line 4" in body["error"]


def test_an_illegal_line_is_refused_and_nothing_is_stored(hub_server):
    key = add_box(hub_server.db, "table-1")
    log = third_man_log(P4, [3, 0, 0, 0])
    bad = log[:3] + [{"type": "bid", "seat": log[1]["seat"], "card": 2}]     # the lead bids twice
    status, _, body = post(hub_server, key, 1, 0, bad)
    assert status == 422 and body["error"].startswith("line 4:") and body["have"] == 0
    status, _, body = post(hub_server, key, 1, 0, log[:3])
    assert (status, body["have"]) == (200, 3)                # nothing of the refused post was kept
    status, _, body = post(hub_server, key, 2, 0, [{"type": "new_game", "game": "chess", "players": ["a", "b"]}])
    assert status == 422 and "chess" in body["error"]


def test_keys_are_checked_and_revocable(hub_server, companion_cmd):
    log = third_man_log(P4, [3, 0, 0, 0])
    assert post(hub_server, "not-a-key", 1, 0, log[:1])[0] == 401
    out = subprocess.run([*companion_cmd, "hub", "add-box", "table-9", "--db", hub_server.db],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    key = out.stdout.strip().splitlines()[-1]
    assert post(hub_server, key, 1, 0, log[:1])[0] == 200
    again = subprocess.run([*companion_cmd, "hub", "add-box", "table-9", "--db", hub_server.db],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already" in again.stderr and "Traceback" not in again.stderr
    out = subprocess.run([*companion_cmd, "hub", "revoke-box", "table-9", "--db", hub_server.db],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status, _, body = post(hub_server, key, 1, 1, log[1:2])
    assert status == 401 and "error" in body


def test_each_box_writes_only_its_own_games(hub_server):
    one, two = add_box(hub_server.db, "one"), add_box(hub_server.db, "two")
    log_a, log_b = third_man_log(P4, [3, 0, 0, 0]), third_man_log(P4, [0, 3, 0, 0])
    assert post(hub_server, one, 1, 0, log_a)[0] == 200
    # The same box game number from another box is another game: no conflict.
    assert post(hub_server, two, 1, 0, log_b)[0] == 200
    assert [p["games"] for p in league(hub_server)["players"]] == [2, 2, 2, 2]


def test_bad_requests_are_json_refusals(hub_server):
    key = add_box(hub_server.db, "t")
    auth = {"Authorization": f"Bearer {key}"}
    for body in (b"{", {"from": -1, "lines": []}, {"from": 0, "lines": [1]}, [1, 2]):
        status, _, answer = http(hub_server.port, "POST", "/api/box/games/1/lines", body,
                                 {**auth, "Content-Type": "application/json"})
        assert status == 400 and "error" in answer
    assert http(hub_server.port, "GET", "/api/league?game=nope")[0] == 400
    assert http(hub_server.port, "GET", "/api/league?game=third-man&from=yesterday")[0] == 400
    assert http(hub_server.port, "GET", "/api/nothing")[0] == 404
    assert http(hub_server.port, "GET", "/api/players/Nobody")[0] == 404


def test_incremental_ratings_equal_a_rerating_from_scratch(hub_server, companion_cmd):
    import random

    from hub.db import connect

    keys = [add_box(hub_server.db, f"b{i}") for i in range(3)]
    names = ["Ann", "Ben", "Chloé", "Dan", "Eve", "Fay", "Gus"]
    rng = random.Random(4)
    outcomes = [[3, 2, 1, 0], [3, 0, 0, 0], [1, 1, 0, 3], [2, 3, 0, 1], [0, 0, 3, 2]]

    def feed(i):
        for g in range(6):
            log = third_man_log(rng.sample(names, 4), rng.choice(outcomes))
            assert post(hub_server, keys[i], g + 1, 0, log)[0] == 200

    threads = [threading.Thread(target=feed, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with connect(hub_server.db) as conn:
        before = conn.execute("SELECT game, player_id, mu, sigma, rating, games FROM ratings ORDER BY 1, 2").fetchall()
        steps = conn.execute("SELECT * FROM rating_steps ORDER BY 1, 2").fetchall()
    out = subprocess.run([*companion_cmd, "hub", "rerate", "--db", hub_server.db], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "18 games" in out.stdout, out.stderr
    with connect(hub_server.db) as conn:
        assert conn.execute("SELECT game, player_id, mu, sigma, rating, games FROM ratings ORDER BY 1, 2").fetchall() == before
        assert conn.execute("SELECT * FROM rating_steps ORDER BY 1, 2").fetchall() == steps
    assert sum(p["games"] for p in league(hub_server)["players"]) == 18 * 4


def test_ranks_put_the_winner_first_then_follow_the_counts():
    from hub.league import ranks

    assert ranks({"players": list("abcd"), "tokens": [1, 3, 1, 0], "scores": [50, 0, 0, 0], "winner": [1]}) == [2, 1, 2, 3]
    # A game where the lowest score wins: read from the winner.
    assert ranks({"players": list("abc"), "scores": [12, 30, 40], "winner": [0]}) == [1, 2, 3]
    assert ranks({"players": list("abc"), "scores": [40, 30, 40], "winner": [0, 2]}) == [1, 2, 1]
    # A scoreboard to a target: its tokens all stay 0, the scores decide.
    assert ranks({"players": list("abc"), "tokens": [0, 0, 0], "scores": [50, 20, 35], "winner": [0]}) == [1, 3, 2]


def test_link_and_split_move_ratings(hub_server, companion_cmd):
    key = add_box(hub_server.db, "t")
    post(hub_server, key, 1, 0, third_man_log(["Ann", "Ben", "Cy", "Dan"], [3, 0, 0, 0]))
    post(hub_server, key, 2, 0, third_man_log(["Annie", "Ben", "Cy", "Dan"], [3, 0, 0, 0]))
    run = lambda *a: subprocess.run([*companion_cmd, "hub", *a, "--db", hub_server.db],  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    assert run("link", "Annie", "Ann").returncode == 0
    players = league(hub_server)["players"]
    assert players[0] == {"name": "Ann", "rating": players[0]["rating"], "games": 2}
    assert "Annie" not in [p["name"] for p in players]
    status, _, page = http(hub_server.port, "GET", "/api/players/Annie")
    assert status == 200 and page["names"] == ["Ann", "Annie"] and len(page["games"]) == 2
    assert run("split", "Annie").returncode == 0
    assert {p["name"]: p["games"] for p in league(hub_server)["players"]}["Annie"] == 1
    bad = run("link", "Nobody", "Ann")
    assert bad.returncode == 1 and "Nobody" in bad.stderr


def test_date_filters(hub_server):
    from hub.db import connect

    key = add_box(hub_server.db, "t")
    post(hub_server, key, 1, 0, third_man_log(P4, [3, 0, 0, 0]))
    post(hub_server, key, 2, 0, third_man_log(P4, [0, 3, 0, 0]))
    with connect(hub_server.db) as conn:     # the first game was played a year ago
        conn.execute("UPDATE games SET finished = finished - interval '365 days' WHERE box_game = 1")
        conn.execute("UPDATE rating_steps SET finished = g.finished FROM games g WHERE g.id = game_id")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    last_month = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86400))
    everything = league(hub_server)["players"]
    # The period's league: each player's rating after their last game in it,
    # and the games they played in it.
    recent = league(hub_server, query=f"&from={today}")["players"]
    assert recent == [dict(p, games=1) for p in everything]
    old = league(hub_server, query=f"&to={last_month}")["players"]
    assert old[0]["name"] == "Ann" and all(p["games"] == 1 for p in old)
    assert old[0]["rating"] > old[1]["rating"] == old[2]["rating"]
    assert league(hub_server, query="&to=2000-01-01")["players"] == []
    assert league(hub_server, query=f"&from=2000-01-01&to={today}")["players"] == everything
    between = league(hub_server, query=f"&from=2000-01-01&to={last_month}")["players"]
    assert between == old
    assert len(http(hub_server.port, "GET", "/api/players/Ann?to=2000-01-01")[2]["games"]) == 0
    status, _, html = http(hub_server.port, "GET", f"/league/third-man?from={today}")
    assert status == 200 and b"Ben" in html
    status, _, html = http(hub_server.port, "GET", "/players/Ann")
    assert status == 200 and b"<polyline" in html


def test_live_tables_are_pushed_to_the_big_screen(hub_server):
    from web_support import SSEClient

    key = add_box(hub_server.db, "table-1")
    auth = {"Authorization": f"Bearer {key}"}
    state = {"game": "third-man", "players": P4, "scores": [0, 0, 0, 0], "tokens": [0, 0, 0, 0]}
    assert http(hub_server.port, "PUT", "/api/box/state", {"game": 1, "state": state}, auth)[0] == 200
    status, _, body = http(hub_server.port, "GET", "/api/tables")
    assert status == 200 and body["tables"][0]["box"] == "table-1" and body["tables"][0]["state"] == state
    client = SSEClient(hub_server.port, "/api/tables/events")
    try:
        first = client.next_event(5)
        assert first[0] == "tables" and first[1]["tables"][0]["state"] == state
        moved = dict(state, scores=[14, 1, -8, 0])
        http(hub_server.port, "PUT", "/api/box/state", {"game": 1, "state": moved}, auth)
        event, data = client.next_event(5)[:2]
        assert event == "table" and data["state"]["scores"] == [14, 1, -8, 0]
    finally:
        client.close()
    from hub.db import connect
    from web_support import wait_until

    def stored():        # the screens are told first; the row follows (the newest state)
        with connect(hub_server.db) as conn:
            return conn.execute("SELECT state FROM boxes WHERE name = 'table-1'").fetchone()["state"]
    assert wait_until(lambda: stored() == moved, 10)
    assert http(hub_server.port, "PUT", "/api/box/state", {"state": 3}, auth)[0] == 400
    status, _, html = http(hub_server.port, "GET", "/tables")
    assert status == 200 and b"tables.js" in html


def test_the_hub_commands_refuse_clearly(companion_cmd, pg_server):
    env = {k: v for k, v in __import__("os").environ.items() if k != "COMPANION_HUB_DB"}
    run = lambda *a: subprocess.run([*companion_cmd, "hub", *a], capture_output=True, text=True,  # noqa: E731
                                    timeout=60, env=env)
    out = run("add-box", "t")
    assert out.returncode == 2 and "--db" in out.stderr
    for argv in (("add-box", "t", "--db", f"postgresql://postgres@127.0.0.1:{pg_server.port}/no_such_db"),
                 ("serve", "--db", "not a url", "--port", "0"),
                 ("tournament", "seat", "99", "--db", pg_server.url())):
        out = run(*argv)
        assert out.returncode == 1 and out.stderr.startswith("companion hub:") and "Traceback" not in out.stderr


def test_a_screen_that_fell_behind_gets_each_tables_newest_state():
    from hub.app import KEPT, Tables

    tables = Tables(2)
    stream = tables.stream([])
    assert next(stream).startswith(b"event: tables")
    for i in range(KEPT + 10):
        tables.publish({"box": f"b{i % 3}", "state": {"n": i}})
    events = [next(stream) for _ in range(3)]
    newest = sorted(json.loads(e.split(b"data: ", 1)[1])["state"]["n"] for e in events)
    assert newest == [KEPT + 7, KEPT + 8, KEPT + 9]
    tables.close()
    assert list(stream) == []


def test_the_pages_speak_french_too(hub_server):
    status, headers, html = http(hub_server.port, "GET", "/league/third-man?lang=fr")
    assert status == 200 and "Le 3e Homme\u00a0: classement".encode() in html and b'lang="fr"' in html
    status, _, html = http(hub_server.port, "GET", "/tables", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    assert status == 200 and b"Tables en direct" in html and b"Reconnexion" in html
    status, _, html = http(hub_server.port, "GET", "/", headers={"Accept-Language": "en"})
    assert status == 200 and b"League" in html


def test_the_core_and_the_box_feeder_import_no_database_client():
    import sys

    code = ("import sys, appliance.cli, hub.feeder; appliance.cli.build_parser(); "
            "print(sorted(m for m in ('psycopg', 'openskill', 'flask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_hostile_input_gets_a_clear_4xx_never_a_503(hub_server):
    key = add_box(hub_server.db, "t")
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for query in ("from=0001-01-01", "from=9999-12-31", "to=9999-12-31", "from=2000-01-01%00", "to=+20000-01-01",
                  "from=%ED%A0%80", "from=2024-02-30"):
        status, _, body = http(hub_server.port, "GET", f"/api/league?game=third-man&{query}")
        assert status == 400 and ("YYYY-MM-DD" in body["error"] or "address holds" in body["error"]), (query, body)
    for path in ("/api/players/A%00B", "/api/players/%ED%A0%80", "/league/third-man?from=1-1-1",
                 "/api/box/assignment?wait=nan"):
        assert 400 <= http(hub_server.port, "GET", path, headers=auth)[0] < 500, path
    deep = b"[" * 100_000 + b"]" * 100_000
    nested = {"from": 0, "lines": [{"type": "x", "a": json.loads("[" * 40 + "]" * 40)}]}
    bodies = [deep, json.dumps(nested).encode(), b'{"from": 0, "lines": [{"type": "new_game", "game": "a\\u0000"}]}',
              b'{"from": 0, "lines": [{"type": "new_game", "game": "\\ud800"}]}', b'{"from": NaN, "lines": []}',
              b'{"from": 0, "lines": [{"type": "bid", "card": 1e400}]}', b"\xff\xfe"]
    for raw in bodies:
        status, _, answer = http(hub_server.port, "POST", "/api/box/games/1/lines", raw, auth)
        assert status == 400 and answer["error"].startswith("the body"), (raw[:40], status, answer)
        status, _, answer = http(hub_server.port, "PUT", "/api/box/state", raw, auth)
        assert status == 400 and answer["error"].startswith("the body"), (raw[:40], status, answer)
    status, _, answer = http(hub_server.port, "PUT", "/api/box/state",
                             {"game": 1, "state": {"players": ["A\u0000"]}}, auth)
    assert status == 400 and "NUL" in answer["error"]
    # A player name holding NUL, sent as a game: refused, nothing stored.
    line = {"type": "new_game", "game": "third-man", "players": ["A\u0000", "B", "C", "D"]}
    status, _, answer = http(hub_server.port, "POST", "/api/box/games/1/lines", {"from": 0, "lines": [line]}, auth)
    assert status == 400
    assert league(hub_server)["players"] == []


def test_migration_two_fills_the_rating_steps_of_an_older_hub(hub_server):
    """A hub of schema 1 upgraded: each step gets its game, place, date and
    running count, the same as this version writes them."""
    from hub.db import MIGRATIONS, connect, migrate

    key = add_box(hub_server.db, "t")
    for n, tokens in enumerate(([3, 0, 0, 0], [0, 3, 0, 0], [1, 0, 3, 2]), start=1):
        assert post(hub_server, key, n, 0, third_man_log(P4, tokens))[0] == 200
    query = "SELECT * FROM rating_steps ORDER BY game_id, player_id"
    with connect(hub_server.db) as conn:
        written = conn.execute(query).fetchall()
        conn.execute("ALTER TABLE rating_steps DROP COLUMN game, DROP COLUMN seq, DROP COLUMN n, DROP COLUMN finished")
        conn.execute("DROP TABLE tournament_notices")
        conn.execute("DROP TABLE tournament_results")
        conn.execute("ALTER TABLE tournaments DROP COLUMN seated_repeats, DROP COLUMN seated_exact")
        conn.execute("DROP TABLE box_backups")                  # migration 3's
        conn.execute("UPDATE schema_version SET version = 1")
        assert migrate(conn) == len(MIGRATIONS)
        assert conn.execute(query).fetchall() == written
    assert [p["games"] for p in league(hub_server, query="&from=2000-01-01")["players"]] == [3, 3, 3, 3]


def test_the_live_path_never_waits_behind_the_catch_up(hub_server):
    """Every connection of the boxes' pool taken (boxes catching up after an
    outage): a box's table still reaches the big screen, and its newest
    state is the one stored."""
    from web_support import SSEClient, wait_until

    key = add_box(hub_server.db, "table-1")
    auth = {"Authorization": f"Bearer {key}"}
    pool = hub_server.app.extensions["hub"]["pool"]
    client = SSEClient(hub_server.port, "/api/tables/events")
    taken, release = [], threading.Event()

    def hold():
        with pool.connection():
            taken.append(1)
            release.wait(30)
    holders = [threading.Thread(target=hold, daemon=True) for _ in range(8)]     # the pool's size (create_app)
    for t in holders:
        t.start()
    try:
        assert client.next_event(5)[0] == "tables"
        assert wait_until(lambda: len(taken) == 8, 10)
        stuck = []
        threading.Thread(target=lambda: stuck.append(post(hub_server, key, 1, 0, third_man_log(P4, [3, 0, 0, 0]))),
                         daemon=True).start()
        for n in range(5):
            status, _, _ = http(hub_server.port, "PUT", "/api/box/state", {"game": 1, "state": {"n": n}}, auth)
            assert status == 200
            event, data = client.next_event(5)[:2]
            assert event == "table" and data["state"] == {"n": n}
        assert stuck == []                  # the catch-up post is still waiting for a connection
        status, _, body = http(hub_server.port, "GET", "/api/tables")
        assert status == 200 and body["tables"][0]["state"] == {"n": 4}
    finally:
        release.set()
        client.close()
    for t in holders:
        t.join(10)
    assert wait_until(lambda: len(stuck) == 1, 10) and stuck[0][0] == 200


def test_a_league_page_shows_a_bounded_number_of_rows(hub_server, monkeypatch):
    import hub.app

    key = add_box(hub_server.db, "t")
    post(hub_server, key, 1, 0, third_man_log(P4, [3, 2, 1, 0]))
    monkeypatch.setattr(hub.app, "PAGE_ROWS", 2)
    status, _, html = http(hub_server.port, "GET", "/league/third-man?lang=en")
    assert status == 200 and b"Ann" in html and b"Ben" in html and b"Dan" not in html
    assert b"Only the first 2 players are shown here." in html
    assert len(league(hub_server)["players"]) == 4                  # the API has them all
