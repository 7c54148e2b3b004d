"""Boxes feeding the hub: real table sessions and stores, a hub on real PostgreSQL."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest

from companion.store import dump_action

from hub_support import add_box, free_port, hub_db, hub_server, pg_server, running_hub, third_man_log  # noqa: F401
from web_support import http, wait_until

P4 = ["Ann", "Ben", "Chloé", "Dan"]


class MockBox:
    """One table: a Store and a TableSession in a temp folder, and its feeder."""

    def __init__(self, folder, url, key, **feeder):
        from companion.session import TableSession
        from companion.store import Store
        from hub.feeder import Feeder

        self.store = Store(folder)
        self.session = TableSession(self.store)
        options = {"min_backoff": 0.05, "max_backoff": 0.5, "rescan": 0.5, "timeout": 2.0}
        options.update(feeder)
        self.feeder = Feeder(self.store.path, url, key, self.session, **options).start()

    def play(self, actions):
        for action in actions:
            self.session.submit(action)

    def close(self):
        self.feeder.stop()
        self.store.close()


@pytest.fixture
def boxes(tmp_path):
    made = []

    def make(url, key, name="box", **feeder):
        box = MockBox(tmp_path / f"{name}-{len(made)}", url, key, **feeder)
        made.append(box)
        return box
    yield make
    for box in made:
        box.close()


def hub_url(server):
    return f"http://127.0.0.1:{server.port}"


def league(server):
    status, _, body = http(server.port, "GET", "/api/league?game=third-man")
    return body["players"] if status == 200 else None


def games_played(server) -> int:
    players = league(server) or []
    return sum(p["games"] for p in players) // 4


def test_games_finished_on_either_box_appear_in_the_league(hub_server, boxes):
    one = boxes(hub_url(hub_server), add_box(hub_server.db, "one"), "one")
    two = boxes(hub_url(hub_server), add_box(hub_server.db, "two"), "two")
    one.play(third_man_log(P4, [3, 2, 1, 0]))
    two.play(third_man_log(["Eve", "Fay", "Ann", "Gus"], [0, 0, 1, 3]))
    assert wait_until(lambda: games_played(hub_server) == 2, 15)
    names = {p["name"]: p["games"] for p in league(hub_server)}
    assert names["Ann"] == 2 and names["Eve"] == 1 and len(names) == 7
    assert wait_until(lambda: one.feeder.status()["behind"] == {"games": 0, "lines": 0}, 10)
    assert one.feeder.status()["reachable"] is True
    # The live table reached the big screen too.
    status, _, body = http(hub_server.port, "GET", "/api/tables")
    assert {t["box"] for t in body["tables"]} == {"one", "two"}


def lines_at_hub(url) -> int:
    from hub.db import connect

    with connect(url) as conn:
        return conn.execute("SELECT coalesce(sum(lines), 0) AS n FROM games").fetchone()["n"]


def test_a_game_finished_while_the_hub_was_down_arrives_when_it_is_back(hub_db, boxes):
    port = free_port()
    key = add_box(hub_db, "one")
    with running_hub(hub_db, port) as server:
        box = boxes(f"http://127.0.0.1:{port}", key)
        box.play(third_man_log(P4, [3, 0, 0, 0])[:9])
        assert wait_until(lambda: lines_at_hub(hub_db) == 9, 10)
    log = third_man_log(P4, [3, 0, 0, 0])
    box.play(log[9:])                                  # the hub is away: the box plays on, unhindered
    assert box.session.public()["finished"]
    assert wait_until(lambda: box.feeder.status()["reachable"] is False, 10)
    assert wait_until(lambda: box.feeder.status()["behind"] == {"games": 1, "lines": len(log) - 9}, 10), box.feeder.status()
    with running_hub(hub_db, port) as server:
        assert wait_until(lambda: games_played(server) == 1, 20)
        assert wait_until(lambda: box.feeder.status()["behind"] == {"games": 0, "lines": 0}, 10)
        assert box.feeder.status()["reachable"] is True


def test_only_the_public_log_leaves_the_box(hub_server, boxes):
    from hub.db import connect

    box = boxes(hub_url(hub_server), add_box(hub_server.db, "one"))
    log = third_man_log(P4, [3, 0, 0, 0])
    lead = log[1]["seat"]
    box.play(log[:3])            # new_game, the lead's card, one secret card
    time.sleep(1.0)

    def lines_at_hub():
        with connect(hub_server.db) as conn:
            return [r["line"] for r in conn.execute("SELECT line FROM lines ORDER BY n").fetchall()]
    assert wait_until(lambda: len(lines_at_hub()) == 2, 10)     # the secret card stays on the box
    box.play([{"type": "undo"}])                                 # taken back before its reveal
    other = next(s for s in range(4) if s not in (lead, log[2]["seat"]))
    box.play([{"type": "bid", "seat": log[2]["seat"], "card": log[2]["card"]}])
    box.play([a for a in log[3:5]])                              # the bid completes: revealed
    assert wait_until(lambda: len(lines_at_hub()) == 5, 10)
    sent = lines_at_hub()
    assert all('"undo"' not in line for line in sent)            # the taken-back pair never left
    assert other in [__import__("json").loads(line).get("seat") for line in sent]


@pytest.mark.slow
def test_killing_the_hub_loses_and_duplicates_nothing(hub_db, boxes, companion_cmd, tmp_path):
    """The hub as a child process, SIGKILLed at random moments while a box sends."""
    from hub.db import connect

    port = free_port()
    key = add_box(hub_db, "one")
    rng = random.Random(int(os.environ.get("COMPANION_HUB_KILL_SEED", "7")))
    box = boxes(f"http://127.0.0.1:{port}", key, rescan=0.2)
    outcomes = [[3, 2, 1, 0], [0, 3, 1, 1], [1, 0, 3, 2], [2, 1, 0, 3]]
    games = int(os.environ.get("COMPANION_HUB_KILL_GAMES", "200"))
    total = 0
    for g in range(games):      # stored as a box stores them; the feeder picks them up
        log = third_man_log(P4, outcomes[g % 4])
        total += len(log)
        box.store.import_game("third-man", P4, [dump_action(a) for a in log], True, [outcomes[g % 4].index(3)])
    box.feeder.wake()
    def serve():
        return subprocess.Popen([*companion_cmd, "hub", "serve", "--db", hub_db, "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening():
        try:
            return http(port, "GET", "/api/tables", timeout=1)[0] == 200
        except OSError:
            return False

    mid_flow = cycle = 0
    kills = int(os.environ.get("COMPANION_HUB_KILLS", "6"))
    # At least ``kills`` kills, and more (up to 30) until one lands while the
    # box is sending: on a loaded machine the first few may all fall before
    # the first line or after the last.
    while cycle < kills or (mid_flow == 0 and cycle < 30 and lines_at_hub(hub_db) < total):
        cycle += 1
        child = serve()
        try:
            assert wait_until(listening, 20)
            box.feeder.wake()           # now, not after the backoff the last kill earned
            time.sleep(rng.uniform(0.0, 0.4))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(60)
        mid_flow += 0 < lines_at_hub(hub_db) < total
    child = serve()
    try:
        assert wait_until(lambda: box.feeder.status()["behind"] == {"games": 0, "lines": 0}
                          and box.feeder.status()["reachable"], 60)
        with connect(hub_db) as conn:
            rows = conn.execute("SELECT box_game, lines, finish_seq FROM games ORDER BY box_game").fetchall()
            assert [r["box_game"] for r in rows] == list(range(1, games + 1))
            # caught up in order: the games finished at the hub in the box's order
            assert [r["finish_seq"] for r in rows] == sorted(r["finish_seq"] for r in rows)
            assert all(r["lines"] == len(third_man_log(P4, outcomes[(r["box_game"] - 1) % 4])) for r in rows)
            assert all(r["finish_seq"] is not None for r in rows)
            assert conn.execute("SELECT count(*) AS n FROM seats").fetchone()["n"] == 4 * games
            assert conn.execute("SELECT sum(games) AS n FROM ratings").fetchone()["n"] == 4 * games
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(60)
    assert mid_flow >= 1, "no kill happened while the box was sending: the test proved nothing"


def test_the_box_tells_how_its_hub_is_doing(hub_server, tmp_path):
    from companion.session import TableSession
    from companion.store import Store
    from hub.box import attach
    from web_support import make_app

    store = Store(tmp_path / "alone")
    session = TableSession(store)
    app = make_app(session)
    stop = attach(app, store, session, {})
    assert app.test_client().get("/api/hub").get_json() == {"configured": False}
    stop()
    app = make_app(session)
    stop = attach(app, store, session, {"hub_url": hub_url(hub_server), "hub_key": "wrong"})
    try:
        session.submit(third_man_log(P4, [3, 0, 0, 0])[0])
        assert wait_until(lambda: "401" in (app.test_client().get("/api/hub").get_json().get("error") or ""), 10)
        status = app.test_client().get("/api/hub").get_json()
        assert status["configured"] is True and status["behind"]["games"] >= 0 and "wrong" not in str(status)
    finally:
        stop()
        store.close()


def test_companion_run_joins_the_hub_from_its_environment(hub_server, tmp_path):
    """The composition root: ``companion run`` with COMPANION_HUB_URL/KEY feeds the hub."""
    from test_server import start_companion, stop_companion

    key = add_box(hub_server.db, "table-7")
    proc, port, pin = start_companion(tmp_path, "--mock", env={"COMPANION_HUB_URL": hub_url(hub_server),
                                                               "COMPANION_HUB_KEY": key})
    try:
        assert wait_until(lambda: http(port, "GET", "/api/hub")[2].get("reachable") is True, 15)
        # The box's live table reached the hub's big screen.
        assert wait_until(lambda: [t["box"] for t in http(hub_server.port, "GET", "/api/tables")[2]["tables"]]
                          == ["table-7"], 15)
        assert key not in json.dumps(http(port, "GET", "/api/hub")[2])      # the key never shows
    finally:
        assert stop_companion(proc) == 0


@pytest.mark.slow
def test_cutting_the_hubs_database_connections_loses_and_duplicates_nothing(hub_server, boxes, pg_server):
    """The database side of the faults: every hub connection is terminated again
    and again while a box catches up on many games."""
    from hub.db import connect

    key = add_box(hub_server.db, "one")
    box = boxes(hub_url(hub_server), key, rescan=0.2)
    outcomes = [[3, 2, 1, 0], [0, 3, 1, 1]]
    games = 80
    for g in range(games):
        log = third_man_log(P4, outcomes[g % 2])
        box.store.import_game("third-man", P4, [dump_action(a) for a in log], True, [outcomes[g % 2].index(3)])
    box.feeder.wake()
    database = hub_server.db.rsplit("/", 1)[1]
    mid_flow = 0
    with connect(pg_server.url()) as admin:
        for _ in range(2000):
            with connect(hub_server.db) as look:
                finished = look.execute("SELECT count(finish_seq) AS n FROM games").fetchone()["n"]
            if finished == games and box.feeder.status()["behind"] == {"games": 0, "lines": 0}:
                break
            cut = admin.execute("SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity "
                                "WHERE datname = %s",
                                (database,)).fetchone()["n"]
            mid_flow += bool(cut) and finished < games
            time.sleep(0.2)
        else:
            raise AssertionError(f"never caught up: {box.feeder.status()}")
    assert mid_flow >= 1, "no connection was cut while the box was sending: the test proved nothing"
    with connect(hub_server.db) as conn:
        rows = conn.execute("SELECT box_game, lines, finish_seq FROM games ORDER BY box_game").fetchall()
        assert [r["box_game"] for r in rows] == list(range(1, games + 1))
        assert all(r["lines"] == len(third_man_log(P4, outcomes[(r["box_game"] - 1) % 2])) for r in rows)
        assert conn.execute("SELECT sum(games) AS n FROM ratings").fetchone()["n"] == 4 * games


def test_a_hub_that_never_answers_does_not_hold_up_the_table(boxes):
    """The feeder's requests run on its own thread, outside the session lock:
    while one hangs on a hub that accepted the connection and never answers,
    the table takes actions and its lock is free."""
    import socket
    import threading

    black_hole = socket.socket()
    black_hole.bind(("127.0.0.1", 0))
    black_hole.listen(8)
    accepted = []
    threading.Thread(target=lambda: accepted.append(black_hole.accept()), daemon=True).start()
    try:
        box = boxes(f"http://127.0.0.1:{black_hole.getsockname()[1]}", "key", timeout=30)
        log = third_man_log(P4, [3, 0, 0, 0])
        box.play(log[:1])
        assert wait_until(lambda: accepted, 10)          # the feeder is now waiting for an answer
        box.play(log[1:])                                # a whole match, meanwhile
        assert box.session.public()["finished"]
        assert box.session.lock.acquire(blocking=False)
        box.session.lock.release()
        assert box.feeder.status()["reachable"] is None  # still waiting: nothing known yet
    finally:
        for conn, _ in accepted:
            conn.close()
        black_hole.close()


def test_a_result_taken_back_at_the_table_is_taken_back_in_the_league(hub_server, boxes):
    """A match re-decided at the table after its finish reaches the league
    with its new winner, once, and the ratings equal a from-scratch rerate."""
    from hub.db import connect
    from hub.league import rerate
    from hub_support import third_man_retaken

    box = boxes(hub_url(hub_server), add_box(hub_server.db, "one"), rescan=0.2)
    first = third_man_log(P4, [3, 2, 1, 0])
    box.play(first)
    assert wait_until(lambda: games_played(hub_server) == 1, 15)
    assert league(hub_server)[0]["name"] == "Ann"
    assert wait_until(lambda: box.feeder.status()["behind"]["games"] == 0, 10)
    retaken = third_man_retaken(P4, [3, 2, 1, 0], 1)
    box.play(retaken[len(first):len(first) + 8])            # eight undos: the last round is taken back
    assert not box.session.public()["finished"]
    assert wait_until(lambda: games_played(hub_server) == 0, 15)   # no longer a result in the league
    box.play(retaken[len(first) + 8:])                       # played again: Ben takes the match
    assert box.session.public()["winner"] == [1]
    assert wait_until(lambda: games_played(hub_server) == 1 and league(hub_server)[0]["name"] == "Ben", 15), \
        league(hub_server)
    with connect(hub_server.db) as conn:
        assert conn.execute("SELECT count(*) AS n FROM games").fetchone()["n"] == 1
        assert conn.execute("SELECT lines FROM games").fetchone()["lines"] == len(retaken)
        before = conn.execute("SELECT * FROM ratings ORDER BY player_id").fetchall()
        rerate(conn)
        assert conn.execute("SELECT * FROM ratings ORDER BY player_id").fetchall() == before


def test_a_seated_table_reaches_an_idle_box_at_once(hub_server, boxes):
    """The box listens to the hub (a long poll): the offer comes without
    waiting for the feeder's rescan, also while the box holds an abandoned
    game with an unrevealed entry."""
    from hub import tournament
    from hub.db import connect

    key = add_box(hub_server.db, "t1")
    box = boxes(hub_url(hub_server), key, rescan=3600)       # the worker alone would not look for an hour
    log = third_man_log(P4, [3, 0, 0, 0])
    box.play(log[:3])              # an abandoned game: its last bid is a secret never revealed
    assert wait_until(lambda: box.feeder.status()["reachable"] is True, 10)
    time.sleep(0.5)                # the long poll is waiting now
    with connect(hub_server.db) as conn:
        tid = tournament.create(conn, "Cup", "third-man", ["Eve", "Fay", "Gus", "Hal"], ["t1"])
        tournament.seat_round(conn, tid)
    assert wait_until(lambda: box.feeder.status()["offer"] is not None, 10), box.feeder.status()
    assert box.feeder.status()["offer"]["players"] == ["Eve", "Fay", "Gus", "Hal"]


def test_a_log_changed_other_than_by_growing_replaces_the_hubs_copy(hub_server, boxes):
    """Should a stored log change in place (a store rewritten), the box sees
    that the hub's lines are no longer a prefix of its own and sends the
    whole log with ``replace``."""
    box = boxes(hub_url(hub_server), add_box(hub_server.db, "one"), rescan=0.2)
    box.play(third_man_log(P4, [3, 0, 0, 0]))
    assert wait_until(lambda: games_played(hub_server) == 1 and league(hub_server)[0]["name"] == "Ann", 15)
    assert wait_until(lambda: box.feeder.status()["behind"]["games"] == 0, 10)
    gid = box.session.game_id
    other = [dump_action(a) for a in third_man_log(P4, [0, 3, 0, 0])]
    box.store.rewrite(gid, other)
    box.store.db.execute("UPDATE games SET updated = updated + 1 WHERE id = ?", (gid,))
    box.feeder.wake()
    assert wait_until(lambda: league(hub_server)[0]["name"] == "Ben", 15), league(hub_server)
    assert games_played(hub_server) == 1
