"""The game store: every game as an append-only log of actions in SQLite.

The replay format *is* the stored format: each row of ``actions`` holds one
JSON line exactly as ``companion replay`` reads it, so exporting a game is
reading its rows in order.  WAL with ``synchronous=FULL`` makes each append
durable before it returns; the table session acknowledges an action only
after that, so a pulled plug loses nothing that a player was told was taken.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreError
from .i18n import N_

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
"""

DB_NAME = "companion.db"
BACKUPS_KEPT = 100


def dump_action(action: dict) -> str:
    """The canonical JSON line of an action (stable key order as given)."""
    return json.dumps(action, ensure_ascii=False, separators=(", ", ": "))


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

    def as_dict(self) -> dict:
        return {
            "id": self.id, "game": self.game, "players": self.players,
            "started": self.started, "updated": self.updated,
            "finished": self.finished, "winner": self.winner, "actions": self.actions,
        }


class Store:
    """The SQLite file of one companion.  Not thread-safe by itself: the
    table session is its single writer and serialises calls."""

    def __init__(self, data_dir: str | os.PathLike, clock=time.time):
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / DB_NAME
        self.clock = clock
        self.warnings: list[tuple[str, dict]] = []  # (template, params) to show at start
        self.db = self._open_checked()

    # -- opening, with recovery from a damaged file -------------------------
    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(SCHEMA)
        return db

    def _open_checked(self) -> sqlite3.Connection:
        try:
            db = self._connect()
            row = db.execute("PRAGMA quick_check").fetchone()
            if row and row[0] == "ok":
                return db
            db.close()
        except sqlite3.DatabaseError:
            pass
        return self._recover()

    def _recover(self) -> sqlite3.Connection:
        """Keep what can be read, move the damaged file aside, start afresh."""
        games, actions = _salvage(self.path)
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
            db.execute("COMMIT")
        self.warnings.append((N_("The game store was damaged: {games} games were saved; "
                                 "the damaged file was kept as {name}."),
                              {"games": len(games), "name": aside.name}))
        return db

    # -- writing -------------------------------------------------------------
    def create_game(self, game: str, players, first_line: str) -> int:
        now = self.clock()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            cur = self.db.execute(
                "INSERT INTO games (game, players, started, updated) VALUES (?,?,?,?)",
                (game, json.dumps(list(players), ensure_ascii=False), now, now))
            gid = cur.lastrowid
            self.db.execute("INSERT INTO actions VALUES (?,?,?,?)", (gid, 1, first_line, now))
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the game ({detail})"), detail=str(exc))
        return gid

    def import_game(self, game: str, players, lines: list[str], finished: bool, winner) -> int:
        """Store a whole, already validated log as a new game in one transaction."""
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
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the game ({detail})"), detail=str(exc))
        return gid

    def append(self, game_id: int, seq: int, line: str, finished: bool, winner) -> None:
        """Append line ``seq`` of a game; durable when this returns."""
        now = self.clock()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO actions VALUES (?,?,?,?)", (game_id, seq, line, now))
            self.db.execute("UPDATE games SET updated=?, finished=?, winner=? WHERE id=?",
                            (now, int(finished), json.dumps(winner) if winner is not None else None, game_id))
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StoreError(N_("could not store the action ({detail})"), detail=str(exc))

    def backup(self, game_id: int, keep: int = BACKUPS_KEPT) -> Path | None:
        """Copy a finished game's log to ``backups/`` (a rolling set of the
        newest ``keep`` files), written atomically so a power cut leaves either
        the old file or the whole new one."""
        record = self.game(game_id)
        if record is None:
            return None
        folder = self.dir / "backups"
        try:
            folder.mkdir(exist_ok=True)
            target = folder / f"game-{game_id:06d}-{record.game}.jsonl"
            tmp = target.with_suffix(".tmp")
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write("\n".join(self.lines(game_id)) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
            for old in sorted(folder.glob("game-*.jsonl"))[:-keep]:
                old.unlink()
            return target
        except OSError:
            return None  # a backup is a convenience: never fail the action for it

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

    def games(self, game: str | None = None, player: str | None = None) -> list[GameRecord]:
        """Stored games, newest first."""
        rows = self.db.execute(
            "SELECT g.id, g.game, g.players, g.started, g.updated, g.finished, g.winner,"
            " (SELECT COUNT(*) FROM actions a WHERE a.game_id=g.id)"
            " FROM games g ORDER BY g.updated DESC, g.id DESC").fetchall()
        out = [_record(r) for r in rows]
        if game:
            out = [g for g in out if g.game == game]
        if player:
            out = [g for g in out if player in g.players]
        return out

    def game(self, game_id: int) -> GameRecord | None:
        for rec in self.games():
            if rec.id == game_id:
                return rec
        return None

    def latest_unfinished(self) -> GameRecord | None:
        row = self.db.execute(
            "SELECT g.id, g.game, g.players, g.started, g.updated, g.finished, g.winner, 0"
            " FROM games g WHERE finished=0 ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        return _record(row) if row else None

    def close(self):
        try:
            self.db.close()
        except sqlite3.Error:
            pass


def _record(row) -> GameRecord:
    gid, game, players, started, updated, finished, winner, count = row
    return GameRecord(gid, game, json.loads(players), started, updated, bool(finished),
                      json.loads(winner) if winner else None, count)


def _salvage(path: Path):
    """Read every game row and action row that a damaged file still yields."""
    games, actions = [], []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return games, actions
    try:
        for table, sink, width in (("games", games, 7), ("actions", actions, 4)):
            try:
                cur = db.execute(f"SELECT * FROM {table}")
                while True:
                    try:
                        row = cur.fetchone()
                    except sqlite3.DatabaseError:
                        break
                    if row is None:
                        break
                    if len(row) == width:
                        sink.append(tuple(row))
            except sqlite3.DatabaseError:
                continue
    finally:
        db.close()
    # keep only each game's contiguous prefix of actions (1, 2, 3, ...)
    by_game: dict[int, list] = {}
    for a in sorted(actions, key=lambda a: (a[0], a[1])):
        seqs = by_game.setdefault(a[0], [])
        if a[1] == len(seqs) + 1:
            seqs.append(a)
    actions = [a for seqs in by_game.values() for a in seqs]
    games = [g for g in games if g[0] in by_game]
    return games, actions
