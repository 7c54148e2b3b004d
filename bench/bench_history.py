"""A history listing at 10 and at 10,000 stored games (issue 21, point 4).

    python -m bench --only bench_history [--quick]
    python bench/bench_history.py [--quick]

As found: after 300 imports the first ``GET /api/history`` took 66.7 s, and
past 4,096 games every listing replayed every game.  Now each game's
summary (lines, bytes, scores, tokens) is kept in the store when the game
changes and a listing reads one page of rows through an index.

For 10 and for 10,000 stored games (scoreboard games of 20 lines, a third
of them unfinished), in the same process and the same run:

* ``list_first_page_ms`` — ``GET /api/history`` (the newest 50), median;
* ``list_last_page_ms`` — the page of the oldest games (``?from=``);
* ``list_player_ms`` — ``?player=`` (a roster player's games);
* ``page_html_ms`` — the ``/history`` page;
* ``stats_cold_ms`` — ``GET /api/stats`` once after a change (every game
  counted: no replay, but linear in the games), ``stats_ms`` — again with
  nothing changed (kept by the store's generation); ``players_ms`` —
  ``GET /api/players`` (the roster with each player's game count: linear
  in the seats), for comparison;
* ``plays_cold_ms`` — ``GET /api/history/plays.jsonl`` (every finished
  game as a BG Stats play) once after a change, ``plays_ms`` again (the
  plays kept by the store's generation), ``plays_locked_ms`` — the
  longest hold of the session's lock by it (reading one chunk of rows);
* ``state_ms`` — the baseline: ``GET /api/state`` in the same app;
* ``replay_per_game_ms`` — what a listing used to pay per game (one
  replay), and ``old_listing_estimate_s`` — that times the games.

* ``first_page_per_game_ms`` — the first page's time per game listed (a
  page holds 10 games at 10, 50 at 10,000).

Target (printed, never asserted): per game listed, the first page at
10,000 stored games within a factor 2 of the first page at 10 (and the
whole first page far below the old listing's estimate).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]


def _log(n: int, lines: int) -> tuple[list[str], dict]:
    from companion.store import dump_action
    from companion.timeline import Timeline

    timeline = Timeline()
    actions = [{"type": "new_game", "game": "scoreboard", "players": PLAYERS[: 2 + n % 3]}]
    for k in range(lines - 1):
        actions.append({"type": "add", "seat": k % (2 + n % 3), "points": (n + k) % 7})
    for action in actions:
        timeline.apply(action)
    return [dump_action(a) for a in actions], timeline.public()


def _fill(store, games: int, lines: int) -> None:
    """``games`` stored games, written without waiting for the disk (a bench
    store, thrown away after): the listing, not the filling, is measured."""
    store.db.execute("PRAGMA synchronous=OFF")
    logs = [_log(n, lines) for n in range(7)]
    for n in range(games):
        log, public = logs[n % 7]
        finished = n % 3 != 0
        store.import_game("scoreboard", json.loads(log[0])["players"], log, finished,
                          [0] if finished else None, public)
    store.db.execute("PRAGMA synchronous=FULL")


def _median_ms(client, path: str, runs: int, **query) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        response = client.get(path, query_string=query or None)
        times.append(time.perf_counter() - began)
        assert response.status_code == 200, (path, response.status_code)
    return round(statistics.median(times) * 1000, 3)


def measure(games: int, runs: int) -> dict:
    from companion.limits import StoreLimits
    from companion.session import TableSession
    from companion.store import Store
    from companion.timeline import replay
    from web import create_app

    with tempfile.TemporaryDirectory(prefix="bench-history-") as folder:
        store = Store(folder, limits=StoreLimits(max_games=max(games, 1)))
        began = time.perf_counter()
        _fill(store, games, 20)
        filled = time.perf_counter() - began
        session = TableSession(store)
        app = create_app(session, config={"language": "en", "max_streams": 10, "keepalive_s": 15.0}, pin="0000")
        client = app.test_client()
        try:
            last = max(0, games - 50)
            listed = len(client.get("/api/history").json["games"])
            out = {
                "games": games,
                "fill_s": round(filled, 2),
                "list_first_page_ms": _median_ms(client, "/api/history", runs),
                "list_last_page_ms": _median_ms(client, f"/api/history?from={last}", runs),
                "list_player_ms": _median_ms(client, "/api/history", runs, player="Chloé"),
                "page_html_ms": _median_ms(client, "/history", runs),
                "stats_cold_ms": _median_ms(client, "/api/stats", 1),
                "stats_ms": _median_ms(client, "/api/stats", runs),
                "players_ms": _median_ms(client, "/api/players", max(3, runs // 4)),
                "state_ms": _median_ms(client, "/api/state", runs),
                # Every finished game as BG Stats plays: once after a change, then kept.
                "plays_cold_ms": _median_ms(client, "/api/history/plays.jsonl", 1),
                "plays_ms": _median_ms(client, "/api/history/plays.jsonl", max(3, runs // 4)),
            }
            from companion.plays import store_rows
            from web.plays import CHUNK
            chunk = store.finished_ids()[:CHUNK]
            began = time.perf_counter()
            store_rows(store, chunk)   # the longest hold of the session's lock by an export: one chunk
            out["plays_locked_ms"] = round((time.perf_counter() - began) * 1000, 3)
            out["first_page_per_game_ms"] = round(out["list_first_page_ms"] / max(1, listed), 4)
            sample = [g.id for g in store.games()[:20]]
            began = time.perf_counter()
            for gid in sample:
                replay(store.lines(gid)).public()
            per_game = (time.perf_counter() - began) / max(1, len(sample))
            out["replay_per_game_ms"] = round(per_game * 1000, 3)
            out["old_listing_estimate_s"] = round(per_game * games, 2)
        finally:
            app.extensions["companion"].close()
            store.close()
    return out


def run(quick: bool = False) -> dict:
    runs = 5 if quick else 21
    small = measure(10, runs)
    large = measure(10_000, runs)
    ratio = round(large["first_page_per_game_ms"] / max(small["first_page_per_game_ms"], 1e-6), 2)
    print(f"{'figure':<26}{'10 games':>12}{'10,000 games':>16}")
    for key in ("list_first_page_ms", "first_page_per_game_ms", "list_last_page_ms", "list_player_ms",
                "page_html_ms", "stats_cold_ms", "stats_ms", "players_ms", "state_ms", "plays_cold_ms",
                "plays_ms", "plays_locked_ms", "replay_per_game_ms",
                "old_listing_estimate_s", "fill_s"):
        print(f"{key:<26}{small[key]:>12}{large[key]:>16}")
    print(f"per game listed, first page at 10,000 / at 10: {ratio} (target < 2)")
    return {"at_10": small, "at_10000": large, "first_page_per_game_ratio": ratio}


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    run(quick="--quick" in sys.argv)
