"""A tournament: one game, its registered players, rounds seated Swiss-style.

* **Seating** (:func:`seat_round`, :func:`seat_tables`): the players present
  this round are put in Swiss order — tournament points, then league rating
  of the game, then name — and split into tables so that, first, as few pairs
  as possible meet again (exactly: the fewest repeat pairings of all
  seatings), then tables hold players as close in that order as possible.
  Two-player tables are a minimum-cost perfect matching (networkx's
  ``max_weight_matching``, as Swiss pairing programs such as bbpPairings and
  JaVaFo pair by weighted matching); larger tables a branch-and-bound search
  over the partitions, exact unless it runs past :data:`SEARCH_LIMIT`
  tables tried (then the best found, and ``seat`` says so).  The repeats
  made are reported.
* **Boxes**: each table is played at one of the tournament's boxes; a round
  needing more tables than there are boxes is refused (``tournament boxes``
  gives the tournament more), unless seated ``--without-boxes``: the tables
  beyond the boxes are played on paper and the organiser enters each one's
  finishing order (:func:`enter_result`, ``tournament result``).  Such a
  result counts in the tournament, not in the league (no game log).
* **Table size**: the game's own (4 for The Third Man).  A game of 2 to N
  players gets tables of N or fewer, sized as evenly as its minimum allows.
* **Byes**: the players who do not fill a table sit out, taken from the bottom
  of the order among those who have had the fewest byes; a bye is worth
  :data:`BYE_POINTS`.
* **Late arrivals** join from the next round to be seated.
* **Results** come from the boxes: the first game finished at a table's box,
  of the tournament's game, with exactly the table's players (in any seats),
  after the round was seated.  It stays the table's result if it is taken
  back or changed at the table (standings follow its seats); once the
  round is closed, such a change is also noted for the organiser
  (:func:`follow`, :func:`notices`).
* **Points** follow the game's scoring: its tokens where it has them (The Third
  Man: one point per token won in the match), else placing points (one per
  player ranked below).  Standings: points, then wins, then name.
"""

from __future__ import annotations

import itertools
import json
import math

from companion import games as core_games
from companion.errors import ActionError
from companion.names import refuse_lookalikes, tidy

from .db import HubError
from .league import player_ids

SEARCH_LIMIT = 200_000      # tables tried by the exhaustive search before it settles for its best
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
    players = [tidy(p) for p in players]
    if len(set(players)) != len(players):
        raise HubError("a player is registered twice")
    _refuse_lookalikes(players)
    with conn.transaction():
        tid = conn.execute("INSERT INTO tournaments (name, game, boxes) VALUES (%s, %s, %s) RETURNING id",
                           (name, game, json.dumps([known[b] for b in boxes]))).fetchone()["id"]
        for pid in player_ids(conn, players):
            conn.execute("INSERT INTO tournament_players VALUES (%s, %s, 1)", (tid, pid))
    return tid


def _refuse_lookalikes(players: list[str]) -> None:
    """The box's rule (companion/names.py): names the tables can tell apart."""
    try:
        refuse_lookalikes(players)
    except ActionError as exc:
        raise HubError(str(exc)) from None


def _tournament(conn, tid: int) -> dict:
    row = conn.execute("SELECT * FROM tournaments WHERE id = %s", (tid,)).fetchone()
    if row is None:
        raise HubError(f"there is no tournament {tid}")
    return row


def join(conn, tid: int, name: str) -> int:
    """A late arrival: seated from the next round; returns that round."""
    with conn.transaction():
        t = _tournament(conn, tid)
        name = tidy(name)
        entered = [r["name"] for r in conn.execute(
            "SELECT p.name FROM tournament_players tp JOIN players p ON p.id = tp.player_id "
            "WHERE tp.tournament_id = %s", (tid,)).fetchall()]
        if name not in entered:
            _refuse_lookalikes(entered + [name])
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


