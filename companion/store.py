"""The game store: every game as an append-only log of actions in SQLite.

The replay format *is* the stored format: each row of ``actions`` holds one
JSON line exactly as ``companion replay`` reads it, so exporting a game is
reading its rows in order.  WAL with ``synchronous=FULL`` makes each append
durable before it returns; the table session acknowledges an action only
after that, so a pulled plug loses nothing that a player was told was taken.

Taken back means gone: the store holds each game's *public log*
(:func:`companion.exports.public_log`).  When ``undo`` takes back a secret
entry that was never revealed, :meth:`Store.take_back` deletes that entry in
the transaction that acknowledges the undo (the undo itself is not stored),
with ``secure_delete`` on and a checkpoint that empties the write-ahead log,
so the value's bytes leave the database files.  A store written before this
rule is rewritten once when it is opened (``PRAGMA user_version`` 1).

Bounded (issue 21): each game has a **summary** row (its lines, its bytes,
the scores and tokens its log folds to), written in the transaction that
changes the game, so a history listing reads rows and never replays a game
(a store written before summaries gets them filled once, when opened).  The
store holds at most ``limits.max_games`` games and ``limits.max_bytes`` bytes
of logs (:class:`companion.limits.StoreLimits`): a new game beyond them
either moves the oldest *finished* games to ``backups/pruned/`` or is
refused with a clear message, as the operator chose; an unfinished game is
never pruned.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from . import durable
from .errors import IllegalActionError, StoreError
from .i18n import N_
from .limits import StoreLimits
from .stats import player_key

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id       INTEGER PRIMARY KEY,
    game     TEXT    NOT NULL,
    players  TEXT    NOT NULL,            -- JSON list of names
    started  REAL    NOT NULL,
    updated  REAL    NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0,
    winner   TEXT                          -- JSON list of seats, or NULL
);
CREATE TABLE IF NOT EXISTS actions (
    game_id  INTEGER NOT NULL REFERENCES games(id),
    seq      INTEGER NOT NULL,             -- 1-based line number in the log
    line     TEXT    NOT NULL,             -- one action, JSON, as replay reads it
    at       REAL    NOT NULL,
    PRIMARY KEY (game_id, seq)
);
-- The table's players (companion/roster.py).  A store written before the
-- roster gets these tables when opened, and _link_roster makes its games'
-- names the roster.
CREATE TABLE IF NOT EXISTS roster (
    id       INTEGER PRIMARY KEY,
    name     TEXT    NOT NULL,             -- as the table wants it shown now
    key      TEXT    NOT NULL UNIQUE,      -- the name's identity (companion.stats.player_key)
    added    REAL    NOT NULL
);
-- Which roster player sat at each seat of each stored game.  A game's log
-- keeps the names it was played under (the replay contract); a rename or a
-- merge changes only the roster and these rows, so the history follows.
CREATE TABLE IF NOT EXISTS roster_seats (
    game_id  INTEGER NOT NULL REFERENCES games(id),
    seat     INTEGER NOT NULL,
    player   INTEGER NOT NULL REFERENCES roster(id),
    PRIMARY KEY (game_id, seat)
);
CREATE INDEX IF NOT EXISTS roster_seats_player ON roster_seats(player);
-- What a history listing shows of each game, kept in the transaction that
-- changes the game: a listing reads these rows and never replays a log.
CREATE TABLE IF NOT EXISTS summaries (
    game_id  INTEGER PRIMARY KEY REFERENCES games(id),
    lines    INTEGER NOT NULL,             -- lines of its log
    bytes    INTEGER NOT NULL,             -- UTF-8 bytes of its log
    folded   TEXT                          -- JSON {"scores", "tokens"} its log folds to; NULL: not known yet
);
CREATE INDEX IF NOT EXISTS games_newest ON games(updated DESC, id DESC);
"""

DB_NAME = "companion.db"
BACKUPS_KEPT = 100
USER_VERSION = 1        # 1: every game's log is its public log (no pair taken back)
# USER_VERSION is also the store's format: a store stamped with a higher one
# was written by a newer companion, and this one refuses to open it rather
# than guess (an update that is rolled back brings back its pre-update copy).
# Formats grow by one per change of the store: a stamp beyond MAX_FORMAT is
# no companion's, it is a scribbled header (the four bytes at offset 60 of
# the file), and the store is recovered as any other damage.
MAX_FORMAT = 1000


def dump_action(action: dict) -> str:
    """The canonical JSON line of an action (stable key order as given)."""
    return json.dumps(action, ensure_ascii=False, separators=(", ", ": "))


class StoreFull(IllegalActionError):
    """A new game that the store's limits leave no room for (and nothing
    may be pruned to make it): nothing was stored."""


def summary_of(public: dict | None) -> dict | None:
    """The part of a public state a listing shows: scores and tokens (None:
    no state given, the summary is not known)."""
    if public is None:
        return None
    return {"scores": public.get("scores"), "tokens": public.get("tokens")}


