"""The hub's PostgreSQL database (psycopg 3): schema, migrations, a small pool.

The hub migrates its own schema: ``schema_version`` holds the number of the
last migration applied, and :func:`migrate` applies the later ones of
:data:`MIGRATIONS` in one transaction each, under an advisory lock so two
hubs started at once on the same database do not race.

Tables (see docs/hub.md for what each column means):

* ``boxes``    — one row per registered box: its name, the SHA-256 of its key
  (the key itself is only ever printed once), revoked or not, and its live
  table (``state``) for the big screen.
* ``players``  — one row per roster name seen in the club; ``same_as`` links
  a name to another player (an organiser's link), ratings follow the link.
* ``games`` / ``lines`` — each box's games, line by line as the box stored
  them (public log only), unique by (box, box game id, line number).
* ``seats``    — who sat where in a finished game, and their rank.
* ``ratings`` / ``rating_steps`` — the league: current rating per (game,
  player), and each finished game's rating change (for the history chart).
* ``tournaments`` and their players, tables and byes.
"""

from __future__ import annotations

import hashlib
import queue
import secrets
import threading
from contextlib import contextmanager

import psycopg
from psycopg.rows import dict_row, tuple_row

MIGRATIONS = [
    # 1: the first schema
    """
    CREATE TABLE boxes (
        id        serial PRIMARY KEY,
        name      text NOT NULL UNIQUE,
        key_hash  text NOT NULL UNIQUE,
        revoked   boolean NOT NULL DEFAULT false,
        created   timestamptz NOT NULL DEFAULT now(),
        state     jsonb,
        state_game integer,
        state_updated timestamptz
    );
    CREATE TABLE players (
        id        serial PRIMARY KEY,
        name      text NOT NULL UNIQUE,
        same_as   integer REFERENCES players(id)
    );
    CREATE TABLE games (
        id        bigserial PRIMARY KEY,
        box_id    integer NOT NULL REFERENCES boxes(id),
        box_game  bigint NOT NULL,
        game      text NOT NULL,
        players   jsonb NOT NULL,
        lines     integer NOT NULL DEFAULT 0,
        public    jsonb,
        started   timestamptz NOT NULL DEFAULT now(),
        updated   timestamptz NOT NULL DEFAULT now(),
        finished  timestamptz,
        finish_seq bigint UNIQUE,
        UNIQUE (box_id, box_game)
    );
    CREATE SEQUENCE finish_seq;
    CREATE INDEX games_finished ON games (game, finish_seq) WHERE finish_seq IS NOT NULL;
    CREATE TABLE lines (
        game_id   bigint NOT NULL REFERENCES games(id),
        n         integer NOT NULL,
        line      text NOT NULL,
        PRIMARY KEY (game_id, n)
    );
    CREATE TABLE seats (
        game_id   bigint NOT NULL REFERENCES games(id),
        seat      integer NOT NULL,
        player_id integer NOT NULL REFERENCES players(id),
        rank      integer NOT NULL,
        PRIMARY KEY (game_id, seat)
    );
    CREATE INDEX seats_player ON seats (player_id);
    CREATE TABLE ratings (
        game      text NOT NULL,
        player_id integer NOT NULL REFERENCES players(id),
        mu        double precision NOT NULL,
        sigma     double precision NOT NULL,
        rating    double precision NOT NULL,
        games     integer NOT NULL,
        PRIMARY KEY (game, player_id)
    );
    CREATE INDEX ratings_standings ON ratings (game, rating DESC);
    CREATE TABLE rating_steps (
        game_id   bigint NOT NULL REFERENCES games(id),
        player_id integer NOT NULL REFERENCES players(id),
        mu        double precision NOT NULL,
        sigma     double precision NOT NULL,
        rating    double precision NOT NULL,
        PRIMARY KEY (game_id, player_id)
    );
    CREATE INDEX rating_steps_player ON rating_steps (player_id);
    CREATE TABLE tournaments (
        id        serial PRIMARY KEY,
        name      text NOT NULL,
        game      text NOT NULL,
        boxes     jsonb NOT NULL,
        round     integer NOT NULL DEFAULT 0,
        created   timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE tournament_players (
        tournament_id integer NOT NULL REFERENCES tournaments(id),
        player_id integer NOT NULL REFERENCES players(id),
        from_round integer NOT NULL,
        PRIMARY KEY (tournament_id, player_id)
    );
    CREATE TABLE tournament_tables (
        tournament_id integer NOT NULL REFERENCES tournaments(id),
        round     integer NOT NULL,
        tbl       integer NOT NULL,
        box_id    integer REFERENCES boxes(id),
        players   jsonb NOT NULL,
        game_id   bigint REFERENCES games(id),
        seated    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tournament_id, round, tbl)
    );
    CREATE TABLE tournament_byes (
        tournament_id integer NOT NULL REFERENCES tournaments(id),
        round     integer NOT NULL,
        player_id integer NOT NULL REFERENCES players(id),
        PRIMARY KEY (tournament_id, round, player_id)
    );
    """,
    # 2: a game's result may change after it reached the hub (a take-back at
    # the table): each rating step carries its place in the finishing order
    # (seq), its kind and date and the player's games so far (n), so the
    # league is recomputed from the changed game onward, and dated standings
    # are two index probes per player.  Notices tell the organiser of a
    # tournament result that changed after its round was closed.
    """
    ALTER TABLE rating_steps ADD COLUMN game text, ADD COLUMN seq bigint,
        ADD COLUMN n integer, ADD COLUMN finished timestamptz;
    UPDATE rating_steps rs SET game = g.game, seq = g.finish_seq, finished = g.finished
        FROM games g WHERE g.id = rs.game_id;
    DELETE FROM rating_steps WHERE seq IS NULL;
    UPDATE rating_steps rs SET n = c.n FROM (
        SELECT game_id, player_id, row_number() OVER (PARTITION BY game, player_id ORDER BY seq) AS n
        FROM rating_steps) c
        WHERE c.game_id = rs.game_id AND c.player_id = rs.player_id;
    ALTER TABLE rating_steps ALTER COLUMN game SET NOT NULL, ALTER COLUMN seq SET NOT NULL,
        ALTER COLUMN n SET NOT NULL, ALTER COLUMN finished SET NOT NULL;
    CREATE INDEX rating_steps_dated ON rating_steps (game, player_id, finished, seq);
    CREATE INDEX rating_steps_order ON rating_steps (game, seq);
    CREATE TABLE tournament_notices (
        id        serial PRIMARY KEY,
        tournament_id integer NOT NULL REFERENCES tournaments(id),
        round     integer NOT NULL,
        tbl       integer NOT NULL,
        message   text NOT NULL,
        at        timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE tournaments ADD COLUMN seated_repeats integer, ADD COLUMN seated_exact boolean;
    CREATE TABLE tournament_results (
        tournament_id integer NOT NULL REFERENCES tournaments(id),
        round     integer NOT NULL,
        tbl       integer NOT NULL,
        players   jsonb NOT NULL,
        points    jsonb NOT NULL,
        entered   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tournament_id, round, tbl)
    );
    """,
    # 3: each box's latest backup file (appliance/backup.py), as the box
    # sends it: what the organiser restores onto a replacement box.
    """
    CREATE TABLE box_backups (
        box_id    integer PRIMARY KEY REFERENCES boxes(id),
        backup    bytea NOT NULL,
        sha256    text NOT NULL,
        games     integer NOT NULL,
        created   text NOT NULL,
        received  timestamptz NOT NULL DEFAULT now()
    );
    """,
]