def seat_round(conn, tid: int, without_boxes: bool = False) -> int:
    """Seat the next round; returns its number.  The current round must be complete."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7216003, %s)", (tid,))
        t = _tournament(conn, tid)
        open_tables = conn.execute(
            "SELECT count(*) AS n FROM tournament_tables tt LEFT JOIN games g ON g.id = tt.game_id "
            "LEFT JOIN tournament_results tr ON (tr.tournament_id, tr.round, tr.tbl) = (tt.tournament_id, tt.round, tt.tbl) "
            "WHERE tt.tournament_id = %s AND tt.round = %s AND g.finish_seq IS NULL AND tr.tbl IS NULL",
            (tid, t["round"])).fetchone()["n"]
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
        boxes = t["boxes"]
        if len(sizes) > len(boxes) and not without_boxes:
            raise HubError(f"round {nxt} needs {len(sizes)} tables for {len(order)} players, but the tournament "
                           f"has {len(boxes)} box(es): give it more with 'companion hub tournament boxes {tid} "
                           f"BOX1,BOX2,...', or seat with --without-boxes and enter the other tables' results "
                           f"with 'companion hub tournament result'")
        met = _met(conn, tid)
        names = [p["name"] for p in remaining]
        tables, repeats, exact = seat_tables(len(names), sizes,
                                             lambda i, j: met.get(frozenset((names[i], names[j])), 0))
        for number, table in enumerate(tables, start=1):
            conn.execute("INSERT INTO tournament_tables (tournament_id, round, tbl, box_id, players) "
                         "VALUES (%s, %s, %s, %s, %s)",
                         (tid, nxt, number, boxes[number - 1] if number <= len(boxes) else None,
                          json.dumps([names[i] for i in table])))
        for pid in bye_ids:
            conn.execute("INSERT INTO tournament_byes VALUES (%s, %s, %s)", (tid, nxt, pid))
        conn.execute("UPDATE tournaments SET round = %s, seated_repeats = %s, seated_exact = %s WHERE id = %s",
                     (nxt, repeats, exact, tid))
        conn.execute("NOTIFY companion_seating")      # the hub wakes the boxes' long polls at commit
    return nxt


def enter_result(conn, tid: int, table: int, order: list[str], points: list[int] | None = None) -> None:
    """The organiser's result for a table of the current round played
    without a box: its players in finishing order (best first) and, if
    given, the tournament points of each (else placing points)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7216003, %s)", (tid,))
        t = _tournament(conn, tid)
        row = conn.execute("SELECT players, box_id, game_id FROM tournament_tables WHERE tournament_id = %s "
                           "AND round = %s AND tbl = %s", (tid, t["round"], table)).fetchone()
        if row is None:
            raise HubError(f"round {t['round']} has no table {table}")
        if row["box_id"] is not None:
            raise HubError(f"table {table} plays at a box: its result comes from the box")
        if sorted(order) != sorted(row["players"]) or len(set(order)) != len(order):
            raise HubError(f"table {table}'s players are {', '.join(row['players'])}: give each once, best first")
        if points is None:
            points = [len(order) - 1 - i for i in range(len(order))]
        if len(points) != len(order) or any(p < 0 or p > 1000 for p in points):
            raise HubError(f"give {len(order)} points (0 to 1000), one per player in the order given")
        conn.execute("INSERT INTO tournament_results (tournament_id, round, tbl, players, points) "
                     "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tournament_id, round, tbl) DO UPDATE "
                     "SET players = EXCLUDED.players, points = EXCLUDED.points, entered = now()",
                     (tid, t["round"], table, json.dumps(order), json.dumps(points)))


def set_boxes(conn, tid: int, boxes: list[str]) -> None:
    """The tournament's boxes, table 1, 2, ... from the next round seated."""
    with conn.transaction():
        _tournament(conn, tid)
        known = {r["name"]: r["id"] for r in conn.execute(
            "SELECT id, name FROM boxes WHERE name = ANY(%s) AND NOT revoked", (boxes,)).fetchall()}
        missing = [b for b in boxes if b not in known]
        if missing or not boxes:
            raise HubError(f"no such box: {', '.join(missing)}" if missing else "give at least one box")
        conn.execute("UPDATE tournaments SET boxes = %s WHERE id = %s", (json.dumps([known[b] for b in boxes]), tid))


def seat_tables(n: int, sizes: list[int], met) -> tuple[list[list[int]], int, bool]:
    """Split players ``0 … n-1`` (Swiss order) into tables of ``sizes``.

    ``met(i, j)`` is how often i and j met before.  Returns ``(tables,
    repeats, exact)``: the tables (each in Swiss order, the top table
    first), the repeat pairings they hold (a pair that met twice counts
    twice), and whether the search was exhaustive.  The seating minimises
    the repeats, then the spread (the sum over tables of the distance in the
    Swiss order between a table's first and last player)."""
    weight = n * n + 1          # one repeat outweighs any spread

    def cost(table) -> int:
        return weight * sum(met(a, b) for a, b in itertools.combinations(table, 2)) + table[-1] - table[0]

    if sizes and set(sizes) == {2}:
        tables = _matching(n, met, weight)
    else:
        tables, complete = _search(list(range(n)), sorted(sizes), cost)
        if tables is None:        # pragma: no cover  (the first descent always completes)
            raise HubError("no seating found")
    tables = sorted((sorted(t) for t in tables), key=lambda t: t[0])
    repeats = sum(met(a, b) for t in tables for a, b in itertools.combinations(t, 2))
    return tables, repeats, (True if set(sizes) == {2} else complete)


