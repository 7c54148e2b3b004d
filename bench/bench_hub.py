"""The club hub at scale, on a throw-away PostgreSQL server (Debian's binaries).

* **ingest**: 50 simulated boxes post finished Third Man games at once (each
  game whole, as a box catching up does: validated by the rules core, stored,
  rated); beside it, a bare ``INSERT`` rate into the same PostgreSQL from 50
  connections (one row per transaction).  Target: >= 1,000 games a minute.
* **box → big screen**: a box's ``PUT /api/box/state`` until a big screen's
  event stream (``/api/tables/events``) shows it, p50/p99, while 49 other boxes
  send theirs; and from an action submitted on a real box (TableSession, Store,
  feeder) to the big screen showing it; beside them, a bare
  SSE echo (a PUT that wakes a stream, no key, no database) under the same
  waitress.  Target: p99 < 1 s.
* **standings**: ``GET /api/league`` with 100,000 finished games stored (2,000
  players), and the SQL query alone; the same with dates (``from=2000-01-01``,
  the whole history, and the last 30 days), and the big screen's p99 while two
  clients loop on the dated standings.  Target: < 100 ms.
* **big screen while boxes catch up**: the box → big screen latency while 50
  boxes post their backlog after an outage (each its games whole, all at
  once), beside the bare SSE echo.  Target: p99 < 1 s.
* **offer**: from ``tournament seat`` (its commit) until an idle box's
  feeder holds the offer (the box's long poll), beside one plain
  ``GET /api/box/assignment`` round trip.  Target: < 2 s.

Skipped (with the reason) where PostgreSQL's server is not installed.
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOXES = 50


def _pg():
    sys.path.insert(0, str(ROOT / "tests"))
    from hub_support import PostgresServer, postgres_bin

    bindir = postgres_bin()
    if bindir is None:
        return None
    return PostgresServer(bindir).start()


def _post(port, path, body, key, method="POST"):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=json.dumps(body).encode(),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _third_man(players, tokens):
    sys.path.insert(0, str(ROOT / "tests"))
    from hub_support import third_man_log

    return third_man_log(players, tokens)


def bench_ingest(server, url, games_per_box):
    from hub.db import add_box, connect

    with connect(url) as conn:
        keys = [add_box(conn, f"bench-{i}") for i in range(BOXES)]
    names = [f"Player {i}" for i in range(200)]
    outcomes = [[3, 2, 1, 0], [0, 3, 1, 1], [1, 0, 3, 2], [2, 1, 0, 3]]
    logs = [[_third_man([names[(b * 7 + g * 4 + s) % len(names)] for s in range(4)], outcomes[(b + g) % 4])
             for g in range(games_per_box)] for b in range(BOXES)]
    errors = []

    def box(b):
        for g, log in enumerate(logs[b], start=1):
            status = _post(server.port, f"/api/box/games/{g}/lines", {"from": 0, "lines": log, "finished": True}, keys[b])
            if status != 200:
                errors.append(status)

    seconds = _all_at_once(box, [(b,) for b in range(BOXES)])
    games = BOXES * games_per_box
    return {"games": games, "games_per_min": round(games / seconds * 60), "errors": len(errors),
            "baseline_bare_inserts_per_min": _bare_inserts(url, games), "target_games_per_min": 1000}


def _bare_inserts(url, rows):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_bare (id bigserial PRIMARY KEY, body text)")

    def worker(n):
        with psycopg.connect(url, autocommit=True) as conn:
            for _ in range(n):
                conn.execute("INSERT INTO bench_bare (body) VALUES (%s)", ("x" * 200,))

    per = max(1, rows // BOXES)
    return round(per * BOXES / _all_at_once(worker, [(per,)] * BOXES) * 60)


def _all_at_once(target, args_each) -> float:
    """``target(*args)`` in a thread for each of ``args_each``, all started
    together: the seconds until the last is done (the figure and its baseline
    are timed the same way)."""
    t0 = time.perf_counter()
    threads = [threading.Thread(target=target, args=args) for args in args_each]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


class _SSE:
    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        self.buf = b""

    def next_data(self):
        while b"\n\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        block, _, self.buf = self.buf.partition(b"\n\n")
        if b"\r\n\r\n" in block:       # the response head came first
            block = block.split(b"\r\n\r\n", 1)[1]
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                return json.loads(line[6:])
        return None


def _latency(port, put, path, samples, gap=0.0):
    """Seconds from a PUT to the stream showing it, ``samples`` times (``gap`` seconds apart)."""
    client = _SSE(port, path)
    client.next_data()      # the first snapshot
    out = []
    for i in range(samples):
        t0 = time.perf_counter()
        put(i)
        while True:
            data = client.next_data()
            if data and data.get("state", {}).get("n") == i:
                break
        out.append(time.perf_counter() - t0)
        if gap:
            time.sleep(gap)
    client.sock.close()
    return out


def _pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def bench_push(server, url, samples):
    from hub.db import add_box, connect

    with connect(url) as conn:
        key = add_box(conn, "bench-live")
    # 49 other boxes keep sending their tables meanwhile: the screen sees them all.
    stop = threading.Event()
    with connect(url) as conn:
        others = [add_box(conn, f"bench-noise-{i}") for i in range(BOXES - 1)]

    def noise(k):
        i = 0
        while not stop.is_set():
            _post(server.port, "/api/box/state", {"game": 1, "state": {"scores": [i, 0, 0, 0]}}, k, "PUT")
            i += 1
            stop.wait(0.5)

    threads = [threading.Thread(target=noise, args=(k,), daemon=True) for k in others]
    for t in threads:
        t.start()
    try:
        hub = _latency(server.port, lambda i: _post(server.port, "/api/box/state",
                                                    {"game": 1, "state": {"n": i}}, key, "PUT"),
                       "/api/tables/events", samples)
        via_box = _through_a_box(server, url, samples)
    finally:
        stop.set()
    base = _bare_echo(samples)
    return {"samples": samples, "p50_ms": round(statistics.median(hub) * 1000, 2), "p99_ms": round(_pct(hub, 99) * 1000, 2),
            "box_action_p50_ms": round(statistics.median(via_box) * 1000, 2),
            "box_action_p99_ms": round(_pct(via_box, 99) * 1000, 2),
            "baseline_bare_sse_p50_ms": round(statistics.median(base) * 1000, 2),
            "baseline_bare_sse_p99_ms": round(_pct(base, 99) * 1000, 2), "target_p99_ms": 1000}


def _through_a_box(server, url, samples):
    """A real table session and store, its feeder, the hub: from ``submit`` on
    the box to the big screen's stream showing the new score."""
    import tempfile

    from companion.session import TableSession
    from companion.store import Store
    from hub.db import add_box, connect
    from hub.feeder import Feeder

    with connect(url) as conn:
        key = add_box(conn, "bench-box")
    folder = tempfile.mkdtemp(prefix="bench-hub-box-")
    store = Store(folder)
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    feeder = Feeder(store.path, f"http://127.0.0.1:{server.port}", key, session).start()
    client = _SSE(server.port, "/api/tables/events")
    client.next_data()
    out = []
    try:
        for i in range(samples):
            t0 = time.perf_counter()
            session.submit({"type": "add", "seat": 0, "points": 1})
            while True:
                data = client.next_data()
                if data and data.get("box") == "bench-box" and (data["state"].get("scores") or [0])[0] == i + 1:
                    break
            out.append(time.perf_counter() - t0)
    finally:
        client.sock.close()
        feeder.stop()
        store.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return out


