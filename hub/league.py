"""The league: one rating per player and game, from every finished game.

Why OpenSkill's Plackett–Luce model: it rates games of any number of players
(2 to 8 here) from a full finishing order, ties included, in one update per
game, and it is a maintained, openly licensed library (TrueSkill's own model
is patented and its Python package unmaintained; Elo is for two players).

* **Ranks of a game** (:func:`ranks`): the winner(s) first, then the others by
  their final count — ``tokens`` where the game has them (The Third Man:
  tokens decide the match, the last round's points do not) when they tell the
  players apart, else ``scores``.
  Whether a high count is good is read from the winner: if the winners'
  counts are all below everyone else's, lower is better.  Equal counts tie.
* **Rating shown** (:func:`ordinal`): the conservative ``mu − 3σ`` — a new
  player starts at 0 (25 − 3 × 25/3) and climbs as the hub becomes sure.
* **Order**: games are rated in the order they finished at the hub
  (``games.finish_seq``, taken under a per-game advisory lock, so the
  incremental update as games arrive and :func:`rerate` from scratch apply
  the same updates in the same order and give the same floats).
* **A result taken back** (:func:`settle`): a game re-decided at the table
  after its finish leaves the finishing order (and takes a new place at its
  end when it finishes again); the ratings of its kind are folded again from
  its old place, starting from each player's kept step before it — the same
  floats as :func:`rerate`.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone

from openskill.models import PlackettLuce

from companion.names import tidy

MODEL = PlackettLuce()


def ordinal(mu: float, sigma: float) -> float:
    return mu - 3.0 * sigma


def ranks(public: dict) -> list[int]:
    """1-based rank of each seat in a finished game's public state (ties share a rank)."""
    n = len(public.get("players") or [])
    key = list(counts(public) or [0] * n)
    key = [v if isinstance(v, (int, float)) else 0 for v in key] + [0] * (n - len(key))
    winners = {w for w in (public.get("winner") or []) if isinstance(w, int) and 0 <= w < n}
    others = [s for s in range(n) if s not in winners]
    lower_better = bool(winners and others) and max(key[w] for w in winners) < min(key[o] for o in others)
    values = sorted({key[s] for s in others}, reverse=not lower_better)
    first = 2 if winners else 1
    return [1 if s in winners else first + values.index(key[s]) for s in range(n)]


def counts(public: dict) -> list | None:
    """What decides a finished game after its winner: the tokens where they
    tell the players apart (The Third Man, Costly Tricks), else the scores
    (a scoreboard played to a target holds tokens that all stay 0)."""
    tokens = public.get("tokens")
    if isinstance(tokens, list) and len(set(map(repr, tokens))) > 1:
        return tokens
    return public.get("scores") or tokens


def rate(current: dict, seated: list[tuple[int, int]]) -> dict:
    """New ``{player: (mu, sigma)}`` for the players of one game.

    ``current`` holds the ratings known so far (a newcomer starts at the
    model's defaults); ``seated`` is ``[(player, rank), ...]`` in seat order.
    A player seated twice (two linked names at one table) counts once."""
    seen, players, game_ranks = set(), [], []
    for player, rank in seated:
        if player not in seen:
            seen.add(player)
            players.append(player)
            game_ranks.append(rank)
    if len(players) < 2:
        return {}
    teams = [[MODEL.rating(*current[p]) if p in current else MODEL.rating()] for p in players]
    rated = MODEL.rate(teams, ranks=game_ranks)
    return {p: (team[0].mu, team[0].sigma) for p, team in zip(players, rated)}


# -- in the database ------------------------------------------------------------

def player_ids(conn, names) -> list[int]:
    """The player id of each roster name (created on first sight), tidied
    as the box tidies it (companion/names.py: "A\u200bnn" is Ann); a name
    of nothing but invisible characters (an old box's log) stays as it is."""
    names = [tidy(n) or n for n in names]
    # Sorted: two games finishing at once insert shared names in one order,
    # so they wait for each other instead of deadlocking.
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO players (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
                        [(n,) for n in sorted(set(names))])
    ids = {r["name"]: r["id"] for r in conn.execute("SELECT id, name FROM players WHERE name = ANY(%s)",
                                                    (names,)).fetchall()}
    return [ids[n] for n in names]


