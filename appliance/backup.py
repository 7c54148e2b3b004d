"""One backup file of the whole box, restorable on a fresh one.

A backup is a zip file (``companion-<stamp>.zip``) that any computer opens:

* ``companion-backup.json`` — the manifest: the format's name and version,
  the companion that made it, when (UTC), how many games, and the size and
  SHA-256 of every other member.  Read first: a file whose manifest is
  missing or names another format is foreign, a version above
  :data:`FORMAT_VERSION` is too new, and nothing else is read then;
* ``games.json`` — each game's number, game, players, times, seats (roster
  ids) and the time of each line;
* ``games/<number>.jsonl`` — each game as its replay-format log
  (docs/replay.md): ``companion replay`` reads it as it is;
* ``roster.json`` — the table's players;
* ``settings.json`` — the table's settings (:data:`TABLE_SETTINGS`);
* ``wifi-password`` — the box's own Wi-Fi password, when it has one.

**What a backup never holds.**  The PIN is on the box for the whole table to
read, and the web page hands the file to whoever shows it, so a backup holds
only what the PIN may read (docs/security.md): each game is its *public
prefix* (:func:`companion.exports.public_prefix`), so an unfinished game
whose secret entry is still pending stops just before that entry, and a
restore resumes it there, the entry to be made again.  The command line
writes the same file: one rule for every copy, wherever it is carried next.
Never the PIN, the club hub's key or address, the box's wiring or its server
limits: those belong to the box, not to the table.

**Restore** checks the whole file first (every checksum, every log replayed,
every name and setting), builds the new data folder beside the old one
(``.restore-new/``) and only then swaps it in, moving what it replaces to
``replaced-<stamp>/``, which goes once the restored store has opened at the
companion's start (:func:`drop_replaced`: the Backup page says what it
replaces is lost).  A bad file raises :class:`BackupError` and changes
nothing.  The swap is journalled: a power cut in the middle of it is
finished at the next start (:func:`finish_pending`).  A running box does not swap its store under
itself: the web stages the restore and restarts the companion, whose start
finishes it (web/backup.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
import sqlite3
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from companion import __version__, durable
from companion.errors import CompanionError
from companion.i18n import N_
from companion.config import default_data_dir
from companion.i18n import _
from companion.limits import MAX_GAME_LINES

FORMAT = "companion-backup"
FORMAT_VERSION = 1
MANIFEST = "companion-backup.json"
STAGE = ".restore-new"
READY = "RESTORE-READY"
# What a phone may send to be restored (the web's limit) and what a file may
# unpack to: a full store (companion/limits.py: 100 MB of logs) fits both.
MAX_BACKUP_BYTES = 16 * 1024 * 1024
MAX_UNPACKED_BYTES = 128 * 1024 * 1024       # the largest store (100 MB of logs) and its lists
MAX_MEMBERS = 20_010
# What the swap moves: the store and its journal, the settings, the Wi-Fi
# password, the per-game logs of finished games.
SWAPPED = ("companion.db-wal", "companion.db-shm", "companion.db", "companion.toml", "wifi-password", "backups")
# The table's settings: what the table chooses (its language, speech, the
# names, the box's own network).  Not the PIN (public, and the two-worlds
# rule), not the hub's key or address (the box's own, never on a phone),
# not the wiring, server limits or host names (the box's, and a restore
# from a phone must not open the box to other web sites).
TABLE_SETTINGS = ("language", "speak", "name", "names", "wifi", "wifi_password", "wifi_ssid",
                  "wifi_country", "wifi_channel", "wifi_wait_s")

_busy = threading.Lock()


class BackupError(CompanionError):
    """A backup that cannot be written or a file that cannot be restored; one line."""


@dataclass(frozen=True)
class BackupInfo:
    version: int            # the file's format version
    created_at: str         # UTC, ISO 8601 ("2026-11-27T19:20:00Z")
    games: int
    made_by: str = ""       # "companion 0.1.0"

    def as_dict(self) -> dict:
        return {"version": self.version, "created_at": self.created_at, "games": self.games,
                "made_by": self.made_by}


# -- writing --------------------------------------------------------------------

def write_backup(data_dir: Path, dest: Path, clock=time.time) -> BackupInfo:
    """Write the backup of ``data_dir`` to ``dest`` (replaced whole, or left
    as it was).  Reads the store in one read transaction of its own: the
    table may go on meanwhile."""
    body = backup_bytes(Path(data_dir), clock)
    dest = Path(dest)
    try:
        durable.write(dest, body[0], mode=0o600)
    except OSError as exc:
        raise BackupError(N_("cannot write the backup {file}: {reason}"), file=str(dest),
                          reason=exc.strerror or str(exc)) from None
    return body[1]


def backup_bytes(data_dir: Path, clock=time.time) -> tuple[bytes, BackupInfo]:
    """The backup file's bytes and its info.  The same store, settings and
    clock give the same bytes."""
    now = clock()
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    games, roster = _read_store(data_dir / "companion.db")
    members: dict[str, bytes] = {}
    listed = []
    for game in games:
        lines = _public_prefix(game.pop("lines"))
        if not lines:
            continue
        ats = game.pop("ats")
        name = f"games/{game['id']:06d}.jsonl"
        members[name] = "".join(line + "\n" for line in lines).encode("utf-8")
        listed.append({**game, "log": name, "at": (ats + [game["updated"]] * len(lines))[:len(lines)]})
    members["games.json"] = _json(listed)
    members["roster.json"] = _json(roster)
    members["settings.json"] = _json(_table_settings(data_dir))
    password = _wifi_password(data_dir)
    if password:
        members["wifi-password"] = (password + "\n").encode("ascii")
    manifest = {"format": FORMAT, "version": FORMAT_VERSION, "made_by": f"companion {__version__}",
                "created_at": created, "games": len(listed),
                "files": {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                          for name, data in members.items()}}
    stamp = time.gmtime(now)[:6]
    stamp = stamp if stamp[0] >= 1980 else (1980, 1, 1, 0, 0, 0)     # the zip format's first day
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in [(MANIFEST, _json(manifest)), *members.items()]:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            zf.writestr(info, data)
    return out.getvalue(), BackupInfo(FORMAT_VERSION, created, len(listed), manifest["made_by"])


# The public prefix of a log, by the log's digest: folding every game is
# most of a backup's cost, and a finished game never changes.  Only its
# length is kept (a few bytes a game), for logs whose prefix is their own
# first lines (as the store writes them); any other log is folded each time.
_PREFIX_LENGTHS: dict[bytes, int] = {}
_PREFIX_KEPT = 50_000


def _public_prefix(lines: list[str]) -> list[str]:
    from companion.exports import public_prefix

    key = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).digest()
    known = _PREFIX_LENGTHS.get(key)
    if known is not None:
        return lines[:known]
    prefix = public_prefix(lines)
    if prefix == lines[:len(prefix)]:
        if len(_PREFIX_LENGTHS) >= _PREFIX_KEPT:
            _PREFIX_LENGTHS.clear()
        _PREFIX_LENGTHS[key] = len(prefix)
    return prefix


def _json(value) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")


def _read_store(path: Path) -> tuple[list[dict], list[dict]]:
    """Every game (with its stored lines and their times) and the roster,
    read in one transaction on a read-only connection of its own."""
    if not path.exists():
        return [], []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise BackupError(N_("cannot read the game store: {reason}"), reason=str(exc)) from None
    db.text_factory = lambda raw: raw.decode("utf-8", "replace")
    try:
        db.execute("BEGIN")
        games = []
        for gid, game, players, started, updated in db.execute(
                "SELECT id, game, players, started, updated FROM games ORDER BY id").fetchall():
            rows = db.execute("SELECT line, at FROM actions WHERE game_id=? ORDER BY seq", (gid,)).fetchall()
            seats = dict(db.execute("SELECT seat, player FROM roster_seats WHERE game_id=?", (gid,)).fetchall())
            names = _loads(players, [])
            games.append({"id": gid, "game": game, "players": names, "started": started, "updated": updated,
                          "seats": [seats.get(i) for i in range(len(names))],
                          "lines": [r[0] for r in rows], "ats": [r[1] for r in rows]})
        roster = [{"id": pid, "name": name, "added": added}
                  for pid, name, added in db.execute("SELECT id, name, added FROM roster ORDER BY id")]
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        raise BackupError(N_("cannot read the game store: {reason}"), reason=str(exc)) from None
    finally:
        db.close()
    return games, roster


def _loads(text, default):
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return default


def _table_settings(data_dir: Path) -> dict:
    """The table's settings as the box's settings file says them (not the
    defaults: a restored box takes its own defaults for what was not set)."""
    toml = _read_toml(data_dir / "companion.toml")
    return {key: toml[key] for key in TABLE_SETTINGS if key in toml and _setting_ok(key, toml[key])}


def _read_toml(path: Path) -> dict:
    import tomllib

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BackupError(N_("cannot read the settings file {file}: {reason}"), file=str(path),
                          reason=str(exc)) from None


def _wifi_password(data_dir: Path) -> str | None:
    from .wifi import PASSWORD_FILE, WifiSettingError, check_password

    try:
        password = (data_dir / PASSWORD_FILE).read_text(encoding="ascii").strip()
        check_password(password)
        return password
    except (OSError, UnicodeError, WifiSettingError):
        return None


# -- reading --------------------------------------------------------------------

def read_backup(src: Path) -> tuple[BackupInfo, dict]:
    """Check a backup file whole and return its info and content (games
    with their lines and folded states, roster, settings, Wi-Fi password).
    Raises :class:`BackupError` on anything wrong."""
    try:
        with open(src, "rb") as fh:
            data = fh.read(MAX_UNPACKED_BYTES + 1)
    except OSError as exc:
        raise BackupError(N_("cannot read {file}: {reason}"), file=str(src), reason=exc.strerror or str(exc)) from None
    if len(data) > MAX_UNPACKED_BYTES:
        raise BackupError(N_("this file is larger than any backup the box makes ({limit} bytes)"),
                          limit=MAX_UNPACKED_BYTES)
    return check_bytes(data)


def check_bytes(data: bytes) -> tuple[BackupInfo, dict]:
    if not data.startswith(b"PK\x03\x04"):
        raise BackupError(N_("this is not a companion backup (not a zip file made by the companion)"))
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception:   # BadZipFile, and whatever a scribbled directory makes zipfile raise (NotImplementedError…)
        raise BackupError(N_("this backup is damaged or cut short: it cannot be opened")) from None
    with zf:
        names = zf.namelist()
        if MANIFEST not in names:
            raise BackupError(N_("this is not a companion backup (a zip file of something else)"))
        manifest = _member_json(zf, MANIFEST, 1024 * 1024)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BackupError(N_("this is not a companion backup (a zip file of something else)"))
        version = manifest.get("version")
        if type(version) is not int or version < 1:
            raise _damaged("its format version")
        if version > FORMAT_VERSION:
            raise BackupError(N_("this backup was made by a newer companion ({made_by}, format {version}): "
                                 "this one reads format {supported}; update the box first"),
                              made_by=str(manifest.get("made_by"))[:40], version=version, supported=FORMAT_VERSION)
        files = manifest.get("files")
        if not isinstance(files, dict) or len(names) > MAX_MEMBERS or len(set(names)) != len(names):
            raise _damaged("its list of files")
        if set(names) != {MANIFEST, *files}:
            raise _damaged("its list of files")
        total = 0
        content: dict[str, bytes] = {}
        for name, entry in files.items():
            if not isinstance(entry, dict) or type(entry.get("bytes")) is not int:
                raise _damaged(name)
            info = zf.getinfo(name)
            total += info.file_size
            if info.file_size != entry["bytes"] or total > MAX_UNPACKED_BYTES:
                raise _damaged(name)
            raw = _member(zf, name, entry["bytes"])
            if hashlib.sha256(raw).hexdigest() != entry.get("sha256"):
                raise _damaged(name)
            content[name] = raw
    created = manifest.get("created_at")
    if not isinstance(created, str) or len(created) > 40:
        raise _damaged(MANIFEST)
    parsed = _parse_content(content)
    return BackupInfo(version, created, len(parsed["games"]), str(manifest.get("made_by"))[:40]), parsed


def _damaged(what: str) -> BackupError:
    return BackupError(N_("this backup is damaged ({part} does not check out): nothing was changed"), part=what)


def _member(zf: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        with zf.open(name) as fh:
            raw = fh.read(limit + 1)
    except Exception:       # BadZipFile (a CRC), zlib.error, EOFError, NotImplementedError: bytes that do not inflate
        raise _damaged(name) from None
    if len(raw) > limit:
        raise _damaged(name)
    return raw


def _member_json(zf: zipfile.ZipFile, name: str, limit: int):
    try:
        return json.loads(_member(zf, name, limit).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _damaged(name) from None


def _parse_content(content: dict[str, bytes]) -> dict:
    """Every part checked: each log replays, each game's facts agree with
    its log, names are names, settings are the table's and valid."""
    from companion.exports import decoded_lines
    from companion.stats import player_key
    from companion.text import unsafe_char
    from companion.timeline import ReplayError, replay

    def load(name, default=None):
        if name not in content:
            if default is not None:
                return default
            raise _damaged(name)
        try:
            return json.loads(content[name].decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _damaged(name) from None

    roster = load("roster.json")
    if not isinstance(roster, list):
        raise _damaged("roster.json")
    ids, keys = set(), set()
    for player in roster:
        if not (isinstance(player, dict) and type(player.get("id")) is int and player["id"] > 0
                and isinstance(player.get("name"), str) and 1 <= len(player["name"].strip()) <= 64
                and not unsafe_char(player["name"]) and _number(player.get("added"))):
            raise _damaged("roster.json")
        key = player_key(player["name"])
        if player["id"] in ids or key in keys:
            raise _damaged("roster.json")
        ids.add(player["id"])
        keys.add(key)
    games = load("games.json")
    if not isinstance(games, list):
        raise _damaged("games.json")
    seen, parsed = set(), []
    for game in games:
        if not (isinstance(game, dict) and type(game.get("id")) is int and game["id"] > 0
                and game["id"] not in seen and isinstance(game.get("log"), str) and game["log"] in content
                and _number(game.get("started")) and _number(game.get("updated"))
                and isinstance(game.get("players"), list) and isinstance(game.get("seats"), list)
                and isinstance(game.get("at"), list)):
            raise _damaged("games.json")
        seen.add(game["id"])
        try:
            lines = [line for line in decoded_lines(content[game["log"]]) if line.strip()]
            if not lines or len(lines) > MAX_GAME_LINES:
                raise _damaged(game["log"])
            timeline = replay(lines)
        except ReplayError:
            raise _damaged(game["log"]) from None
        players = list(timeline.players)
        if (game["players"] != players or game.get("game") != timeline.game.id
                or len(game["seats"]) != len(players) or len(game["at"]) != len(lines)
                or not all(_number(at) for at in game["at"])
                or not all(seat in ids for seat in game["seats"])
                or any(unsafe_char(name) for name in players)):
            raise _damaged(game["log"])
        public = timeline.public()
        finished = bool(public.get("finished"))
        parsed.append({"id": game["id"], "game": game["game"], "players": players, "started": game["started"],
                       "updated": game["updated"], "seats": game["seats"], "lines": lines, "at": game["at"],
                       "finished": finished, "winner": public.get("winner") if finished else None,
                       "public": public})
    settings = load("settings.json")
    if not isinstance(settings, dict) or not all(k in TABLE_SETTINGS and _setting_ok(k, v)
                                                 for k, v in settings.items()):
        raise _damaged("settings.json")
    password = None
    if "wifi-password" in content:
        from .wifi import WifiSettingError, check_password
        try:
            password = content["wifi-password"].decode("ascii").strip()
            check_password(password)
        except (UnicodeDecodeError, WifiSettingError):
            raise _damaged("wifi-password") from None
    return {"games": parsed, "roster": roster, "settings": settings, "wifi_password": password}


def _number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value < 1e11


def _setting_ok(key: str, value) -> bool:
    """A table setting of the right kind (what a restored box may take)."""
    from .wifi import CHANNELS, MODES, WifiSettingError, check_password

    if key == "speak":
        return type(value) is bool
    if key == "names":
        return (isinstance(value, list) and len(value) <= 64
                and all(isinstance(n, str) and 1 <= len(n) <= 64 for n in value))
    if key == "wifi":
        return value in MODES
    if key == "wifi_password":
        try:
            check_password(value)
            return True
        except (WifiSettingError, TypeError):
            return False
    if key == "wifi_channel":
        return type(value) is int and value in CHANNELS
    if key == "wifi_wait_s":
        return type(value) in (int, float) and 0 <= value <= 3600
    if key == "wifi_country":
        return isinstance(value, str) and len(value) == 2 and value.isascii() and value.isalpha()
    if key in ("language", "name", "wifi_ssid"):
        from companion.text import unsafe_char
        return isinstance(value, str) and 1 <= len(value) <= 63 and not unsafe_char(value)
    return False


# -- restoring ------------------------------------------------------------------

def restore_backup(src: Path, data_dir: Path, *, now=time.time) -> BackupInfo:
    """Restore ``src`` into ``data_dir`` now (the companion must not be
    running on that folder: the web uses :func:`stage_restore` and a restart)."""
    info = stage_restore(src, data_dir, now=now)
    finish_pending(data_dir)
    return info


def stage_restore(src: Path, data_dir: Path, *, now=time.time) -> BackupInfo:
    """Check ``src`` whole, then build the restored folder in
    ``<data_dir>/.restore-new/`` and mark it ready; :func:`finish_pending`
    swaps it in.  A bad file raises :class:`BackupError` with nothing written."""
    info, content = read_backup(src)
    data_dir = Path(data_dir)
    if not _busy.acquire(blocking=False):
        raise BackupError(N_("a restore is already under way"))
    try:
        stage = data_dir / STAGE
        if stage.exists():
            shutil.rmtree(stage)
        stage.mkdir(parents=True)
        try:
            _build(stage, data_dir, content)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now()))
            # The mark that the folder is whole, and the folder's own name
            # beside the store: both on the card before "restored" is said.
            durable.write_text(stage / READY, f"replaced-{stamp}\n")
            durable.fsync_dir(data_dir)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
    finally:
        _busy.release()
    return info