def _bare_echo(samples):
    from flask import Flask, Response, request

    from hub.app import Tables
    from hub.serve import HubServer

    tables = Tables(8)
    app = Flask("bare")
    app.extensions["hub"] = {"tables": tables, "pool": type("P", (), {"close": lambda self: None})()}

    @app.put("/put")
    def put():
        tables.publish({"state": request.get_json()})
        return "{}"

    @app.get("/events")
    def events():
        return Response(tables.stream([]), mimetype="text/event-stream")

    server = HubServer(app, "127.0.0.1", 0, streams=8)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        return _latency(server.port, lambda i: _post(server.port, "/put", {"n": i}, "", "PUT"), "/events", samples)
    finally:
        server.stop()
        thread.join(10)


def bench_standings(server, url, games):
    """Fill the database with ``games`` finished games (SQL, in bulk), then time the standings."""
    import psycopg

    from hub.db import connect

    players = 2000
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO boxes (name, key_hash) VALUES ('bench-bulk', 'none') ON CONFLICT DO NOTHING")
        conn.execute("INSERT INTO players (name) SELECT 'Bulk ' || i FROM generate_series(1, %s) i "
                     "ON CONFLICT DO NOTHING", (players,))
        conn.execute(
            "INSERT INTO games (box_id, box_game, game, players, lines, public, finished, finish_seq) "
            "SELECT (SELECT id FROM boxes WHERE name = 'bench-bulk'), i, 'third-man', '[]', 49, '{}', "
            "now() - ((%s - i) || ' minutes')::interval, nextval('finish_seq') FROM generate_series(1, %s) i",
            (games, games))
        conn.execute(
            "INSERT INTO seats (game_id, seat, player_id, rank) "
            "SELECT g.id, s, (SELECT min(id) FROM players WHERE name LIKE 'Bulk %%') + (g.box_game * 4 + s) %% %s, s + 1 "
            "FROM games g, generate_series(0, 3) s WHERE g.box_id = (SELECT id FROM boxes WHERE name = 'bench-bulk')",
            (players,))
    from hub.league import rerate

    with connect(url) as conn:
        t0 = time.perf_counter()
        rerate(conn, "third-man")
        rerate_s = time.perf_counter() - t0
        stored = conn.execute("SELECT count(*) AS n FROM games WHERE finish_seq IS NOT NULL").fetchone()["n"]
        query = []
        for _ in range(50):
            t0 = time.perf_counter()
            conn.execute("SELECT p.name, r.rating, r.games FROM ratings r JOIN players p ON p.id = r.player_id "
                         "WHERE r.game = 'third-man' ORDER BY r.rating DESC, p.name").fetchall()
            query.append(time.perf_counter() - t0)
    import http.client

    def timed(path):
        out, body = [], b""
        for _ in range(50):
            t0 = time.perf_counter()
            c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            c.request("GET", path)
            resp = c.getresponse()
            body = resp.read()
            c.close()
            assert resp.status == 200, body
            out.append(time.perf_counter() - t0)
        return out, body

    api, body = timed("/api/league?game=third-man")
    dated, dated_body = timed("/api/league?game=third-man&from=2000-01-01")
    month = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86400))
    recent, _ = timed(f"/api/league?game=third-man&from={month}")
    # The big screen while two clients loop on the dated standings (no credential needed).
    from hub.db import add_box

    with connect(url) as conn:
        live = add_box(conn, "bench-standings-live")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            c.request("GET", "/api/league?game=third-man&from=2000-01-01")
            c.getresponse().read()
            c.close()
    loopers = [threading.Thread(target=loop, daemon=True) for _ in range(2)]
    for t in loopers:
        t.start()
    try:
        screen = _latency(server.port, lambda i: _post(server.port, "/api/box/state", {"game": 1, "state": {"n": i}},
                                                       live, "PUT"), "/api/tables/events", 100, gap=0.02)
    finally:
        stop.set()
        for t in loopers:
            t.join()
    return {"games_stored": stored, "players": len(json.loads(body)["players"]),
            "api_median_ms": round(statistics.median(api) * 1000, 2), "api_p99_ms": round(_pct(api, 99) * 1000, 2),
            "dated_all_history_median_ms": round(statistics.median(dated) * 1000, 2),
            "dated_all_history_p99_ms": round(_pct(dated, 99) * 1000, 2),
            "dated_players": len(json.loads(dated_body)["players"]),
            "dated_last_30_days_median_ms": round(statistics.median(recent) * 1000, 2),
            "big_screen_p99_ms_while_2_clients_loop_on_dated": round(_pct(screen, 99) * 1000, 2),
            "sql_median_ms": round(statistics.median(query) * 1000, 2), "rerate_from_scratch_s": round(rerate_s, 1),
            "target_ms": 100}