def folded_summary(lines: list[str]) -> dict | None:
    """What a replay of ``lines`` gives for the summary (a damaged log: its
    readable prefix) — the slow way, for a store's first filling."""
    from .exports import steps_of
    from .timeline import ReplayError, replay

    try:
        return summary_of(replay(lines).public())
    except ReplayError:
        steps, _ = steps_of(lines)
        return summary_of(steps[-1]["state"] if steps else {})


@dataclass(frozen=True)
class GameRecord:
    id: int
    game: str
    players: list[str]
    started: float
    updated: float
    finished: bool
    winner: list[int] | None
    actions: int = 0
    bytes: int = 0
    summary: dict | None = None     # {"scores", "tokens"} of the state its log folds to

    def as_dict(self) -> dict:
        return {
            "id": self.id, "game": self.game, "players": self.players,
            "started": self.started, "updated": self.updated,
            "finished": self.finished, "winner": self.winner, "actions": self.actions,
        }


@dataclass(frozen=True)
class PlayerRecord:
    """One player of the table's roster, as stored."""

    id: int
    name: str
    added: float
    games: int = 0                 # stored games played (finished or not)
    last: float | None = None      # time of the last action of their last game


class Store:
    """The SQLite file of one companion.  Not thread-safe by itself: the
    table session is its single writer and serialises calls."""

    def __init__(self, data_dir: str | os.PathLike, clock=time.time, limits: StoreLimits | None = None):
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / DB_NAME
        self.clock = clock
        self.limits = limits or StoreLimits()
        self.pruned: list[int] = []          # games moved to backups/pruned/ since the start
        self._usage: tuple[int, int] | None = None   # (games, bytes), kept as lines are appended
        self.generation = 0                  # grows with every write: what a reader may cache by
        self.warnings: list[tuple[str, dict]] = []  # (template, params) to show at start
        self.recovered = False               # opened only by moving a damaged file aside
        self.db = self._open_checked()

    # -- opening, with recovery from a damaged file -------------------------
    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5)
        # A stored line that is not UTF-8 (a flipped bit that quick_check
        # does not see) must not stop the companion: it becomes a line that
        # does not replay, which the session handles.
        db.text_factory = _lenient_text
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        # Deleted rows are overwritten with zeros, not just unlinked: a secret
        # taken back must not stay readable in the file's free space.
        db.execute("PRAGMA secure_delete=ON")
        db.executescript(SCHEMA)
        _link_roster(db, self.clock)
        return db

    def _open_checked(self) -> sqlite3.Connection:
        if _refuse_newer(self.path) or _emptied(self.path):
            return self._recover()
        db = None
        try:
            db = self._connect()
            # integrity_check, not quick_check: it also checks the indexes
            # against the tables (a damaged index passes quick_check and then
            # fails the first read of the game).  ~5 ms for 10,000 actions.
            row = db.execute("PRAGMA integrity_check(1)").fetchone()
            if row and row[0] == "ok" and _schema_intact(db):
                self.db = db
                self._migrate()
                return db
        except UNREADABLE:
            pass
        if db is not None:
            db.close()
        return self._recover()

    def _recover(self) -> sqlite3.Connection:
        """Keep what can be read, move the damaged file aside, start afresh."""
        self.recovered = True
        games, actions, roster, seats = _salvage(self.path)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
        aside = self.dir / f"{DB_NAME}.damaged-{stamp}"
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                shutil.move(str(src), str(aside) + suffix)
        db = self._connect()
        with db:
            db.execute("BEGIN")
            db.executemany("INSERT OR IGNORE INTO games VALUES (?,?,?,?,?,?,?)", games)
            db.executemany("INSERT OR IGNORE INTO actions VALUES (?,?,?,?)",
                           [a for a in actions if any(g[0] == a[0] for g in games)])
            db.executemany("INSERT OR IGNORE INTO roster VALUES (?,?,?,?)", roster)
            kept = {g[0] for g in games}
            db.executemany("INSERT OR IGNORE INTO roster_seats VALUES (?,?,?)",
                           [s for s in seats if s[0] in kept and any(p[0] == s[2] for p in roster)])
            _link_unlinked(db, self.clock())     # games whose seat rows were lost: by name again
            db.execute("COMMIT")
        self.warnings.append((N_("The game store was damaged: {games} games were saved; "
                                 "the damaged file was kept as {name}."),
                              {"games": len(games), "name": aside.name}))
        self.db = db
        self._migrate()
        return db

    def _migrate(self) -> None:
        """Once per store: rewrite every game that still holds a secret entry
        taken back unrevealed (stored before that was dropped) as its public
        log, then VACUUM so no old page keeps the value.  A store edited by
        hand keeps its lines past the first that does not replay."""
        db = self.db
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] >= USER_VERSION:
                self._fill_summaries()
                self._checkpoint()   # a take-back cut short by a power cut left its old frames there
                return
            from .exports import public_log   # the core's one gate; imports the games lazily
            rewritten = []
            for (gid,) in db.execute("SELECT id FROM games ORDER BY id").fetchall():
                lines = self.lines(gid)
                public = public_log(lines)
                if public != lines:
                    self.rewrite(gid, public)
                    rewritten.append(gid)
            db.execute(f"PRAGMA user_version={USER_VERSION}")
            if rewritten:
                db.execute("VACUUM")
                for gid in rewritten:
                    self._refresh_backup(gid)
            self._fill_summaries()
            self._checkpoint()
        except sqlite3.Error as exc:        # the old lines still replay: go on with them
            self.warnings.append((N_("The game store could not be tidied ({detail})."), {"detail": str(exc)}))

    def _fill_summaries(self, ids=None) -> None:
        """Give every game without a known summary (a store written before
        summaries, a recovered one, a log rewritten) the one a replay of its
        log gives: once, then every change keeps it."""
        if ids is None:
            rows = self.db.execute("SELECT g.id FROM games g LEFT JOIN summaries s ON s.game_id=g.id"
                                   " WHERE s.folded IS NULL ORDER BY g.id").fetchall()
            ids = [r[0] for r in rows]
        for gid in ids:
            lines = self.lines(gid)
            summary = folded_summary(lines)
            self._write(N_("could not store the game ({detail})"), lambda db: _put_summary(
                db, gid, len(lines), _size(lines), summary))
        self._usage = None

    # -- writing -------------------------------------------------------------
    def create_game(self, game: str, players, first_line: str, public: dict | None = None,
                    keep=()) -> int:
        """A new game from its first line; ``public`` is the public state
        that line folds to (its summary: computed from the line if not
        given).  Room is made first (:meth:`make_room`), never by pruning
        the games in ``keep``."""
        if public is None:
            from .timeline import Timeline, parse_line
            timeline = Timeline()
            timeline.apply(parse_line(first_line))
            public = timeline.public()
        self.make_room(_size([first_line]), keep)
        now = self.clock()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            cur = self.db.execute(
                "INSERT INTO games (game, players, started, updated) VALUES (?,?,?,?)",
                (game, json.dumps(list(players), ensure_ascii=False), now, now))
            gid = cur.lastrowid
            self.db.execute("INSERT INTO actions VALUES (?,?,?,?)", (gid, 1, first_line, now))
            _link_seats(self.db, gid, players, now)
            _put_summary(self.db, gid, 1, _size([first_line]), summary_of(public))
            self.db.execute("COMMIT")
            self._usage = None
            self.generation += 1
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the game ({detail})"), detail=str(exc))
        return gid

    def import_game(self, game: str, players, lines: list[str], finished: bool, winner,
                    public: dict | None = None, keep=()) -> int:
        """Store a whole, already validated log as a new game in one
        transaction (``public``: the state it folds to; replayed if not given)."""
        summary = summary_of(public) if public is not None else folded_summary(lines)
        self.make_room(_size(lines), keep)
        now = self.clock()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            cur = self.db.execute(
                "INSERT INTO games (game, players, started, updated, finished, winner) VALUES (?,?,?,?,?,?)",
                (game, json.dumps(list(players), ensure_ascii=False), now, now, int(finished),
                 json.dumps(winner) if winner is not None else None))
            gid = cur.lastrowid
            self.db.executemany("INSERT INTO actions VALUES (?,?,?,?)",
                                [(gid, i, line, now) for i, line in enumerate(lines, start=1)])
            _link_seats(self.db, gid, players, now)
            _put_summary(self.db, gid, len(lines), _size(lines), summary)
            self.db.execute("COMMIT")
            self._usage = None
            self.generation += 1
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the game ({detail})"), detail=str(exc))
        return gid

    def append(self, game_id: int, seq: int, line: str, finished: bool, winner,
               public: dict | None = None) -> None:
        """Append line ``seq`` of a game; durable when this returns.
        ``public``: the public state the log now folds to (its summary; if
        not given, the summary is worked out when next listed).  A game in
        progress is never refused for space: past the limits, the oldest
        finished games are pruned afterwards (if the operator lets the box)."""
        now = self.clock()
        summary = summary_of(public)

        def add(db):
            db.execute("INSERT INTO actions VALUES (?,?,?,?)", (game_id, seq, line, now))
            _set_outcome(db, game_id, now, finished, winner)
            db.execute("UPDATE summaries SET lines=lines+1, bytes=bytes+?, folded=? WHERE game_id=?",
                       (_size([line]), _dump(summary), game_id))
        self._write(N_("could not store the action ({detail})"), add)
        if self._usage is not None:
            self._usage = (self._usage[0], self._usage[1] + _size([line]))
        if self.limits.prune and self._over(0, 0):
            self.make_room(0, (game_id,))

    def take_back(self, game_id: int, seq: int, finished: bool, winner, public: dict | None = None) -> None:
        """Acknowledge an ``undo`` that takes back the unrevealed secret entry
        at line ``seq``: delete that line and renumber the ones after it (they
        were all taken back already), in one transaction; the undo itself is
        not stored.  Durable when this returns; then the write-ahead log is
        checkpointed and emptied so the value's bytes leave the files."""
        now = self.clock()
        summary = summary_of(public)

        def delete(db):
            db.execute("DELETE FROM actions WHERE game_id=? AND seq=?", (game_id, seq))
            # Two steps: (game_id, seq) is unique at every row of an UPDATE.
            db.execute("UPDATE actions SET seq=-seq WHERE game_id=? AND seq>?", (game_id, seq))
            db.execute("UPDATE actions SET seq=-seq-1 WHERE game_id=? AND seq<0", (game_id,))
            _set_outcome(db, game_id, now, finished, winner)
            _recount(db, game_id, summary)
        self._write(N_("could not store the action ({detail})"), delete)
        self._usage = None
        self._checkpoint()
        self._refresh_backup(game_id)

    def rewrite(self, game_id: int, lines: list[str]) -> None:
        """Replace a game's whole log (same timestamps by line number), in one transaction."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            at = [r[0] for r in self.db.execute("SELECT at FROM actions WHERE game_id=? ORDER BY seq", (game_id,))]
            self.db.execute("DELETE FROM actions WHERE game_id=?", (game_id,))
            self.db.executemany("INSERT INTO actions VALUES (?,?,?,?)",
                                [(game_id, i, line, at[min(i, len(at)) - 1] if at else self.clock())
                                 for i, line in enumerate(lines, start=1)])
            _put_summary(self.db, game_id, len(lines), _size(lines), folded_summary(lines))
            self.db.execute("COMMIT")
            self._usage = None
            self.generation += 1
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the game ({detail})"), detail=str(exc))

    # -- the store's limits ------------------------------------------------------
    def usage(self) -> tuple[int, int]:
        """(games, bytes of their logs) stored now: counted once, then kept
        up to date by the appends (an action never pays for a count)."""
        if self._usage is None:
            self._usage = tuple(self.db.execute(
                "SELECT COUNT(*), COALESCE(SUM(s.bytes), 0) FROM games g"
                " LEFT JOIN summaries s ON s.game_id=g.id").fetchone())
        return self._usage

    def _over(self, more_games: int, more_bytes: int) -> bool:
        games, size = self.usage()
        return games + more_games > self.limits.max_games or size + more_bytes > self.limits.max_bytes

    def make_room(self, new_bytes: int, keep=()) -> None:
        """Room for one more game of ``new_bytes`` (``new_bytes`` 0 and no
        game: only back under the limits).  With ``prune``, the oldest
        finished games (never one of ``keep``, never an unfinished one) are
        written to ``backups/pruned/`` and then deleted, until it fits;
        otherwise, or if that is not enough, StoreFull and nothing changes."""
        more = 1 if new_bytes else 0
        if not self._over(more, new_bytes):
            return
        limits = self.limits
        if limits.prune:
            candidates = self.db.execute(
                "SELECT g.id, COALESCE(s.bytes, 0) FROM games g LEFT JOIN summaries s ON s.game_id=g.id"
                " WHERE g.finished=1 ORDER BY g.updated, g.id").fetchall()
            games, size = self.usage()
            chosen = []
            for gid, gbytes in candidates:
                if games + more <= limits.max_games and size + new_bytes <= limits.max_bytes:
                    break
                if gid in keep:
                    continue
                chosen.append(gid)
                games, size = games - 1, size - gbytes
            if games + more <= limits.max_games and size + new_bytes <= limits.max_bytes:
                for gid in chosen:
                    self._prune(gid)
                return
        games, size = self.usage()
        if limits.prune:
            raise StoreFull(N_("the game store is full ({games} games, {mb} MB) and only unfinished games "
                               "could make room: finish or export some (at most {max_games} games "
                               "and {max_mb} MB)"), games=games, mb=_mb(size),
                            max_games=limits.max_games, max_mb=_mb(limits.max_bytes))
        raise StoreFull(N_("the game store is full ({games} games, {mb} MB; at most {max_games} games "
                           "and {max_mb} MB): the box's operator can export old games and move them out, "
                           "or let the box move the oldest finished ones to backups/ "
                           "(store_full = \"prune\" in companion.toml)"),
                        games=games, mb=_mb(size), max_games=limits.max_games, max_mb=_mb(limits.max_bytes))

    def _prune(self, game_id: int) -> None:
        """Move a finished game out of the store: its public log to
        ``backups/pruned/`` (written and flushed first: a power cut leaves
        it in the store, in the folder, or both), then its rows deleted.
        The folder keeps at most ``limits.max_bytes`` of logs, oldest out."""

        record = self.game(game_id)
        if record is None or not record.finished:
            return
        folder = self.dir / "backups" / "pruned"
        target = folder / f"game-{game_id:06d}-{record.game}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._write_public_log(game_id, target)
        except OSError as exc:
            raise StoreError(N_("could not move game {id} to backups/pruned/ ({detail})"),
                             id=game_id, detail=str(exc)) from None

        def delete(db):
            for table in ("summaries", "roster_seats", "actions"):
                db.execute(f"DELETE FROM {table} WHERE game_id=?", (game_id,))
            db.execute("DELETE FROM games WHERE id=?", (game_id,))
        self._write(N_("could not store the game ({detail})"), delete)
        self._usage = None
        self.pruned.append(game_id)
        _trim_folder(folder, self.limits.max_bytes)

    def _checkpoint(self) -> None:
        """Copy the write-ahead log into the database and cut it to nothing
        (its old frames may hold a value just deleted).  Best effort: the
        data is already durable, and the next checkpoint does it."""
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass

    def _write_public_log(self, game_id: int, target: Path) -> None:
        """A game's public log written to ``target`` durably: a power cut
        leaves either the old file or the whole new one (:mod:`companion.durable`)."""
        from .exports import public_log
        durable.write_text(target, "\n".join(public_log(self.lines(game_id))) + "\n")

    def _refresh_backup(self, game_id: int) -> None:
        """Rewrite a game's backup file, if it has one, from its public log."""
        if self._backup_path(game_id) is not None and self._backup_path(game_id).exists():
            self.backup(game_id)

    def _backup_path(self, game_id: int) -> Path | None:
        record = self.game(game_id)
        return None if record is None else self.dir / "backups" / f"game-{game_id:06d}-{record.game}.jsonl"

    def backup(self, game_id: int, keep: int = BACKUPS_KEPT) -> Path | None:
        """Copy a finished game's log to ``backups/`` (a rolling set of the
        newest ``keep`` files), written atomically so a power cut leaves either
        the old file or the whole new one."""
        target = self._backup_path(game_id)
        if target is None:
            return None
        folder = target.parent
        try:
            folder.mkdir(exist_ok=True)
            self._write_public_log(game_id, target)
            for old in sorted(folder.glob("game-*.jsonl"))[:-keep]:
                old.unlink()
            return target
        except OSError:
            return None  # a backup is a convenience: never fail the action for it

    # -- the roster (companion/roster.py checks names and ids first) ----------
    def add_player(self, name: str, added: float | None = None) -> int:
        """A new roster player; durable when this returns."""
        at = self.clock() if added is None else added
        return self._write(N_("could not store the player ({detail})"), lambda db: db.execute(
            "INSERT INTO roster (name, key, added) VALUES (?,?,?)", (name, player_key(name), at)).lastrowid)

    def rename_player(self, player_id: int, name: str) -> None:
        self._write(N_("could not store the player ({detail})"), lambda db: db.execute(
            "UPDATE roster SET name=?, key=? WHERE id=?", (name, player_key(name), player_id)))

    def merge_players(self, player_id: int, into: int) -> None:
        """Every seat of ``player_id`` becomes ``into``'s, and ``player_id``
        leaves the roster: one transaction, so a cut power leaves either."""
        def merge(db):
            db.execute("UPDATE roster_seats SET player=? WHERE player=?", (into, player_id))
            db.execute("DELETE FROM roster WHERE id=?", (player_id,))
        self._write(N_("could not store the player ({detail})"), merge)

    def _write(self, template: str, work):
        try:
            self.db.execute("BEGIN IMMEDIATE")
            result = work(self.db)
            self.db.execute("COMMIT")
            self.generation += 1
            return result
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(template, detail=str(exc))

    def _rollback(self):
        try:
            self.db.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    # -- reading -------------------------------------------------------------
    def lines(self, game_id: int) -> list[str]:
        rows = self.db.execute("SELECT line FROM actions WHERE game_id=? ORDER BY seq", (game_id,))
        return [r[0] for r in rows]

    def timestamps(self, game_id: int) -> list[float]:
        rows = self.db.execute("SELECT at FROM actions WHERE game_id=? ORDER BY seq", (game_id,))
        return [r[0] for r in rows]

    def finished_ids(self) -> list[int]:
        """The ids of the finished games, oldest first (by start)."""
        return [r[0] for r in self.db.execute("SELECT id FROM games WHERE finished=1 ORDER BY started, id")]

    def first_lines(self, ids) -> dict[int, str]:
        """The first line (``new_game``) of each of the games ``ids``."""
        ids = list(ids)
        rows = self.db.execute(f"SELECT game_id, line FROM actions WHERE seq=1 AND game_id IN ({_marks(ids)})", ids)
        return dict(rows.fetchall())

    def games(self, game: str | None = None, player: str | None = None) -> list[GameRecord]:
        """Stored games, newest first."""
        rows = self.db.execute(_RECORDS + " ORDER BY g.updated DESC, g.id DESC").fetchall()
        out = [_record(r) for r in rows]
        if game:
            out = [g for g in out if g.game == game]
        if player:
            out = [g for g in out if player in g.players]
        return out

    def page(self, start: int = 0, count: int = 50, game: str | None = None,
             players: list[int] | None = None, ids: list[int] | None = None) -> tuple[list[GameRecord], int]:
        """One page of stored games, newest first, and how many match:
        ``game`` a game id, ``players`` roster ids (a game with any of them),
        ``ids`` game ids.  Read from the games' rows and summaries through
        an index: the same cost at 10,000 games as at 10 (a game whose
        summary is not known yet gets it here, once)."""
        where, params = [], []
        if game:
            where.append("g.game=?")
            params.append(game)
        if players is not None:
            # Checked game by game along the newest-first index (the seat rows'
            # primary key): a page stops after its games, however many a
            # player has.
            where.append(f"EXISTS (SELECT 1 FROM roster_seats s WHERE s.game_id=g.id"
                         f" AND +s.player IN ({_marks(players)}))")   # +: by the game, not the player index
            params.extend(players)
        if ids is not None:
            where.append(f"g.id IN ({_marks(ids)})")
            params.extend(ids)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        if players is not None and not game and ids is None:
            total = self.db.execute(f"SELECT COUNT(DISTINCT game_id) FROM roster_seats WHERE player IN"
                                    f" ({_marks(players)})", players).fetchone()[0]
        else:
            total = self.db.execute("SELECT COUNT(*) FROM games g" + clause, params).fetchone()[0]
        rows = self.db.execute(_RECORDS + clause + " ORDER BY g.updated DESC, g.id DESC LIMIT ? OFFSET ?",
                               [*params, max(0, count), max(0, start)]).fetchall()
        records = [_record(r) for r in rows]
        unknown = [r.id for r in records if r.summary is None]
        if unknown:
            self._fill_summaries(unknown)
            records = [self.game(r.id) if r.id in unknown else r for r in records]
        return records, total

    def game_names(self) -> list[tuple[int, list]]:
        """(id, players as the log holds them) of every game: the slow way
        round for a name that is not on the roster."""
        return [(gid, _json_or(players, [])) for gid, players
                in self.db.execute("SELECT id, players FROM games ORDER BY id")]

    def game(self, game_id: int) -> GameRecord | None:
        row = self.db.execute(_RECORDS + " WHERE g.id=?", (game_id,)).fetchone()
        return _record(row) if row else None

    def roster(self) -> list[PlayerRecord]:
        """Every roster player with the number of stored games they sat in
        and the time of the last one (None if none), by id."""
        rows = self.db.execute(
            "SELECT p.id, p.name, p.added, COUNT(DISTINCT s.game_id), MAX(g.updated)"
            " FROM roster p LEFT JOIN roster_seats s ON s.player=p.id"
            " LEFT JOIN games g ON g.id=s.game_id GROUP BY p.id ORDER BY p.id").fetchall()
        return [PlayerRecord(*row) for row in rows]

    def roster_names(self, played: bool = False) -> dict[int, str]:
        """Roster id -> name (``played``: only players with a stored game),
        without counting anyone's games: what a listing page needs."""
        query = "SELECT id, name FROM roster r"
        if played:
            query += " WHERE EXISTS (SELECT 1 FROM roster_seats s WHERE s.player=r.id)"
        return dict(self.db.execute(query + " ORDER BY id").fetchall())

    def seat_players(self, game_id: int | None = None, ids=None) -> dict[int, list[int | None]]:
        """The roster player of each seat, per stored game (a seat without
        a row, which only hand-made damage leaves, is None); ``ids``: of
        those games only."""
        if ids is not None:
            ids = list(ids)
            rows = self.db.execute(f"SELECT game_id, seat, player FROM roster_seats WHERE game_id IN ({_marks(ids)})"
                                   " ORDER BY game_id, seat", ids)
        elif game_id is None:
            rows = self.db.execute("SELECT game_id, seat, player FROM roster_seats ORDER BY game_id, seat")
        else:
            rows = self.db.execute("SELECT game_id, seat, player FROM roster_seats WHERE game_id=?"
                                   " ORDER BY seat", (game_id,))
        out: dict[int, list[int | None]] = {}
        for gid, seat, player in rows:
            seats = out.setdefault(gid, [])
            if 0 <= seat < 64:
                seats.extend([None] * (seat + 1 - len(seats)))
                seats[seat] = player
        return out

    def latest_unfinished(self) -> GameRecord | None:
        row = self.db.execute(
            "SELECT g.id, g.game, g.players, g.started, g.updated, g.finished, g.winner, 0, 0, NULL"
            " FROM games g WHERE finished=0 ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return _record(row) if row else None

    def close(self):
        try:
            self.db.close()
        except sqlite3.Error:
            pass


# The line count comes from the summary (kept with every change); counting
# the lines is the fallback for a game whose summary row is missing.
_RECORDS = ("SELECT g.id, g.game, g.players, g.started, g.updated, g.finished, g.winner,"
            " COALESCE(s.lines, (SELECT COUNT(*) FROM actions a WHERE a.game_id=g.id)),"
            " COALESCE(s.bytes, 0), s.folded FROM games g LEFT JOIN summaries s ON s.game_id=g.id")


def _record(row) -> GameRecord:
    gid, game, players, started, updated, finished, winner, count, size, folded = row
    # Lenient: a row scribbled over (that SQLite's check cannot see) still lists.
    players = _json_or(players, [])
    summary = _json_or(folded, None) if folded else None
    return GameRecord(gid, game, players if isinstance(players, list) else [], started, updated, bool(finished),
                      _json_or(winner, None) if winner else None, count, size,
                      summary if isinstance(summary, dict) else None)


def _marks(values) -> str:
    return ",".join("?" * len(values)) or "NULL"


def _size(lines) -> int:
    return sum(len(line.encode("utf-8", "replace")) + 1 for line in lines)     # +1: its newline in an export


def _dump(summary) -> str | None:
    """A summary as stored; None (NULL: not known yet) stays None."""
    return None if summary is None else json.dumps(summary, ensure_ascii=False, separators=(",", ":"))


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f}"