def _build(stage: Path, data_dir: Path, content: dict) -> None:
    from companion.store import Store, _put_summary, _size, dump_action, summary_of

    store = Store(stage, clock=lambda: 0.0)
    try:
        db = store.db
        # One transaction, not synced: a folder cut short by a power cut is
        # never marked ready (and is thrown away); the file is synced whole
        # before it is.
        db.execute("PRAGMA synchronous=OFF")
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO roster (id, name, key, added) VALUES (?,?,?,?)",
                       [(p["id"], p["name"], _key(p["name"]), p["added"]) for p in content["roster"]])
        for g in content["games"]:
            db.execute("INSERT INTO games (id, game, players, started, updated, finished, winner)"
                       " VALUES (?,?,?,?,?,?,?)",
                       (g["id"], g["game"], json.dumps(g["players"], ensure_ascii=False), g["started"],
                        g["updated"], int(g["finished"]), json.dumps(g["winner"]) if g["winner"] is not None else None))
            lines = [dump_action(json.loads(line)) for line in g["lines"]]     # as the store writes them
            db.executemany("INSERT INTO actions VALUES (?,?,?,?)",
                           [(g["id"], n, line, at) for n, (line, at) in enumerate(zip(lines, g["at"]), start=1)])
            db.executemany("INSERT INTO roster_seats VALUES (?,?,?)",
                           [(g["id"], seat, player) for seat, player in enumerate(g["seats"])])
            # The summary a listing reads: the state the check folded the log to.
            _put_summary(db, g["id"], len(lines), _size(lines), summary_of(g["public"]))
        db.execute("COMMIT")
        db.execute("PRAGMA synchronous=FULL")
        store._checkpoint()
        for g in content["games"]:
            if g["finished"]:
                store.backup(g["id"])
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        Path(str(stage / "companion.db") + suffix).unlink(missing_ok=True)
    durable.sync_file(stage / "companion.db")
    toml = {k: v for k, v in _read_toml(data_dir / "companion.toml").items() if k not in TABLE_SETTINGS}
    toml.update(content["settings"])
    durable.write_text(stage / "companion.toml", toml_text(toml))
    if content["wifi_password"]:
        from .datafiles import write_private
        write_private(stage / "wifi-password", content["wifi_password"] + "\n")