def bench_catch_up(server, url, samples, backlog):
    """The live path while ``BOXES`` boxes post ``backlog`` games each at once
    (after an outage): PUT → big screen, p50/p99."""
    from hub.db import add_box, connect

    with connect(url) as conn:
        live = add_box(conn, "bench-catch-up-live")
        keys = [add_box(conn, f"bench-catch-up-{i}") for i in range(BOXES)]
    names = [f"Catch {i}" for i in range(120)]
    outcomes = [[3, 2, 1, 0], [0, 3, 1, 1], [1, 0, 3, 2], [2, 1, 0, 3]]
    logs = [[_third_man([names[(b * 5 + g * 3 + s) % len(names)] for s in range(4)], outcomes[(b + g) % 4])
             for g in range(backlog)] for b in range(BOXES)]
    done, errors = threading.Event(), []
    posted = [0]

    def box(b):
        for g, log in enumerate(logs[b], start=1000):
            status = _post(server.port, f"/api/box/games/{g}/lines", {"from": 0, "lines": log, "finished": True}, keys[b])
            if status != 200:
                errors.append(status)
            posted[0] += 1
            # and its live table, as a box's feeder sends it after each change
            _post(server.port, "/api/box/state", {"game": g, "state": {"scores": [g, 0, 0, 0]}}, keys[b], "PUT")

    threads = [threading.Thread(target=box, args=(b,), daemon=True) for b in range(BOXES)]
    for t in threads:
        t.start()
    try:
        hub = _latency(server.port, lambda i: _post(server.port, "/api/box/state",
                                                    {"game": 1, "state": {"n": i}}, live, "PUT"),
                       "/api/tables/events", samples, gap=0.05)      # spread over the catch-up
        during = posted[0]
    finally:
        for t in threads:
            t.join()
        done.set()
    base = _bare_echo(samples)
    return {"samples": samples, "boxes_catching_up": BOXES, "games_posted_while_measuring": during,
            "post_errors": len(errors), "p50_ms": round(statistics.median(hub) * 1000, 2),
            "p99_ms": round(_pct(hub, 99) * 1000, 2),
            "baseline_bare_sse_p50_ms": round(statistics.median(base) * 1000, 2),
            "baseline_bare_sse_p99_ms": round(_pct(base, 99) * 1000, 2), "target_p99_ms": 1000}