def _put_summary(db: sqlite3.Connection, game_id: int, lines: int, size: int, summary) -> None:
    db.execute("INSERT OR REPLACE INTO summaries VALUES (?,?,?,?)", (game_id, lines, size, _dump(summary)))


def _recount(db: sqlite3.Connection, game_id: int, summary) -> None:
    """A game's summary after lines left its log (one game: at most the largest game's lines)."""
    lines, size = db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(line AS BLOB)) + 1), 0)"
                             " FROM actions WHERE game_id=?", (game_id,)).fetchone()
    _put_summary(db, game_id, lines, size, summary)


def _trim_folder(folder: Path, max_bytes: int) -> None:
    """Delete the oldest files of ``folder`` (by name: the game number)
    until it holds at most ``max_bytes``."""
    try:
        files = sorted(folder.glob("game-*.jsonl"))
        total = sum(f.stat().st_size for f in files)
        for old in files:
            if total <= max_bytes:
                break
            total -= old.stat().st_size
            old.unlink()
    except OSError:
        pass


def _json_or(text, default):
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return default


def _set_outcome(db: sqlite3.Connection, game_id: int, now: float, finished: bool, winner) -> None:
    """A game's row after a line is appended or taken back: when, finished, who won."""
    db.execute("UPDATE games SET updated=?, finished=?, winner=? WHERE id=?",
               (now, int(finished), json.dumps(winner) if winner is not None else None, game_id))


