"""A tournament: one game, its registered players, rounds seated Swiss-style.

* **Seating** (:func:`seat_round`): the players present this round are put in
  Swiss order — tournament points, then league rating of the game, then name —
  and tables are filled from the top: each table takes the first unseated
  player, then again and again the unseated player who has met the table's
  players least often in earlier rounds (the higher in the order among
  equals).  So tables hold players of similar standing and rating, and repeat
  opponents only when nothing else is possible.
* **Table size**: the game's own (4 for The Third Man).  A game of 2 to N
  players gets tables of N or fewer, sized as evenly as its minimum allows.
* **Byes**: the players who do not fill a table sit out, taken from the bottom
  of the order among those who have had the fewest byes; a bye is worth
  :data:`BYE_POINTS`.
* **Late arrivals** join from the next round to be seated.
* **Results** come from the boxes: the first game finished at a table's box,
  of the tournament's game, with exactly the table's players (in any seats),
  after the round was seated.
* **Points** follow the game's scoring: its tokens where it has them (The Third
  Man: one point per token won in the match), else placing points (one per
  player ranked below).  Standings: points, then wins, then name.
"""

from __future__ import annotations

import json
import math

from companion import games as core_games

from .db import HubError
from .league import player_ids

BYE_POINTS = 1      # about a player's average share of a Third Man match's tokens


def create(conn, name: str, game: str, players: list[str], boxes: list[str]) -> int:
    try:
        core_games.get(game)
    except Exception:
        raise HubError(f"unknown game {game!r}") from None
    known = {r["name"]: r["id"] for r in conn.execute("SELECT id, name FROM boxes WHERE name = ANY(%s) AND NOT revoked",
                                                      (boxes,)).fetchall()}
    missing = [b for b in boxes if b not in known]
    if missing:
        raise HubError(f"no such box: {', '.join(missing)}")
    if len(set(players)) != len(players):
        raise HubError("a player is registered twice")
    with conn.transaction():
        tid = conn.execute("INSERT INTO tournaments (name, game, boxes) VALUES (%s, %s, %s) RETURNING id",
                           (name, game, json.dumps([known[b] for b in boxes]))).fetchone()["id"]
        for pid in player_ids(conn, players):
            conn.execute("INSERT INTO tournament_players VALUES (%s, %s, 1)", (tid, pid))
    return tid


def _tournament(conn, tid: int) -> dict:
    row = conn.execute("SELECT * FROM tournaments WHERE id = %s", (tid,)).fetchone()
    if row is None:
        raise HubError(f"there is no tournament {tid}")
    return row