def canonical(conn, ids: list[int]) -> list[int]:
    rows = conn.execute("SELECT id, COALESCE(same_as, id) AS c FROM players WHERE id = ANY(%s)", (ids,)).fetchall()
    mapping = {r["id"]: r["c"] for r in rows}
    return [mapping[i] for i in ids]


def lock_game_kind(conn, game: str) -> None:
    """Serialise the rating of one game kind until the transaction ends."""
    conn.execute("SELECT pg_advisory_xact_lock(7216002, hashtext(%s))", (game,))


def record_finish(conn, game_row: int, game: str, public: dict) -> None:
    """A game just finished (inside the ingest transaction): its seats,
    ranks, finishing order and rating update."""
    seat_ids = _seat(conn, game_row, public)
    lock_game_kind(conn, game)
    # clock_timestamp() after the lock: finishing dates follow the finishing
    # order within a game kind (dated standings rely on it).
    mark = conn.execute("UPDATE games SET finished = clock_timestamp(), finish_seq = nextval('finish_seq') "
                        "WHERE id = %s RETURNING finished, finish_seq", (game_row,)).fetchone()
    who = canonical(conn, seat_ids)
    rows = conn.execute("SELECT player_id, mu, sigma, games FROM ratings WHERE game = %s AND player_id = ANY(%s)",
                        (game, who)).fetchall()
    current = {r["player_id"]: (r["mu"], r["sigma"]) for r in rows}
    played = {r["player_id"]: r["games"] for r in rows}
    new = rate(current, list(zip(who, ranks(public))))
    _save(conn, game, game_row, mark["finish_seq"], mark["finished"], new, played)


def _seat(conn, game_row: int, public: dict) -> list[int]:
    names = list(public.get("players") or [])
    seat_ids = player_ids(conn, names)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO seats (game_id, seat, player_id, rank) VALUES (%s, %s, %s, %s)",
                        [(game_row, s, pid, r) for s, (pid, r) in enumerate(zip(seat_ids, ranks(public)))])
    return seat_ids


def _save(conn, game: str, game_row: int, seq: int, finished, new: dict, played: dict) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO ratings (game, player_id, mu, sigma, rating, games) VALUES (%s, %s, %s, %s, %s, 1) "
            "ON CONFLICT (game, player_id) DO UPDATE SET mu = EXCLUDED.mu, sigma = EXCLUDED.sigma, "
            "rating = EXCLUDED.rating, games = ratings.games + 1",
            [(game, p, mu, sigma, ordinal(mu, sigma)) for p, (mu, sigma) in new.items()])
        cur.executemany(
            "INSERT INTO rating_steps (game_id, player_id, mu, sigma, rating, game, seq, n, finished) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(game_row, p, mu, sigma, ordinal(mu, sigma), game, seq, played.get(p, 0) + 1, finished)
             for p, (mu, sigma) in new.items()])