COLUMNS = {
    "games": ["id", "game", "players", "started", "updated", "finished", "winner"],
    "actions": ["game_id", "seq", "line", "at"],
    "roster": ["id", "name", "key", "added"],
    "roster_seats": ["game_id", "seat", "player"],
    "summaries": ["game_id", "lines", "bytes", "folded"],
}


def _link_roster(db: sqlite3.Connection, clock) -> None:
    """Give the roster every stored game that has no seat rows: all of them
    in a store written before the roster (its games' names become the
    table's players, oldest game first), none afterwards.  One transaction:
    a store is linked whole or not at all (and tried again at the next
    start).  (``PRAGMA user_version`` is the public-log rewrite's marker,
    :meth:`Store._migrate`; this step needs none.)"""
    try:
        if db.execute("SELECT 1 FROM games g WHERE NOT EXISTS"
                      " (SELECT 1 FROM roster_seats s WHERE s.game_id=g.id) LIMIT 1").fetchone() is None:
            return
        db.execute("BEGIN IMMEDIATE")
        _link_unlinked(db, clock())
        db.execute("COMMIT")
    except UNREADABLE:            # a damaged file: _open_checked recovers it
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _link_unlinked(db: sqlite3.Connection, now: float) -> None:
    """Give every stored game without seat rows its roster players, by name
    (inside the caller's transaction)."""
    rows = db.execute("SELECT id, players, started FROM games g WHERE NOT EXISTS"
                      " (SELECT 1 FROM roster_seats s WHERE s.game_id=g.id) ORDER BY started, id").fetchall()
    for gid, players, started in rows:
        names = _json_or(players, [])
        if isinstance(names, list):
            _link_seats(db, gid, [n for n in names if isinstance(n, str)],
                        started if isinstance(started, (int, float)) else now)