def join(conn, tid: int, name: str) -> int:
    """A late arrival: seated from the next round; returns that round."""
    with conn.transaction():
        t = _tournament(conn, tid)
        pid = player_ids(conn, [name])[0]
        conn.execute("INSERT INTO tournament_players VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                     (tid, pid, t["round"] + 1))
    return t["round"] + 1


def table_sizes(game, n: int) -> list[int]:
    """Sizes of the tables for ``n`` players (the rest have a bye)."""
    if game.min_players == game.max_players:
        return [game.max_players] * (n // game.max_players)
    tables = math.ceil(n / game.max_players)
    while tables and n // tables < game.min_players:
        tables -= 1
    if not tables:
        return []
    base, extra = divmod(n, tables)
    return [base + 1 if i < extra else base for i in range(tables)]


def seat_round(conn, tid: int) -> int:
    """Seat the next round; returns its number.  The current round must be complete."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7216003, %s)", (tid,))
        t = _tournament(conn, tid)
        open_tables = conn.execute(
            "SELECT count(*) AS n FROM tournament_tables tt LEFT JOIN games g ON g.id = tt.game_id "
            "WHERE tt.tournament_id = %s AND tt.round = %s AND g.finish_seq IS NULL", (tid, t["round"])).fetchone()["n"]
        if open_tables:
            raise HubError(f"round {t['round']} still has {open_tables} table(s) without a result")
        game = core_games.get(t["game"])
        nxt = t["round"] + 1
        people = conn.execute(
            "SELECT p.id, p.name, COALESCE(r.rating, 0) AS rating FROM tournament_players tp "
            "JOIN players p ON p.id = tp.player_id "
            "LEFT JOIN ratings r ON r.game = %s AND r.player_id = COALESCE(p.same_as, p.id) "
            "WHERE tp.tournament_id = %s AND tp.from_round <= %s", (t["game"], tid, nxt)).fetchall()
        scores = {s["name"]: s for s in standings(conn, tid)}
        order = sorted(people, key=lambda p: (-scores.get(p["name"], {}).get("points", 0), -p["rating"], p["name"]))
        sizes = table_sizes(game, len(order))
        if not sizes:
            raise HubError(f"{len(order)} players are too few for a table of {t['game']}")
        byes_had = {r["player_id"]: r["n"] for r in conn.execute(
            "SELECT player_id, count(*) AS n FROM tournament_byes WHERE tournament_id = %s GROUP BY player_id",
            (tid,)).fetchall()}
        sitting_out = len(order) - sum(sizes)
        bottom_up = sorted(range(len(order)), key=lambda i: (byes_had.get(order[i]["id"], 0), -i))
        bye_ids = {order[i]["id"] for i in bottom_up[:sitting_out]}
        remaining = [p for p in order if p["id"] not in bye_ids]
        met = _met(conn, tid)
        boxes = t["boxes"]
        for number, size in enumerate(sizes, start=1):
            table = [remaining.pop(0)]
            while len(table) < size:
                best = min(range(len(remaining)),
                           key=lambda i: (sum(met.get(frozenset((remaining[i]["name"], q["name"])), 0) for q in table), i))
                table.append(remaining.pop(best))
            box = boxes[number - 1] if number <= len(boxes) else None
            conn.execute("INSERT INTO tournament_tables (tournament_id, round, tbl, box_id, players) "
                         "VALUES (%s, %s, %s, %s, %s)", (tid, nxt, number, box, json.dumps([p["name"] for p in table])))
        for pid in bye_ids:
            conn.execute("INSERT INTO tournament_byes VALUES (%s, %s, %s)", (tid, nxt, pid))
        conn.execute("UPDATE tournaments SET round = %s WHERE id = %s", (nxt, tid))
    return nxt


def _met(conn, tid: int) -> dict:
    met: dict = {}
    for r in conn.execute("SELECT players FROM tournament_tables WHERE tournament_id = %s", (tid,)).fetchall():
        names = r["players"]
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                key = frozenset((a, b))
                met[key] = met.get(key, 0) + 1
    return met


def record_result(conn, box_id: int, game_row: int, game: str, players: list[str]) -> None:
    """A game finished at a box (inside the ingest transaction): the result of
    the open table of the current round at that box with exactly those players."""
    rows = conn.execute(
        "SELECT tt.tournament_id, tt.round, tt.tbl, tt.players FROM tournament_tables tt "
        "JOIN tournaments t ON t.id = tt.tournament_id AND t.round = tt.round "
        "WHERE tt.box_id = %s AND tt.game_id IS NULL AND t.game = %s ORDER BY tt.seated",
        (box_id, game)).fetchall()
    for r in rows:
        if sorted(r["players"]) == sorted(players):
            conn.execute("UPDATE tournament_tables SET game_id = %s WHERE tournament_id = %s AND round = %s "
                         "AND tbl = %s", (game_row, r["tournament_id"], r["round"], r["tbl"]))
            return


def follow(conn, box_id: int, game_row: int, game: str, players: list[str], finished: bool) -> None:
    """A game's result changed (inside the ingest transaction): a first
    finish becomes its table's result; a game that is already a table's
    result stays it (standings read its seats, so they follow a take-back),
    and when that table's round was already closed the organiser is told
    (``tournament show``, the tournament page): the later rounds were seated
    on the old result."""
    linked = conn.execute(
        "SELECT tt.tournament_id, tt.round, tt.tbl, t.round AS now FROM tournament_tables tt "
        "JOIN tournaments t ON t.id = tt.tournament_id WHERE tt.game_id = %s", (game_row,)).fetchall()
    if not linked:
        if finished:
            record_result(conn, box_id, game_row, game, players)
        return
    for r in linked:
        if r["round"] < r["now"]:
            conn.execute("INSERT INTO tournament_notices (tournament_id, round, tbl, message) VALUES (%s, %s, %s, %s)",
                         (r["tournament_id"], r["round"], r["tbl"], "changed" if finished else "taken back"))


def notices(conn, tid: int) -> list[dict]:
    """``[{"round", "table", "finished", "at"}]``: results changed after their round was closed."""
    return [{"round": r["round"], "table": r["tbl"], "finished": r["message"] == "changed",
             "at": r["at"].isoformat()} for r in conn.execute(
        "SELECT round, tbl, message, at FROM tournament_notices WHERE tournament_id = %s ORDER BY id",
        (tid,)).fetchall()]


def assignment(conn, box_id: int) -> dict | None:
    """The seating a box's new-game screen offers (contract point 3), or None."""
    row = conn.execute(
        "SELECT tt.tournament_id, tt.round, tt.tbl, tt.players, t.game FROM tournament_tables tt "
        "JOIN tournaments t ON t.id = tt.tournament_id AND t.round = tt.round "
        "WHERE tt.box_id = %s AND tt.game_id IS NULL ORDER BY tt.seated LIMIT 1", (box_id,)).fetchone()
    if row is None:
        return None
    return {"tournament": row["tournament_id"], "round": row["round"], "table": row["tbl"],
            "game": row["game"], "players": row["players"]}


def _points(public: dict, seat: int, rank: int, n: int, ranks: list[int]) -> int:
    tokens = public.get("tokens")
    if isinstance(tokens, list) and len(tokens) == n and any(tokens):
        return int(tokens[seat])
    return sum(1 for r in ranks if r > rank)


def standings(conn, tid: int) -> list[dict]:
    """``[{"name", "points", "played", "wins", "byes"}]``, best first."""
    rows = conn.execute(
        "SELECT g.id AS game_id, g.public, s.seat, s.rank, p.name FROM tournament_tables tt "
        "JOIN games g ON g.id = tt.game_id JOIN seats s ON s.game_id = g.id JOIN players p ON p.id = s.player_id "
        "WHERE tt.tournament_id = %s ORDER BY tt.round, tt.tbl, s.seat", (tid,)).fetchall()
    out: dict = {}
    for r in conn.execute("SELECT p.name FROM tournament_players tp JOIN players p ON p.id = tp.player_id "
                          "WHERE tp.tournament_id = %s", (tid,)).fetchall():
        out[r["name"]] = {"name": r["name"], "points": 0, "played": 0, "wins": 0, "byes": 0}
    games: dict = {}
    for r in rows:
        games.setdefault(r["game_id"], []).append(r)
    for seats in games.values():
        ranks = [s["rank"] for s in seats]
        for s in seats:
            entry = out.setdefault(s["name"], {"name": s["name"], "points": 0, "played": 0, "wins": 0, "byes": 0})
            entry["points"] += _points(s["public"], s["seat"], s["rank"], len(seats), ranks)
            entry["played"] += 1
            entry["wins"] += int(s["rank"] == 1)
    for r in conn.execute("SELECT p.name FROM tournament_byes b JOIN players p ON p.id = b.player_id "
                          "WHERE b.tournament_id = %s", (tid,)).fetchall():
        out[r["name"]]["byes"] += 1
        out[r["name"]]["points"] += BYE_POINTS
    return sorted(out.values(), key=lambda e: (-e["points"], -e["wins"], e["name"]))


def view(conn, tid: int) -> dict:
    """Everything the tournament page shows."""
    t = _tournament(conn, tid)
    tables = conn.execute(
        "SELECT tt.round, tt.tbl, tt.players, tt.game_id, b.name AS box, g.public, g.finish_seq "
        "FROM tournament_tables tt "
        "LEFT JOIN boxes b ON b.id = tt.box_id LEFT JOIN games g ON g.id = tt.game_id "
        "WHERE tt.tournament_id = %s ORDER BY tt.round, tt.tbl", (tid,)).fetchall()
    byes = conn.execute("SELECT b.round, p.name FROM tournament_byes b JOIN players p ON p.id = b.player_id "
                        "WHERE b.tournament_id = %s ORDER BY b.round, p.name", (tid,)).fetchall()
    rounds: dict = {}
    for r in tables:
        rounds.setdefault(r["round"], {"round": r["round"], "tables": [], "byes": []})["tables"].append(
            {"table": r["tbl"], "box": r["box"], "players": r["players"], "done": r["finish_seq"] is not None,
             "tokens": (r["public"] or {}).get("tokens") if r["public"] else None})
    for b in byes:
        rounds.setdefault(b["round"], {"round": b["round"], "tables": [], "byes": []})["byes"].append(b["name"])
    return {"id": t["id"], "name": t["name"], "game": t["game"], "round": t["round"],
            "rounds": [rounds[k] for k in sorted(rounds)], "standings": standings(conn, tid),
            "notices": notices(conn, tid)}