def _key(name: str) -> str:
    from companion.stats import player_key
    return player_key(name)


def finish_pending(data_dir: Path) -> bool:
    """Swap a staged restore in, if one is ready (the companion's start
    calls this before it opens the store).  Each part replaced moves to
    ``replaced-<stamp>/``; a swap cut short by a power cut goes on from
    where it stopped (each move is one rename, on the card before the next:
    :func:`companion.durable.move`).  Returns whether a restore was finished.
    What it replaced goes once the restored store has opened
    (:func:`drop_replaced`)."""
    data_dir = Path(data_dir)
    stage = data_dir / STAGE
    ready = stage / READY
    if not ready.exists():
        if stage.exists():               # a restore that never got ready: nothing of it counts
            shutil.rmtree(stage, ignore_errors=True)
        return False
    aside = data_dir / (ready.read_text(encoding="utf-8").strip() or "replaced")
    aside.mkdir(exist_ok=True)
    db_new = (stage / "companion.db").exists()
    for name in SWAPPED:
        new = stage / name
        old = data_dir / name
        replaced = new.exists() or (db_new and name.startswith("companion.db-"))
        if replaced and (old.exists() or old.is_symlink()):
            if (aside / name).exists():
                _remove(old)
            else:
                durable.move(old, aside / name)
        if new.exists():
            _own_like(data_dir, new)
            durable.move(new, old)
    shutil.rmtree(stage, ignore_errors=True)
    return True