def bench_offer(server, url, samples):
    """``tournament seat`` → an idle box's feeder holds the offer."""
    import shutil
    import tempfile

    from companion.session import TableSession
    from companion.store import Store
    from hub import tournament
    from hub.db import add_box, connect
    from hub.feeder import Feeder

    out, plain = [], []
    for i in range(samples):
        with connect(url) as conn:
            name = f"bench-offer-{i}"
            key = add_box(conn, name)
            tid = tournament.create(conn, f"Offer {i}", "third-man", [f"O{i}-{s}" for s in range(4)], [name])
        folder = tempfile.mkdtemp(prefix="bench-hub-offer-")
        store = Store(folder)
        feeder = Feeder(store.path, f"http://127.0.0.1:{server.port}", key, TableSession(store), rescan=3600).start()
        try:
            deadline = time.monotonic() + 10
            while feeder.status()["reachable"] is not True and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)            # the long poll is waiting
            t0 = time.perf_counter()
            with connect(url) as conn:
                tournament.seat_round(conn, tid)
            while feeder.status()["offer"] is None and time.perf_counter() - t0 < 30:
                time.sleep(0.002)
            out.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            import http.client

            c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            c.request("GET", "/api/box/assignment", headers={"Authorization": f"Bearer {key}"})
            c.getresponse().read()
            c.close()
            plain.append(time.perf_counter() - t1)
        finally:
            feeder.stop()
            store.close()
            shutil.rmtree(folder, ignore_errors=True)
    return {"samples": samples, "seat_to_offer_median_ms": round(statistics.median(out) * 1000, 1),
            "seat_to_offer_max_ms": round(max(out) * 1000, 1),
            "baseline_plain_get_median_ms": round(statistics.median(plain) * 1000, 2), "target_ms": 2000}


def run(quick: bool = False) -> dict:
    try:
        import openskill  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"the hub's libraries are missing ({exc})"}
    pg = _pg()
    if pg is None:
        return {"skipped": "PostgreSQL's server is not installed (apt-get install postgresql)"}
    try:
        from hub.app import create_app
        from hub.serve import HubServer

        url = pg.create_database("bench_hub")
        server = HubServer(create_app(url, pool_size=16), "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            return {"ingest": bench_ingest(server, url, 2 if quick else 10),
                    "box_to_big_screen": bench_push(server, url, 50 if quick else 300),
                    "big_screen_while_50_boxes_catch_up": bench_catch_up(server, url, 50 if quick else 200,
                                                                         4 if quick else 20),
                    "offer": bench_offer(server, url, 3 if quick else 10),
                    "standings": bench_standings(server, url, 10_000 if quick else 100_000)}
        finally:
            server.stop()
            thread.join(10)
    finally:
        pg.stop()