def _matching(n: int, met, weight: int) -> list[list[int]]:
    import networkx as nx

    graph = nx.Graph()
    top = weight * n * n
    for i, j in itertools.combinations(range(n), 2):
        graph.add_edge(i, j, weight=top - (weight * met(i, j) + j - i))
    pairs = nx.max_weight_matching(graph, maxcardinality=True)
    return [sorted(p) for p in pairs]


def _search(players: list[int], sizes: list[int], cost):
    """Branch and bound: the first unseated player's table is chosen among the
    combinations of the others, nearest in order first (so the first seating
    found is the plain Swiss one), pruned by the cost so far plus each
    remaining table's least spread."""
    best: list = [None, math.inf]
    tried = [0]

    def go(left, sizes_left, seated, so_far):
        if not left:
            if so_far < best[1]:
                best[0], best[1] = list(seated), so_far
            return
        first, rest = left[0], left[1:]
        for size in sorted(set(sizes_left)):
            others = list(sizes_left)
            others.remove(size)
            floor = sum(s - 1 for s in others)
            for combo in itertools.combinations(rest, size - 1):
                if tried[0] >= SEARCH_LIMIT and best[0] is not None:
                    return
                tried[0] += 1
                table = (first, *combo)
                total = so_far + cost(table)
                if total + floor >= best[1]:
                    continue
                taken = set(combo)
                seated.append(list(table))
                go([p for p in rest if p not in taken], others, seated, total)
                seated.pop()

    go(players, sizes, [], 0)
    return best[0], tried[0] < SEARCH_LIMIT


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
    for r in conn.execute("SELECT players, points FROM tournament_results WHERE tournament_id = %s",
                          (tid,)).fetchall():
        for place, (name, points) in enumerate(zip(r["players"], r["points"])):
            entry = out.setdefault(name, {"name": name, "points": 0, "played": 0, "wins": 0, "byes": 0})
            entry["points"] += points
            entry["played"] += 1
            entry["wins"] += int(place == 0)
    for r in conn.execute("SELECT p.name FROM tournament_byes b JOIN players p ON p.id = b.player_id "
                          "WHERE b.tournament_id = %s", (tid,)).fetchall():
        out[r["name"]]["byes"] += 1
        out[r["name"]]["points"] += BYE_POINTS
    return sorted(out.values(), key=lambda e: (-e["points"], -e["wins"], e["name"]))


def view(conn, tid: int) -> dict:
    """Everything the tournament page shows."""
    t = _tournament(conn, tid)
    tables = conn.execute(
        "SELECT tt.round, tt.tbl, tt.players, tt.game_id, b.name AS box, g.public, g.finish_seq, "
        "tr.players AS entered FROM tournament_tables tt "
        "LEFT JOIN tournament_results tr ON (tr.tournament_id, tr.round, tr.tbl) = (tt.tournament_id, tt.round, tt.tbl) "
        "LEFT JOIN boxes b ON b.id = tt.box_id LEFT JOIN games g ON g.id = tt.game_id "
        "WHERE tt.tournament_id = %s ORDER BY tt.round, tt.tbl", (tid,)).fetchall()
    byes = conn.execute("SELECT b.round, p.name FROM tournament_byes b JOIN players p ON p.id = b.player_id "
                        "WHERE b.tournament_id = %s ORDER BY b.round, p.name", (tid,)).fetchall()
    rounds: dict = {}
    for r in tables:
        rounds.setdefault(r["round"], {"round": r["round"], "tables": [], "byes": []})["tables"].append(
            {"table": r["tbl"], "box": r["box"], "players": r["players"], "done": r["finish_seq"] is not None or r["entered"] is not None,
             "entered": r["entered"],
             "tokens": (r["public"] or {}).get("tokens") if r["public"] else None})
    for b in byes:
        rounds.setdefault(b["round"], {"round": b["round"], "tables": [], "byes": []})["byes"].append(b["name"])
    return {"id": t["id"], "name": t["name"], "game": t["game"], "round": t["round"],
            "repeats": t["seated_repeats"], "exact": t["seated_exact"],
            "rounds": [rounds[k] for k in sorted(rounds)], "standings": standings(conn, tid),
            "notices": notices(conn, tid)}