def migrate(conn: psycopg.Connection) -> int:
    """Bring the schema up to date; return its version."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7216001)")
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
        version = _version(conn)
        if version is None:
            conn.execute("INSERT INTO schema_version VALUES (0)")
            version = 0
    for number, sql in enumerate(MIGRATIONS, start=1):
        if number <= version:
            continue
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7216001)")
            if _version(conn) >= number:
                continue        # another hub did it while we waited
            conn.execute(sql)
            conn.execute("UPDATE schema_version SET version = %s", (number,))
        version = number
    return version


def _version(conn) -> int | None:
    row = conn.cursor(row_factory=tuple_row).execute("SELECT version FROM schema_version").fetchone()
    return None if row is None else row[0]


def connect(url: str) -> psycopg.Connection:
    """A connection with dict rows, outside any transaction until asked."""
    return psycopg.connect(url, row_factory=dict_row, autocommit=True, connect_timeout=10)


class Pool:
    """A few open connections shared by the server's threads.

    A connection that broke (the database restarted) is thrown away and a new
    one opened at the next :meth:`connection`."""

    def __init__(self, url: str, size: int = 8):
        self.url = url
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)

    @contextmanager
    def connection(self):
        self._slots.acquire()
        conn = None
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = connect(self.url)
            yield conn
        except BaseException:
            if conn is not None:
                conn.close()          # its state is unknown: never hand it out again
                conn = None
            raise
        finally:
            if conn is not None:
                if conn.closed or conn.broken:
                    conn.close()
                else:
                    self._idle.put(conn)
            self._slots.release()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


# -- boxes --------------------------------------------------------------------

def key_hash(key: str) -> str:
    """Keys are 32 random bytes: a plain SHA-256 is enough (no dictionary to guess from)."""
    return hashlib.sha256(key.encode()).hexdigest()


class HubError(Exception):
    """A refusal for the command line or the API (a clear message, no traceback)."""


def add_box(conn, name: str) -> str:
    """Register a box; return its new key (shown once, stored hashed)."""
    name = name.strip()
    if not name or len(name) > 64:
        raise HubError("a box name is 1 to 64 characters")
    key = secrets.token_urlsafe(32)
    # A revoked box may be added again under its name: it gets a new key and
    # keeps its games (a stolen or lost key is replaced this way).
    row = conn.execute(
        "INSERT INTO boxes (name, key_hash) VALUES (%s, %s) "
        "ON CONFLICT (name) DO UPDATE SET key_hash = EXCLUDED.key_hash, revoked = false "
        "WHERE boxes.revoked RETURNING id", (name, key_hash(key))).fetchone()
    if row is None:
        raise HubError(f"there is already a box named {name!r} (revoke it first to give it a new key)")
    return key


def revoke_box(conn, name: str) -> None:
    cur = conn.execute("UPDATE boxes SET revoked = true WHERE name = %s", (name,))
    if cur.rowcount == 0:
        raise HubError(f"there is no box named {name!r}")


def box_for_key(conn, key: str):
    """The box row of a valid, unrevoked key, or None."""
    return conn.execute("SELECT id, name FROM boxes WHERE key_hash = %s AND NOT revoked",
                        (key_hash(key),)).fetchone()


def store_backup(conn, box_id: int, data: bytes, games: int, created: str) -> str:
    """Keep ``data`` as the box's latest backup (the one before is dropped); its SHA-256."""
    digest = hashlib.sha256(data).hexdigest()
    with conn.transaction():
        conn.execute("INSERT INTO box_backups (box_id, backup, sha256, games, created) VALUES (%s, %s, %s, %s, %s)"
                     " ON CONFLICT (box_id) DO UPDATE SET backup = EXCLUDED.backup, sha256 = EXCLUDED.sha256,"
                     " games = EXCLUDED.games, created = EXCLUDED.created, received = now()",
                     (box_id, data, digest, games, created))
    return digest


def latest_backup(conn, name: str):
    """The latest backup of the box called ``name``: a row with ``backup``,
    ``games``, ``created``, ``received``; raises HubError if there is none."""
    row = conn.execute("SELECT b.backup, b.games, b.created, b.received FROM box_backups b"
                       " JOIN boxes x ON x.id = b.box_id WHERE x.name = %s", (name,)).fetchone()
    if row is None:
        raise HubError(f"no backup from a box called {name!r} yet")
    return row