def settle(conn, game_row: int, old_kind: str, old_seq: int | None, game: str, public: dict,
           finished: bool) -> bool:
    """Make the league follow a game whose log just changed (inside the
    ingest transaction); return whether its result changed.

    A game that finishes for the first time is rated incrementally.  A game
    that was already rated and is now unfinished (an undo after the finish)
    or finished with other ranks (played again after the undo) leaves the
    finishing order, takes a new place at its end if finished, and every
    rating of its kind is recomputed from its old place onward from the
    kept per-game steps: the same updates in the same order as a
    from-scratch :func:`rerate`, so the same floats."""
    if old_seq is None:
        if finished:
            record_finish(conn, game_row, game, public)
            return True
        return False
    if finished:
        # New names first, as record_finish does: a player row another
        # transaction is inserting is waited for before the kind's lock.
        player_ids(conn, public.get("players") or [])
    for kind in sorted({old_kind, game}):       # one order everywhere: no deadlock between kinds
        lock_game_kind(conn, kind)
    if finished and game == old_kind:
        old = [(r["name"], r["rank"]) for r in conn.execute(
            "SELECT p.name, s.rank FROM seats s JOIN players p ON p.id = s.player_id WHERE s.game_id = %s "
            "ORDER BY s.seat", (game_row,)).fetchall()]
        if old == list(zip(public.get("players") or [], ranks(public))):
            return False            # taken back and played again to the same result
    conn.execute("DELETE FROM seats WHERE game_id = %s", (game_row,))
    if finished:
        _seat(conn, game_row, public)
        conn.execute("UPDATE games SET finished = clock_timestamp(), finish_seq = nextval('finish_seq') "
                     "WHERE id = %s", (game_row,))
    else:
        conn.execute("UPDATE games SET finished = NULL, finish_seq = NULL WHERE id = %s", (game_row,))
    rerate_from(conn, old_kind, old_seq)
    if game != old_kind and finished:
        rerate_from(conn, game, old_seq)
    return True


def rerate_from(conn, game: str, seq: int) -> int:
    """Recompute the ratings of one game kind from its finishing place
    ``seq`` onward (the kind's lock held); return the games re-rated.

    The ratings before ``seq`` are each player's last kept step there; the
    steps from ``seq`` on are thrown away and the finished games from ``seq``
    on folded again, in order."""
    gone = {r["player_id"] for r in conn.execute(
        "DELETE FROM rating_steps WHERE game = %s AND seq >= %s RETURNING player_id", (game, seq)).fetchall()}
    games = finished_games(conn, game, from_seq=seq)
    affected = gone | {p for g in games for p, _ in g[1]}
    base = conn.execute(
        "SELECT DISTINCT ON (player_id) player_id, mu, sigma, n FROM rating_steps "
        "WHERE game = %s AND player_id = ANY(%s) AND seq < %s ORDER BY player_id, seq DESC",
        (game, list(affected), seq)).fetchall()
    current = {r["player_id"]: (r["mu"], r["sigma"]) for r in base}
    played = {r["player_id"]: r["n"] for r in base}
    steps = []
    for game_row, seated, at_seq, at in games:
        new = rate(current, seated)
        for p, value in new.items():
            current[p] = value
            played[p] = played.get(p, 0) + 1
            steps.append((game_row, p, *value, ordinal(*value), game, at_seq, played[p], at))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO rating_steps (game_id, player_id, mu, sigma, rating, game, seq, n, finished) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", steps)
        cur.execute("DELETE FROM ratings WHERE game = %s AND player_id = ANY(%s)", (game, list(affected)))
        cur.executemany("INSERT INTO ratings (game, player_id, mu, sigma, rating, games) "
                        "VALUES (%s, %s, %s, %s, %s, %s)",
                        [(game, p, mu, sigma, ordinal(mu, sigma), played[p]) for p, (mu, sigma) in current.items()])
    return len(games)


def finished_games(conn, game: str, from_seq: int = 0):
    """``[(game row id, [(canonical player, rank), ...], seq, finished)]`` in
    finishing order, from the place ``from_seq`` on."""
    rows = conn.execute(
        "SELECT g.id, g.finish_seq, g.finished, COALESCE(p.same_as, p.id) AS player, s.rank FROM games g "
        "JOIN seats s ON s.game_id = g.id JOIN players p ON p.id = s.player_id "
        "WHERE g.game = %s AND g.finish_seq >= %s "
        "ORDER BY g.finish_seq, s.seat", (game, from_seq)).fetchall()
    out: list = []
    for r in rows:
        if not out or out[-1][0] != r["id"]:
            out.append((r["id"], [], r["finish_seq"], r["finished"]))
        out[-1][1].append((r["player"], r["rank"]))
    return out


