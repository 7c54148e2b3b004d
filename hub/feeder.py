"""The box's side of the hub: send every stored game, offline first.

Standard library only (urllib, sqlite3, threading): a box needs no database
client to join a hub.

* **What is sent**: each game's public log as far as it may leave the box now
  (:func:`companion.exports.public_prefix`): never a secret entry before its
  reveal, never one taken back before it was revealed.  Lines keep their
  numbers, so the hub can skip what it already has.
* **Durable queue**: the store itself is the queue.  ``hub_outbox(game, sent,
  done)`` in the box's own SQLite file (beside the store's tables) records how
  many lines the hub has acknowledged per game; whatever the store holds
  beyond that is still to send, after a restart, a power cut or a whole
  evening without Wi-Fi.  Games go in order of their number (oldest first).
* **A finished game is still watched**: a result taken back at the table
  (an undo after the finish, the bids played again) changes the stored
  game's ``updated``; the outbox remembers the one it last sent in full
  (``seen``) and a digest of the lines the hub has, so the change is sent
  (new lines; or, should the log no longer extend what the hub has, the
  whole log with ``replace``) and the hub re-rates the game.
* **Never in the way**: one worker thread does every request.  The session
  only wakes it (an Event, from the subscriber callback: no I/O under the
  session lock, nothing on the render thread).  Failures back off
  exponentially with jitter, 1 s to 5 min.
* **The box's backup**: after the games, the box's latest backup file
  (:mod:`appliance.backup`: public prefixes only, no PIN, no hub key) is
  sent (``PUT /api/box/backup``) when the store or the settings changed
  since the last one the hub took, at most once every ``backup_every``
  seconds (10 min); a hub without the route (an older one) is left alone.
* **Live table**: the latest public state is sent (``PUT /api/box/state``)
  after each change, the newest only.
* **Status** (:meth:`Feeder.status`, the box's ``GET /api/hub``): reachable
  (and since when not), games and lines behind, the last refusal, and any
  tournament seating the hub offers this box.  The box's screen and its
  phones read only what the worker last stored here: never a request of
  their own.
* **Offers at once**: a second thread listens to the hub (a long poll,
  ``GET /api/box/assignment?wait=25&known=…``, answered the moment the
  hub seats this table), whatever the worker still has to send.  The
  answers to the worker's posts carry the assignment too.
* **The tournament offer**: the hub's assignment stays ``offer`` until a
  game of it (that game, exactly those players in that order) is started at
  this table, from the box's buttons or a phone; then it is not offered
  again for that (tournament, round, table), even while the hub has not yet
  had the result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from companion.exports import public_prefix

log = logging.getLogger("companion.hub.feeder")

OUTBOX = """
CREATE TABLE IF NOT EXISTS hub_outbox (
    game  INTEGER PRIMARY KEY,        -- the store's game id
    sent  INTEGER NOT NULL DEFAULT 0, -- public lines the hub acknowledged
    done  INTEGER NOT NULL DEFAULT 0, -- 1: finished and all sent; 2: refused by the hub
    seen  REAL,                       -- done: the store's games.updated when it was all sent
    digest TEXT                       -- SHA-256 of the lines the hub has (a changed log is sent whole)
)
"""
BATCH = 2000            # lines per request (a whole game is usually one request)
LISTEN_S = 25.0         # the long poll's wait (under the hub's 30 s cap and common proxy timeouts)
MIN_BACKOFF, MAX_BACKOFF = 1.0, 300.0
BACKUP_EVERY = 600.0    # seconds between two backups sent (a busy evening: one every 10 min, not per action)


class HubRefused(Exception):
    pass


class Feeder:
    def __init__(self, db_path, url: str, key: str, session=None, *, timeout: float = 10.0,
                 min_backoff: float = MIN_BACKOFF, max_backoff: float = MAX_BACKOFF, rescan: float = 30.0,
                 backup_every: float | None = BACKUP_EVERY):
        self.url = url.rstrip("/")
        self.key = key
        self.session = session
        self.timeout = timeout
        self.min_backoff, self.max_backoff, self.rescan = min_backoff, max_backoff, rescan
        self.data_dir = Path(db_path).parent
        self.backup_every = backup_every            # None: no backups sent
        self._next_backup = 0.0                     # time.monotonic() of the next look
        self._backup_sent: tuple | None = None      # the fingerprint of the store the hub has
        self.db = sqlite3.connect(Path(db_path), isolation_level=None, check_same_thread=False, timeout=10)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(OUTBOX)
        columns = {r[1] for r in self.db.execute("PRAGMA table_info(hub_outbox)")}
        for column, kind in (("seen", "REAL"), ("digest", "TEXT")):      # an outbox of an older feeder
            if column not in columns:
                self.db.execute(f"ALTER TABLE hub_outbox ADD COLUMN {column} {kind}")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._state_dirty = session is not None
        self._thread: threading.Thread | None = None
        self._listener: threading.Thread | None = None
        self._unsubscribe = None
        self._lock = threading.Lock()        # guards the status fields below
        self.reachable: bool | None = None
        self.behind_games = 0
        self.behind_lines = 0
        self.last_error: str | None = None
        self.last_contact: float | None = None
        self.down_since: float | None = None     # the first failure since the last answer
        self.assignment = None
        self.started: set[tuple] = set()          # assignments played here: (tournament, round, table)
        self.refused: list[int] = []

    # -- the box's side ---------------------------------------------------------------
    def start(self) -> "Feeder":
        if self.session is not None:
            self._unsubscribe = self.session.subscribe(self._on_change)
        self._thread = threading.Thread(target=self._run, name="hub-feeder", daemon=True)
        self._thread.start()
        self._listener = threading.Thread(target=self._listen, name="hub-offers", daemon=True)
        self._listener.start()
        return self

    def _on_change(self, change) -> None:
        # Runs under the session lock: only flag and wake, never any I/O here.
        if getattr(change, "kind", None) == "new_game":
            with self._lock:
                if self.assignment and _plays(self.assignment, change.state):
                    self.started.add(offer_key(self.assignment))
        self._state_dirty = True
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self._unsubscribe:
            self._unsubscribe()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._listener is not None:
            self._listener.join(min(timeout, 1.0))     # a long poll under way ends with its timeout
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def status(self) -> dict:
        with self._lock:
            offer = self.assignment if self.assignment and offer_key(self.assignment) not in self.started else None
            return {"url": self.url, "reachable": self.reachable, "behind": {"games": self.behind_games,
                    "lines": self.behind_lines}, "last_contact": self.last_contact, "error": self.last_error,
                    "down_since": self.down_since if self.reachable is False else None,
                    "refused": list(self.refused), "assignment": self.assignment, "offer": offer}

    # -- the worker --------------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.sync_once()
                failures = 0
                wait = self.rescan
            except Exception as exc:        # network down, hub away, a bad key: try later
                failures += 1
                wait = min(self.max_backoff, self.min_backoff * 2 ** (failures - 1))
                wait = random.uniform(wait / 2, wait)       # jitter: fifty boxes do not come back at once
                with self._lock:
                    if not isinstance(exc, HubRefused):
                        if self.reachable is not False:
                            self.down_since = time.time()
                        self.reachable = False
                    self.last_error = str(exc)[:200]
                log.info("hub: %s; next try in %.1f s", exc, wait)
                # after a failure only the timer wakes us: a busy table must not hammer a hub that is away
                self._stop.wait(wait)
                continue
            self._wake.wait(wait)

    def _listen(self) -> None:
        """The offers' thread: a long poll after another; backs off like the worker."""
        failures = 0
        while not self._stop.is_set():
            with self._lock:
                known = _offer_name(self.assignment)
            try:
                asked = time.monotonic()
                answer = self._request("GET", f"/api/box/assignment?wait={LISTEN_S:g}&known={known}", None,
                                       timeout=LISTEN_S + self.timeout)
                self._note_assignment(answer)
                failures = 0
                fresh = answer.get("assignment") if isinstance(answer, dict) else None
                if time.monotonic() - asked < 1.0 and _offer_name(fresh) == known:
                    # An answer at once with nothing new: a hub that does not
                    # hold long polls (an older one, or its waiters all taken).
                    self._stop.wait(5.0)
            except Exception as exc:        # the worker reports the hub's state; here only wait
                failures += 1
                wait = min(self.max_backoff, self.min_backoff * 2 ** (failures - 1))
                log.debug("hub offers: %s", exc)
                self._stop.wait(random.uniform(wait / 2, wait))

    def sync_once(self) -> None:
        """Send the live state and every pending game once (raises on failure)."""
        pending = self._pending()
        self._set_behind({p[0]: len(p[2]) - p[1] for p in pending if len(p[2]) > p[1] or p[4]})
        if self._state_dirty and self.session is not None:
            self._state_dirty = False
            try:
                version, state = self.session.snapshot()
                self._request("PUT", "/api/box/state", {"game": self.session.game_id, "state": state})
            except Exception:
                self._state_dirty = True
                raise
        behind = {}
        for game, sent, lines, finished, replace, updated in pending:
            sent = self._send_game(game, sent, lines, finished, replace, updated)
            if sent < len(lines):
                behind[game] = len(lines) - sent
        self._set_behind(behind)
        self._send_backup()
        with self._lock:
            self.last_error = None

    def _send_backup(self) -> None:
        """The box's backup, when it changed since the hub took the last
        one and ``backup_every`` has passed.  A refusal is logged, never
        retried before the next period; a network failure raises (the worker
        backs off as for the games)."""
        if self.backup_every is None or time.monotonic() < self._next_backup:
            return
        from appliance.backup import BackupError, backup_bytes

        fingerprint = self._fingerprint()
        if fingerprint == self._backup_sent:
            return
        self._next_backup = time.monotonic() + self.backup_every
        try:
            data, info = backup_bytes(self.data_dir)
        except BackupError as exc:
            log.warning("hub: no backup sent: %s", exc)
            return
        try:
            self._request("PUT", "/api/box/backup", data, content_type="application/zip")
        except HubRefused as exc:
            log.warning("hub: the backup was refused: %s", exc)
            return
        except OSError as exc:
            if "answered 404" in str(exc) or "answered 405" in str(exc):
                log.info("hub: this hub keeps no backups")
                self.backup_every = None
                return
            self._next_backup = 0.0
            raise
        self._backup_sent = fingerprint
        log.info("hub: backup sent (%s games)", info.games)

    def _fingerprint(self) -> tuple:
        """What changes when the backup would: the games (their count, the
        newest change), the roster's names, the settings and Wi-Fi files."""
        games = self.db.execute("SELECT COUNT(*), MAX(updated), SUM(updated) FROM games").fetchone()
        roster = self.db.execute("SELECT group_concat(id || ':' || name, '|') FROM roster").fetchone()
        files = []
        for name in ("companion.toml", "wifi-password"):
            try:
                stat = (self.data_dir / name).stat()
                files.append((stat.st_mtime_ns, stat.st_size))
            except OSError:
                files.append(None)
        return (tuple(games), hashlib.sha256(str(roster[0]).encode()).hexdigest(), tuple(files))

    def _set_behind(self, behind: dict) -> None:
        with self._lock:
            self.behind_games, self.behind_lines = len(behind), sum(behind.values())

    def _pending(self) -> list:
        """``[(game, sent, public lines, finished, replace, updated)]`` of the
        games with something to send, oldest first: games not yet done, and
        done games changed since (an undo after the finish, a bid played
        again: the store's ``updated`` moved past the one last sent)."""
        rows = self.db.execute(
            "SELECT g.id, g.finished, g.updated, COALESCE(o.sent, 0), COALESCE(o.done, 0), o.digest "
            "FROM games g LEFT JOIN hub_outbox o ON o.game = g.id "
            "WHERE COALESCE(o.done, 0) = 0 OR (o.done = 1 AND (o.seen IS NULL OR g.updated > o.seen)) "
            "ORDER BY g.id").fetchall()
        out = []
        for game, finished, updated, sent, done, digest in rows:
            if done == 0 and not finished:
                count = self.db.execute("SELECT count(*) FROM actions WHERE game_id = ?", (game,)).fetchone()[0]
                if count <= sent:
                    continue    # nothing new in an unfinished game: no need to fold it again
            stored = [r[0] for r in self.db.execute("SELECT line FROM actions WHERE game_id = ? ORDER BY seq", (game,))]
            lines = public_prefix(stored)
            # What the hub holds is no longer a prefix of the public log: the
            # whole log goes again, replacing the hub's copy.
            replace = sent > len(lines) or (digest is not None and _digest(lines[:sent]) != digest)
            out.append((game, sent, lines, bool(finished), replace, updated))
        return out

    def _send_game(self, game: int, sent: int, lines: list[str], finished: bool, replace: bool = False,
                   updated=None) -> int:
        if replace and lines:
            sent = self._replace(game, lines)
            if sent is None:
                return len(lines)
        while sent < len(lines):
            chunk = [json.loads(line) for line in lines[sent:sent + BATCH]]
            last = sent + len(chunk) == len(lines)
            try:
                answer = self._request("POST", f"/api/box/games/{game}/lines",
                                       {"from": sent, "lines": chunk, "finished": finished and last})
            except HubRefused as exc:
                status, body = exc.args[1], exc.args[2]
                if status == 409 and (isinstance(body.get("differs"), int) or
                                      (isinstance(body.get("have"), int) and body["have"] > len(lines))):
                    sent = self._replace(game, lines)          # the hub's copy is not a prefix of ours
                    if sent is None:
                        return len(lines)
                    continue
                if status == 409 and isinstance(body.get("have"), int):
                    sent = min(body["have"], len(lines))      # the hub has fewer: go on from there
                    self._save(game, sent, 0, lines)
                    continue
                if status in (413, 422):                      # the hub will never take this game
                    self._refused(game, lines, body)
                    return len(lines)
                raise
            sent = int(answer.get("have", sent + len(chunk)))
            self._note_assignment(answer)
            self._save(game, sent, 0, lines)
        if finished and sent >= len(lines):
            self._save(game, sent, 1, lines, updated)
        elif not finished:
            self._save(game, sent, 0, lines)      # (a done game taken back: watched as unfinished again)
        return sent

    def _replace(self, game: int, lines: list[str]) -> int | None:
        """Send the whole public log with ``replace``; the lines the hub now has, or None if refused."""
        try:
            answer = self._request("POST", f"/api/box/games/{game}/lines",
                                   {"from": 0, "lines": [json.loads(line) for line in lines], "replace": True})
        except HubRefused as exc:
            if exc.args[1] in (409, 413, 422):
                self._refused(game, lines, exc.args[2])
                return None
            raise
        self._note_assignment(answer)
        sent = min(int(answer.get("have", len(lines))), len(lines))
        self._save(game, sent, 0, lines)
        return sent

    def _refused(self, game: int, lines: list[str], body: dict) -> None:
        log.error("hub refused game %s: %s", game, body.get("error"))
        self._save(game, len(lines), 2, lines)
        with self._lock:
            self.refused.append(game)

    def _save(self, game: int, sent: int, done: int, lines: list[str] | None = None, seen=None) -> None:
        digest = _digest(lines[:sent]) if lines is not None else None
        self.db.execute("INSERT INTO hub_outbox (game, sent, done, seen, digest) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (game) DO UPDATE SET sent = excluded.sent, done = excluded.done, "
                        "seen = excluded.seen, digest = excluded.digest",
                        (game, sent, done, seen, digest))

    def _note_assignment(self, answer) -> None:
        if not isinstance(answer, dict) or "assignment" not in answer:
            return
        assignment = answer["assignment"] if _valid_assignment(answer["assignment"]) else None
        current = None
        if assignment and self.session is not None and offer_key(assignment) not in self.started:
            # After a restart: the table may already be playing it (the box
            # resumed that game), so it is not offered again.
            current = self.session.public()
        with self._lock:
            self.assignment = assignment
            if current is not None and not current.get("finished") and _plays(assignment, current):
                self.started.add(offer_key(assignment))

    def _request(self, method: str, path: str, body, timeout: float | None = None,
                 content_type: str = "application/json"):
        if isinstance(body, bytes):
            data = body
        else:
            data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.key}",
                                              "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                answer = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                payload = json.loads(exc.read() or b"{}")
            except ValueError:
                payload = {}
            self._answered()
            if exc.code in (409, 413, 422) or exc.code == 401:
                raise HubRefused(f"hub said {exc.code}: {payload.get('error', '')}", exc.code, payload) from None
            raise OSError(f"hub answered {exc.code}") from None
        self._answered()
        return answer

    def _answered(self) -> None:
        with self._lock:
            self.reachable = True
            self.down_since = None
            self.last_contact = time.time()


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _offer_name(assignment) -> str:
    """The long poll's ``known``: ``tournament/round/table``, or ``none``."""
    if not assignment:
        return "none"
    return "/".join(str(v) for v in offer_key(assignment))


def offer_key(assignment: dict) -> tuple:
    """What names one tournament table: (tournament, round, table)."""
    return (assignment.get("tournament"), assignment.get("round"), assignment.get("table"))


def _valid_assignment(assignment) -> bool:
    """An assignment the box can offer: a game id and a list of names (a
    hub of another version may send something else: then nothing is offered)."""
    return (isinstance(assignment, dict) and isinstance(assignment.get("game"), str)
            and isinstance(assignment.get("players"), list)
            and all(isinstance(n, str) and n for n in assignment["players"]))


def _plays(assignment: dict, state: dict) -> bool:
    """Whether the public ``state`` is a game of ``assignment``: its game,
    exactly its players in its seat order."""
    return state.get("game") == assignment.get("game") and list(state.get("players") or []) == assignment.get("players")


def from_config(config: dict, store, session):
    """A started feeder when the box is joined to a hub (``hub_url`` and
    ``hub_key``, from companion.toml or COMPANION_HUB_URL/KEY), else None."""
    url, key = config.get("hub_url"), config.get("hub_key")
    if not url or not key:
        return None
    return Feeder(store.path, str(url), str(key), session).start()