def _link_seats(db: sqlite3.Connection, game_id: int, players, now: float) -> None:
    """Seat rows of a new stored game: each name is the roster player whose
    name has the same identity (:func:`companion.stats.player_key`), or a new
    one; a name typed once is on the table's roster from then on."""
    for seat, name in enumerate(players):
        key = player_key(name)
        row = db.execute("SELECT id FROM roster WHERE key=?", (key,)).fetchone()
        # A new player is kept as the roster keeps typed names: NFC, trimmed.
        player = row[0] if row else db.execute(
            "INSERT INTO roster (name, key, added) VALUES (?,?,?)",
            (unicodedata.normalize("NFC", name).strip(), key, now)).lastrowid
        db.execute("INSERT OR REPLACE INTO roster_seats VALUES (?,?,?)", (game_id, seat, player))


def _refuse_newer(path: Path) -> bool:
    """Refuse, touching nothing, a store a newer companion wrote.  Reading
    ``user_version`` writes nothing (no schema, no journal mode is set); a
    file SQLite cannot read is left to the damage recovery.  True when the
    stamp is no companion's format (see MAX_FORMAT): the store is damaged."""
    if not path.exists():
        return False
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            found = db.execute("PRAGMA user_version").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return False
    if found < 0 or found > MAX_FORMAT:
        return True
    if found > USER_VERSION:
        raise StoreError(N_("the game store was written by a newer companion (format {found}, this one "
                            "reads up to {known}): it is left untouched"), found=found, known=USER_VERSION)