def drop_replaced(data_dir: Path) -> list[str]:
    """What restores replaced (``replaced-<stamp>/``), removed: called once the
    restored store has opened whole, as the Backup page told the owner ("is
    lost").  The folders removed."""
    data_dir = Path(data_dir)
    if (data_dir / STAGE / READY).exists():
        return []                        # a restore not swapped in yet: its folder is still to come
    gone = []
    for folder in sorted(data_dir.glob("replaced-*")):
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder.name)
    if gone:
        durable.fsync_dir(data_dir)
    return gone


def _own_like(data_dir: Path, path: Path) -> None:
    """``companion restore`` run as root: what it puts in place belongs to
    the data folder's owner (the service user), who must go on writing it."""
    if os.geteuid() != 0:
        return
    st = data_dir.stat()
    for item in [path, *(path.rglob("*") if path.is_dir() else ())]:
        os.chown(item, st.st_uid, st.st_gid, follow_symlinks=False)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# -- a settings file out of a dict ------------------------------------------------

def toml_text(settings: dict) -> str:
    """``settings`` as TOML (strings, booleans, numbers, lists of them,
    tables of them): what tomllib reads back to the same dict."""
    import tomllib

    head, tables = [], []
    for key, value in settings.items():
        if isinstance(value, dict):
            tables.append(f"\n[{_toml_key(key)}]")
            tables += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()]
        else:
            head.append(f"{_toml_key(key)} = {_toml_value(value)}")
    text = "\n".join(head + tables) + "\n"
    if tomllib.loads(text) != settings:
        raise BackupError(N_("the settings file of this box has a layout the restore cannot rewrite"))
    return text


def _toml_key(key: str) -> str:
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else json.dumps(key)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value, ensure_ascii=False)      # a JSON string or number is TOML too
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise BackupError(N_("the settings file of this box has a layout the restore cannot rewrite"))


# -- companion backup / companion restore ------------------------------------------------
def backup_command(args) -> int:
    data_dir = Path(args.data) if args.data else default_data_dir()
    info = write_backup(data_dir, Path(args.file))
    print(_("Backup written: {file} ({games} games).", file=args.file, games=info.games))
    return 0


def restore_command(args) -> int:
    """Everything is checked before anything changes (exit 1 and one line
    otherwise); what the restore replaces is kept in ``replaced-<stamp>/``
    until the companion's next start has opened the restored store."""
    data_dir = Path(args.data) if args.data else default_data_dir()
    info = restore_backup(Path(args.file), data_dir)
    print(_("Restored {games} games from the backup of {created_at}.", games=info.games,
            created_at=info.created_at))
    return 0