def rerate(conn, game: str | None = None) -> int:
    """Recompute every rating (of one game, or all) from scratch; return the
    number of games rated.  Used after an organiser's link or split, and to
    check that the incremental ratings are reproducible."""
    kinds = [game] if game else [r["game"] for r in conn.execute(
        "SELECT DISTINCT game FROM games WHERE finish_seq IS NOT NULL "
        "UNION SELECT DISTINCT game FROM ratings ORDER BY game").fetchall()]
    total = 0
    with conn.transaction():
        for kind in kinds:
            lock_game_kind(conn, kind)
            games = finished_games(conn, kind)
            current, played = {}, {}
            conn.execute("DELETE FROM rating_steps WHERE game = %s", (kind,))
            conn.execute("DELETE FROM ratings WHERE game = %s", (kind,))
            with conn.cursor() as cur:     # COPY: 100,000 games re-rated in seconds, not minutes
                with cur.copy("COPY rating_steps (game_id, player_id, mu, sigma, rating, game, seq, n, finished) "
                              "FROM STDIN") as copy:
                    for game_row, seated, seq, at in games:
                        for p, (mu, sigma) in rate(current, seated).items():
                            current[p] = (mu, sigma)
                            played[p] = played.get(p, 0) + 1
                            copy.write_row((game_row, p, mu, sigma, ordinal(mu, sigma), kind, seq, played[p], at))
                with cur.copy("COPY ratings (game, player_id, mu, sigma, rating, games) FROM STDIN") as copy:
                    for p, (mu, sigma) in current.items():
                        copy.write_row((kind, p, mu, sigma, ordinal(mu, sigma), played[p]))
            total += len(games)
    return total


def day_range(start: str | None, end: str | None):
    """``?from=YYYY-MM-DD&to=YYYY-MM-DD`` (both days included) as UTC bounds,
    or ValueError (a malformed date, or one before year 1900 or after 9999)."""
    lo = datetime.combine(_day(start), time(), timezone.utc) if start else None
    hi = datetime.combine(_day(end), time(), timezone.utc) + timedelta(days=1) if end else None
    return lo, hi


def _day(text: str) -> date:
    if len(text) != 10 or not text.isascii():
        raise ValueError(text)
    day = date.fromisoformat(text)
    if not 1900 <= day.year <= 9998:
        raise ValueError(text)
    return day


_UNDATED = ("SELECT p.name, r.rating, r.games FROM ratings r JOIN players p ON p.id = r.player_id "
             "WHERE r.game = %(game)s")
_HI = ("CROSS JOIN LATERAL (SELECT rating, n FROM rating_steps s WHERE s.game = r.game "
       "AND s.player_id = r.player_id AND s.finished < %(hi)s ORDER BY s.finished DESC, s.seq DESC LIMIT 1) hi ")
_LO = ("LEFT JOIN LATERAL (SELECT n FROM rating_steps s WHERE s.game = r.game AND s.player_id = r.player_id "
       "AND s.finished < %(lo)s ORDER BY s.finished DESC, s.seq DESC LIMIT 1) lo ON true ")


def _standings_sql(game: str, start, end) -> tuple[str, dict]:
    """Without dates: the kept current ratings (one index scan).  With
    ``start``/``end``: the league as it stood at the end of the period, among
    the players who played in it — each player's rating after their last
    game before ``end`` and their number of games in the period, read from
    the kept steps (each holds the player's running count of games) with an
    index probe per player and bound (bounded, whatever the number of
    games).  Without ``end`` the kept current rating is the one at the end."""
    if start is None and end is None:
        return _UNDATED, {"game": game}
    rating, played = ("hi.rating", "hi.n") if end is not None else ("r.rating", "r.games")
    before = "COALESCE(lo.n, 0)" if start is not None else "0"
    sql = (f"SELECT p.name, {rating} AS rating, {played} - {before} AS games FROM ratings r "
           "JOIN players p ON p.id = r.player_id " + (_HI if end is not None else "") + (_LO if start is not None else "")
           + f"WHERE r.game = %(game)s AND {played} - {before} > 0")
    return sql, {"game": game, "lo": start, "hi": end}