def _schema_intact(db: sqlite3.Connection) -> bool:
    """The tables have their columns (a scribbled schema text passes quick_check)."""
    for table, columns in COLUMNS.items():
        found = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        if found != columns:
            return False
    return True


# What reading a damaged file can raise: SQLite's errors, and a schema text
# that is not UTF-8 (sqlite3 decodes it with the strict codec).
UNREADABLE = (sqlite3.DatabaseError, UnicodeDecodeError, ValueError)


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _emptied(path: Path) -> bool:
    """A database file cut to nothing (with no write-ahead log to rebuild it
    from) is damage too, not a fresh start: the store always writes its schema."""
    try:
        if not path.exists() or path.stat().st_size:
            return False
        wal = Path(str(path) + "-wal")
        return not wal.exists() or wal.stat().st_size == 0
    except OSError:
        return False


def _valid_game(row) -> bool:
    try:
        gid, game, players, started, updated, finished, winner = row
        names = json.loads(players)
        won = json.loads(winner) if winner is not None else None
    except (TypeError, ValueError):
        return False
    number = (int, float)
    return (type(gid) is int and isinstance(game, str) and isinstance(names, list)
            and all(isinstance(n, str) for n in names) and isinstance(started, number)
            and isinstance(updated, number) and type(finished) is int
            and (won is None or (isinstance(won, list) and all(type(s) is int for s in won))))


