"""What a rolled-back version acknowledged, carried back into the store.

After an update the new version serves the table while root checks that it
stays up (appliance/root/updater.py).  If it does not, root puts the
pre-update copy of the store back, so that the version it goes back to finds
a store it can read: every action the new version acknowledged meanwhile
would be gone with it.  So, just before, root keeps the new version's store
beside it, as it is, under a name of its own (two more names of the same
files, no copy: a full card does not stop it)::

    <data>/rolled-back-<version>-<stamp>.db       (and its -wal)

and this module, run by the companion's start before the table session
opens the game (:func:`carry_back`, as the service's user: root never reads
the new version's store), replays it onto the store it came back to.  The
store is an append-only log of replay-format lines, so what the new version
added is what its store holds beyond the copy:

* a game of both stores whose lines here are the first lines there gets the
  lines after them;
* a game there only (started on the new version) comes in whole, under its
  own number;
* a game whose lines differ otherwise (an unrevealed entry taken back there)
  gets the log the new version kept;
* the roster's new players and new names come too, and a player merged into
  another there is merged here.

Every line is checked by this version's rules first (the same fold as
``companion replay``).  **What does not replay here is never dropped
silently**: the game keeps its lines up to the first one that does not
replay (if any do), its whole log as the new version kept it is written to
``backups/rolled-back/game-<number>-<game>.jsonl`` (``companion import``
takes it back on a version that reads it), and a notice on the panel and
the phones names the game and the file.  A store this version cannot read
at all is kept under its name, ``.unread`` added, with a notice that says so.

All of a store comes in in one transaction: a power cut in the middle leaves
none of it, and the next start does it again (a game already carried has
nothing more to add: doing it twice is doing it once).  The kept files go
only once it is in.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from . import durable
from .i18n import N_

log = logging.getLogger("companion.carry_back")

PREFIX = "rolled-back-"
_NAME = re.compile(r"rolled-back-(?P<version>.+)-(?P<stamp>[0-9]+)\.db")
FOLDER = Path("backups") / "rolled-back"     # the logs that do not replay here, in the data folder

KEPT = N_("Version {version} was rolled back; the actions taken on it are kept ({count}).")
NOT_HERE = N_("Game {id} ({game}) from version {version} does not replay on this version after line {lines}: "
              "its whole log is kept as {file} (companion import).")
UNREAD = N_("The game store of version {version} could not be read by this version: it is kept as {file}, "
            "and the actions taken on version {version} are not in this store.")
IN_PART = N_("The game store of version {version} could be read only in part by this version: what it could "
             "read is carried back, and the store is kept as {file}.")
NOT_YET = N_("The actions taken on version {version} could not be carried back yet ({detail}): "
             "they are tried again at the next start.")


def kept_stores(data_dir: Path) -> list[Path]:
    """The stores root kept at rollbacks, oldest first."""
    found = [p for p in Path(data_dir).glob(f"{PREFIX}*.db") if _NAME.fullmatch(p.name)]
    return sorted(found, key=lambda p: (int(_NAME.fullmatch(p.name)["stamp"]), p.name))


def carry_back(store) -> list[tuple[str, dict]]:
    """Carry every kept store into ``store`` (the companion's, open, no session
    on it yet); the notices for the table.  Never raises: what cannot be
    carried now stays for the next start, and says so."""
    notices = []
    for path in kept_stores(store.dir):
        version = _NAME.fullmatch(path.name)["version"]
        try:
            notices += _carry_one(store, path, version)
        except Exception as exc:     # noqa: BLE001 (the table must start; the files stay for the next try)
            log.exception("could not carry back %s", path.name)
            notices.append((NOT_YET, {"version": version, "detail": str(exc)[:200] or type(exc).__name__}))
    return notices


# -- reading the kept store ------------------------------------------------------------
@dataclass
class _Kept:
    whole: bool = True                             # read as a store, not through its damage
    complete: bool = True                          # every game it has, with its lines
    games: list = field(default_factory=list)      # (id, game, players, started, updated, finished, winner)
    lines: dict = field(default_factory=dict)      # id -> [(line, at)] from line 1 on, no gap
    roster: list = field(default_factory=list)     # (id, name, key, added)
    seats: dict = field(default_factory=dict)      # game id -> {seat: player id}


def _read(path: Path) -> _Kept | None:
    """The kept store's rows, each checked as the store's own salvage checks
    them; None when nothing can be read."""
    from .store import _lenient_text, _salvage, _valid_action, _valid_game, _valid_player, _valid_seat

    games = actions = roster = seats = None
    whole = True
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5)
        try:
            db.text_factory = _lenient_text
            db.execute("PRAGMA query_only=ON")
            if db.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("damaged")
            games = db.execute("SELECT id, game, players, started, updated, finished, winner FROM games"
                               " ORDER BY id").fetchall()
            actions = db.execute("SELECT game_id, seq, line, at FROM actions ORDER BY game_id, seq").fetchall()
            roster = db.execute("SELECT id, name, key, added FROM roster ORDER BY id").fetchall()
            seats = db.execute("SELECT game_id, seat, player FROM roster_seats").fetchall()
        finally:
            db.close()
    except (sqlite3.Error, UnicodeDecodeError, ValueError):
        games = None
    if games is None:          # another layout, or damage: what the salvage can still read
        whole = False
        try:
            games, actions, roster, seats = _salvage(path)
        except (OSError, sqlite3.Error):
            return None
        if not games:
            return None
    kept = _Kept(whole=whole, games=[g for g in games if _valid_game(g)],
                 roster=[p for p in roster if _valid_player(p)])
    for gid, seq, line, at in (a for a in actions if _valid_action(a)):
        rows = kept.lines.setdefault(gid, [])
        if seq == len(rows) + 1:
            rows.append((line, at))
    for gid, seat, player in (s for s in seats if _valid_seat(s)):
        kept.seats.setdefault(gid, {})[seat] = player
    kept.complete = len(kept.games) == len(games) and all(kept.lines.get(g[0]) for g in kept.games)
    kept.games = [g for g in kept.games if kept.lines.get(g[0])]
    return kept


# -- carrying it in -----------------------------------------------------------------------
def _carry_one(store, path: Path, version: str) -> list[tuple[str, dict]]:
    kept = _read(path)
    if kept is None:
        return [(UNREAD, {"version": version, "file": _set_apart(path)})]
    from .exports import _fold

    db = store.db
    notices, not_here, count, finished = [], [], 0, []
    db.execute("BEGIN IMMEDIATE")
    try:
        ids = _carry_roster(db, kept)
        for row in kept.games:
            carried = _carry_game(db, kept, row, ids, _fold)
            if carried is None:
                continue
            gid, lines, good, added, done, apart = carried
            count += added
            if done:
                finished.append(gid)
            if apart:
                not_here.append((gid, row[1], lines, good))
        if kept.whole:
            _drop_merged(db, kept, ids)
        # The logs that do not replay here are on the card before the rest counts as carried.
        for gid, game, lines, good in not_here:
            name = _keep_log(store.dir, gid, game, lines)
            notices.append((NOT_HERE, {"id": gid, "game": game, "version": version, "lines": good,
                                       "file": str(FOLDER / name)}))
        db.execute("COMMIT")
    except BaseException:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise
    store.generation += 1
    store._usage = None
    store._checkpoint()          # the lines taken out (taken back there) leave the write-ahead log too
    for gid in finished:
        store.backup(gid)
    if count:
        notices.insert(0, (KEPT, {"count": count, "version": version}))
    log.info("carried back %s actions from %s", count, path.name)
    if kept.whole and kept.complete:
        durable.remove(path)
        _drop_beside(path)
    else:                        # read through damage, or a game without its lines: kept whole
        notices.append((IN_PART, {"version": version, "file": _set_apart(path)}))
    return notices


def _set_apart(path: Path) -> str:
    """A kept store this version cannot read whole, under a name no start
    carries again (``.unread``), its write-ahead log beside it; its name."""
    unread = path.with_name(path.name + ".unread")
    for suffix in ("-wal", ""):
        src = path.with_name(path.name + suffix)
        if src.exists():
            durable.move(src, unread.with_name(unread.name + suffix))
    durable.remove(path.with_name(path.name + "-shm"))
    return unread.name


def _carry_game(db, kept: _Kept, row, ids: dict, fold):
    """One game of the kept store into ours (inside the caller's transaction):
    ``(our number, its lines there, how many replay here, lines added,
    finished, kept apart)``, or None when there is nothing to carry."""
    from .store import _put_summary, _set_outcome, _size, summary_of

    gid, game, players, started, updated, _finished, _winner = row
    theirs = kept.lines[gid]
    lines = [line for line, _at in theirs]
    ours = [r[0] for r in db.execute("SELECT line FROM actions WHERE game_id=? ORDER BY seq", (gid,))]
    same = bool(ours) and ours[0] == lines[0]
    if same and kept.whole:                # who sits where there (a player merged there, into another)
        _carry_seats(db, gid, kept.seats.get(gid), ids, False, players, started)
    if same and ours == lines:
        return None                        # nothing new (or carried already)
    timeline, broken = fold(lines)
    good = len(lines) if broken is None else broken
    target = lines[:good]
    common = 0
    while same and common < min(len(ours), good) and ours[common] == target[common]:
        common += 1
    if same and (target == ours or (common < len(ours) and not kept.whole)):
        # Nothing here to change: the rest does not replay here, or (a store
        # read through its damage) a log that would take lines out of ours.
        return (gid, lines, good, 0, False, True) if target != lines else None
    if not same and good == 0:
        return gid, lines, 0, 0, False, True
    if same:
        here, new = gid, False
        # Lines of ours the new version no longer has were taken back there.
        db.execute("DELETE FROM actions WHERE game_id=? AND seq>?", (gid, common))
    elif ours:
        # That number is another game here: the new version's comes in under a new one.
        here = db.execute("INSERT INTO games (game, players, started, updated) VALUES (?,?,?,?)",
                          (game, players, started, updated)).lastrowid
        new = True
    else:
        db.execute("INSERT INTO games (id, game, players, started, updated) VALUES (?,?,?,?,?)",
                   (gid, game, players, started, updated))
        here, new = gid, True
    db.executemany("INSERT INTO actions VALUES (?,?,?,?)",
                   [(here, seq, line, at) for seq, (line, at) in enumerate(theirs[common:good], start=common + 1)])
    public = (timeline if broken is None else fold(target)[0]).public()
    done = bool(public.get("finished"))
    _set_outcome(db, here, max(updated, theirs[good - 1][1]), done, public.get("winner") if done else None)
    _put_summary(db, here, good, _size(target), summary_of(public))
    if new:
        _carry_seats(db, here, kept.seats.get(gid), ids, True, players, started)
    return here, lines, good, good - common, done, good < len(lines)


def _drop_beside(path: Path) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        durable.remove(path.with_name(path.name + suffix))


def _keep_log(data_dir: Path, gid: int, game: str, lines: list[str]) -> str:
    folder = Path(data_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", game)[:40] or "game"
    name = f"game-{gid:06d}-{safe}.jsonl"
    durable.write_text(folder / name, "".join(line + "\n" for line in lines), mode=0o600)
    return name


def _carry_roster(db, kept: _Kept) -> dict[int, int]:
    """The new version's players here: its new names, its new players
    (under their own number when it is free); its player number -> ours."""
    from .stats import player_key

    ids = {}
    for pid, name, key, added in kept.roster:
        row = db.execute("SELECT name, key FROM roster WHERE id=?", (pid,)).fetchone()
        by_key = db.execute("SELECT id FROM roster WHERE key=?", (key,)).fetchone()
        if row is not None and row[1] == key:
            if row[0] != name:
                db.execute("UPDATE roster SET name=? WHERE id=?", (name, pid))
            ids[pid] = pid
        elif row is not None and by_key is None:          # renamed there
            db.execute("UPDATE roster SET name=?, key=? WHERE id=?", (name, player_key(name), pid))
            ids[pid] = pid
        elif by_key is not None:
            ids[pid] = by_key[0]
        else:
            ids[pid] = db.execute("INSERT INTO roster (id, name, key, added) VALUES (?,?,?,?)",
                                  (pid if row is None else None, name, key, added)).lastrowid
    return ids


def _carry_seats(db, gid: int, seats: dict | None, ids: dict, new_game: bool, players: str, started) -> None:
    """A carried game's seats: the new version's players at them."""
    from .store import _link_seats

    mapped = {seat: ids[p] for seat, p in (seats or {}).items() if p in ids}
    if mapped:
        db.executemany("INSERT OR REPLACE INTO roster_seats VALUES (?,?,?)",
                       [(gid, seat, player) for seat, player in mapped.items()])
    elif new_game:
        names = json.loads(players) if isinstance(players, str) else []
        _link_seats(db, gid, [n for n in names if isinstance(n, str)], started)


def _drop_merged(db, kept: _Kept, ids: dict) -> None:
    """A player of ours the new version no longer has was merged into another
    there: once its seats in the carried games are the other's, a player left
    with no seat anywhere goes, as a merge leaves it."""
    theirs = {pid for pid, *_ in kept.roster}
    if not theirs:
        return
    for (pid,) in db.execute("SELECT id FROM roster").fetchall():
        if pid in theirs or pid in ids.values():
            continue
        if db.execute("SELECT 1 FROM roster_seats WHERE player=? LIMIT 1", (pid,)).fetchone() is None:
            db.execute("DELETE FROM roster WHERE id=?", (pid,))