def standings(conn, game: str, start=None, end=None, limit: int | None = None) -> list[dict]:
    """Best first: ``[{"name", "rating", "games"}]`` (see :func:`_standings_sql`)."""
    sql, params = _standings_sql(game, start, end)
    rows = conn.execute(f"{sql} ORDER BY 2 DESC, 1 {'LIMIT %(limit)s' if limit else ''}",
                        {**params, "limit": limit}).fetchall()
    return [{"name": r["name"], "rating": round(r["rating"], 3), "games": r["games"]} for r in rows]


def standings_json(conn, game: str, start=None, end=None) -> str:
    """The same standings as a JSON array built by PostgreSQL: the API's
    answer costs the hub's Python (and its GIL, shared with the big screen)
    almost nothing, whatever the number of players."""
    sql, params = _standings_sql(game, start, end)
    return conn.execute(
        "SELECT coalesce(json_agg(json_build_object('name', s.name, 'rating', round(s.rating::numeric, 3), "
        f"'games', s.games) ORDER BY s.rating DESC, s.name), '[]')::text AS j FROM ({sql}) s", params).fetchone()["j"]


def player_page(conn, name: str, start=None, end=None):
    """A player's ratings over time (per game) and their games, or None."""
    row = conn.execute("SELECT id, name, COALESCE(same_as, id) AS c FROM players WHERE name = %s", (name,)).fetchone()
    if row is None:
        return None
    who = row["c"]
    names = [r["name"] for r in conn.execute(
        "SELECT name FROM players WHERE COALESCE(same_as, id) = %s ORDER BY name", (who,)).fetchall()]
    steps = conn.execute(
        "SELECT rs.game, rs.finished, rs.rating FROM rating_steps rs "
        "WHERE rs.player_id = %s AND (%s::timestamptz IS NULL OR rs.finished >= %s) "
        "AND (%s::timestamptz IS NULL OR rs.finished < %s) ORDER BY rs.seq DESC LIMIT 5000",
        (who, start, start, end, end)).fetchall()[::-1]       # the newest 5,000 (a bounded page)
    history: dict = {}
    for s in steps:
        history.setdefault(s["game"], []).append({"at": s["finished"].isoformat(), "rating": round(s["rating"], 3)})
    played = conn.execute(
        "SELECT g.id, g.game, g.finished, g.players, g.public, b.name AS box, s.rank FROM seats s "
        "JOIN players p ON p.id = s.player_id JOIN games g ON g.id = s.game_id JOIN boxes b ON b.id = g.box_id "
        "WHERE COALESCE(p.same_as, p.id) = %s AND (%s::timestamptz IS NULL OR g.finished >= %s) "
        "AND (%s::timestamptz IS NULL OR g.finished < %s) ORDER BY g.finish_seq DESC LIMIT 500",
        (who, start, start, end, end)).fetchall()
    games = [{"id": g["id"], "game": g["game"], "finished": g["finished"].isoformat(), "box": g["box"],
              "players": g["players"], "rank": g["rank"],
              "scores": counts(g["public"] or {})} for g in played]
    return {"name": row["name"], "names": names, "history": history, "games": games}


def link(conn, name: str, to: str) -> None:
    """An organiser says ``name`` is the same person as ``to``; ratings are recomputed."""
    with conn.transaction():
        a = conn.execute("SELECT id FROM players WHERE name = %s", (name,)).fetchone()
        b = conn.execute("SELECT COALESCE(same_as, id) AS c FROM players WHERE name = %s", (to,)).fetchone()
        if a is None or b is None:
            from .db import HubError
            raise HubError(f"no player named {name if a is None else to!r}")
        if a["id"] == b["c"]:
            return
        conn.execute("UPDATE players SET same_as = %s WHERE id = %s OR same_as = %s", (b["c"], a["id"], a["id"]))
    rerate(conn)


def split(conn, name: str) -> None:
    """Undo a link: ``name`` is a player of their own again; ratings are recomputed."""
    with conn.transaction():
        row = conn.execute("SELECT id FROM players WHERE name = %s", (name,)).fetchone()
        if row is None:
            from .db import HubError
            raise HubError(f"no player named {name!r}")
        conn.execute("UPDATE players SET same_as = NULL WHERE id = %s", (row["id"],))
    rerate(conn)