def _valid_action(row) -> bool:
    try:
        gid, seq, line, at = row
    except (TypeError, ValueError):
        return False
    if not (type(gid) is int and type(seq) is int and isinstance(line, str) and isinstance(at, (int, float))):
        return False
    try:                # a line cut or scribbled over is not kept (its game stops before it)
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _valid_player(row) -> bool:
    try:
        pid, name, key, added = row
    except (TypeError, ValueError):
        return False
    return (type(pid) is int and isinstance(name, str) and isinstance(key, str)
            and key == player_key(name) and isinstance(added, (int, float)))


def _valid_seat(row) -> bool:
    try:
        gid, seat, player = row
    except (TypeError, ValueError):
        return False
    return type(gid) is int and type(seat) is int and type(player) is int


def _readable_copy(path: Path, folder: Path) -> Path:
    """A copy of the damaged file (and its write-ahead log) that SQLite can
    open: a file cut short is padded back to the page count its header
    announces, so the intact pages read and the missing ones fail alone."""
    data = path.read_bytes() if path.exists() else b""
    if len(data) >= 100 and data.startswith(b"SQLite format 3\0"):
        page_size = int.from_bytes(data[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(data[28:32], "big")
        if 512 <= page_size <= 65536 and pages and len(data) < pages * page_size <= 1 << 31:
            data += bytes(pages * page_size - len(data))
    copy = folder / path.name
    copy.write_bytes(data)
    wal = Path(str(path) + "-wal")
    if wal.exists():
        shutil.copyfile(wal, str(copy) + "-wal")
    return copy


def _read_rows(db: sqlite3.Connection, table: str, valid) -> list[tuple]:
    """Every valid row of ``table`` that can be read.  Reading goes on past a
    damaged page: after an error the scan starts again further on (by rowid,
    in growing steps), so one bad page loses its own rows only."""
    rows: list[tuple] = []
    # From rowid 0: the store's rows have positive rowids (SQLite's own),
    # and a damaged first page must not send the growing steps from far
    # below zero straight past every row (they would reach 1 only at 2**62).
    last = 0
    step = 1
    for _attempt in range(200):
        try:
            cur = db.execute(f"SELECT rowid, * FROM {table} WHERE rowid > ? ORDER BY rowid", (last,))
        except UNREADABLE as exc:
            # execute() already reads the first row: a damaged page there is
            # skipped like any other; a table that is not there ends the scan.
            if "no such table" in str(exc):
                break
            cur = None
        while cur is not None:
            try:
                row = cur.fetchone()
            except UNREADABLE:
                row = False
            if row is None:
                return rows
            if row is False:
                break
            last, step = row[0], 1
            if valid(row[1:]):
                rows.append(tuple(row[1:]))
        last += step
        step *= 2
        if last >= 1 << 62:        # past any rowid SQLite hands out
            break
    return rows


def _salvage(path: Path):
    """Read every game row and action row that a damaged file still yields."""
    games, actions, roster, seats = [], [], [], []
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".salvage-") as folder:
        try:
            db = sqlite3.connect(_readable_copy(path, Path(folder)))
            db.text_factory = _lenient_text
        except (OSError, sqlite3.Error):
            return games, actions, roster, seats
        try:
            games = _read_rows(db, "games", _valid_game)
            actions = _read_rows(db, "actions", _valid_action)
            roster = _read_rows(db, "roster", _valid_player)
            seats = _read_rows(db, "roster_seats", _valid_seat)
        finally:
            db.close()
    # keep only each game's contiguous prefix of actions (1, 2, 3, ...)
    by_game: dict[int, list] = {}
    for a in sorted(actions, key=lambda a: (a[0], a[1])):
        seqs = by_game.setdefault(a[0], [])
        if a[1] == len(seqs) + 1:
            seqs.append(a)
    actions = [a for seqs in by_game.values() for a in seqs]
    games = [g for g in games if by_game.get(g[0])]     # a game whose first line is lost is lost
    return games, actions, roster, seats
