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
* **Never in the way**: one worker thread does every request.  The session
  only wakes it (an Event, from the subscriber callback: no I/O under the
  session lock, nothing on the render thread).  Failures back off
  exponentially with jitter, 1 s to 5 min.
* **Live table**: the latest public state is sent (``PUT /api/box/state``)
  after each change, the newest only.
* **Status** (:meth:`Feeder.status`, the box's ``GET /api/hub``): reachable
  (and since when not), games and lines behind, the last refusal, and any
  tournament seating the hub offers this box.  The box's screen and its
  phones read only what the worker last stored here: never a request of
  their own.
* **The tournament offer**: the hub's assignment stays ``offer`` until a
  game of it (that game, exactly those players in that order) is started at
  this table, from the box's buttons or a phone; then it is not offered
  again for that (tournament, round, table), even while the hub has not yet
  had the result.
"""

from __future__ import annotations

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
    done  INTEGER NOT NULL DEFAULT 0  -- 1: finished and all sent; 2: refused by the hub
)
"""
BATCH = 2000            # lines per request (a whole game is usually one request)
MIN_BACKOFF, MAX_BACKOFF = 1.0, 300.0


class HubRefused(Exception):
    pass


class Feeder:
    def __init__(self, db_path, url: str, key: str, session=None, *, timeout: float = 10.0,
                 min_backoff: float = MIN_BACKOFF, max_backoff: float = MAX_BACKOFF, rescan: float = 30.0):
        self.url = url.rstrip("/")
        self.key = key
        self.session = session
        self.timeout = timeout
        self.min_backoff, self.max_backoff, self.rescan = min_backoff, max_backoff, rescan
        self.db = sqlite3.connect(Path(db_path), isolation_level=None, check_same_thread=False, timeout=10)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(OUTBOX)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._state_dirty = session is not None
        self._thread: threading.Thread | None = None
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

    def sync_once(self) -> None:
        """Send the live state and every pending game once (raises on failure)."""
        pending = self._pending()
        self._set_behind({game: len(lines) - sent for game, sent, lines, _ in pending if len(lines) > sent})
        if self._state_dirty and self.session is not None:
            self._state_dirty = False
            try:
                version, state = self.session.snapshot()
                self._request("PUT", "/api/box/state", {"game": self.session.game_id, "state": state})
            except Exception:
                self._state_dirty = True
                raise
        behind = {}
        for game, sent, lines, finished in pending:
            sent = self._send_game(game, sent, lines, finished)
            if sent < len(lines):
                behind[game] = len(lines) - sent
        if not pending:
            self._note_assignment(self._request("GET", "/api/box/assignment", None))
        self._set_behind(behind)
        with self._lock:
            self.last_error = None

    def _set_behind(self, behind: dict) -> None:
        with self._lock:
            self.behind_games, self.behind_lines = len(behind), sum(behind.values())

    def _pending(self) -> list:
        """``[(game, sent, public lines, finished)]`` of games not yet done, oldest first."""
        rows = self.db.execute(
            "SELECT g.id, g.finished, COALESCE(o.sent, 0) FROM games g LEFT JOIN hub_outbox o ON o.game = g.id "
            "WHERE COALESCE(o.done, 0) = 0 ORDER BY g.id").fetchall()
        out = []
        for game, finished, sent in rows:
            count = self.db.execute("SELECT count(*) FROM actions WHERE game_id = ?", (game,)).fetchone()[0]
            if count <= sent and not finished:
                continue        # nothing new in an unfinished game: no need to fold it again
            stored = [r[0] for r in self.db.execute("SELECT line FROM actions WHERE game_id = ? ORDER BY seq", (game,))]
            out.append((game, sent, public_prefix(stored), bool(finished)))
        return out

    def _send_game(self, game: int, sent: int, lines: list[str], finished: bool) -> int:
        while sent < len(lines):
            chunk = [json.loads(line) for line in lines[sent:sent + BATCH]]
            last = sent + len(chunk) == len(lines)
            try:
                answer = self._request("POST", f"/api/box/games/{game}/lines",
                                       {"from": sent, "lines": chunk, "finished": finished and last})
            except HubRefused as exc:
                status, body = exc.args[1], exc.args[2]
                if status == 409 and isinstance(body.get("have"), int):
                    sent = min(body["have"], len(lines))      # the hub has more or fewer: go on from there
                    self._save(game, sent, 0)
                    if body["have"] > len(lines):
                        break
                    continue
                if status in (413, 422):                      # the hub will never take this game
                    log.error("hub refused game %s: %s", game, body.get("error"))
                    self._save(game, sent, 2)
                    with self._lock:
                        self.refused.append(game)
                    return len(lines)
                raise
            sent = int(answer.get("have", sent + len(chunk)))
            self._note_assignment(answer)
            self._save(game, sent, 0)
        if finished and sent >= len(lines):
            self._save(game, sent, 1)
        return sent

    def _save(self, game: int, sent: int, done: int) -> None:
        self.db.execute("INSERT INTO hub_outbox (game, sent, done) VALUES (?, ?, ?) "
                        "ON CONFLICT (game) DO UPDATE SET sent = excluded.sent, done = excluded.done",
                        (game, sent, done))

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

    def _request(self, method: str, path: str, body):
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.key}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
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
