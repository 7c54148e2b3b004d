"""The hub's Flask app: the boxes' API, the league, live tables, tournaments.

Every refusal is JSON ``{"error": ...}`` with a 4xx status (a database that
is away answers 503, so a box backs off and sends again); pages are plain
HTML with a little script, readable on a phone and on a big screen.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from datetime import datetime, timezone

import psycopg
from flask import Flask, Response, abort, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from companion import games as core_games
from companion.i18n import LANGUAGES, gettext, normalise

from . import ingest, league, tournament
from .db import HubError, Pool, box_for_key, connect, migrate, store_backup

log = logging.getLogger("companion.hub")

MAX_BODY = 4 * 1024 * 1024
PAGE_ROWS = 500     # a league page's rows (the API's JSON holds every player)
MAX_DEPTH = 32      # JSON nesting: a game's line is 3 deep, a public state a few more
KEY_TTL = 5.0       # seconds a box key stays cached for the live path (a revoked key: refused after that)
KEPT = 256          # changes kept for the screens' streams


class Tables:
    """The live tables, pushed to the big screens (server-sent events).

    A box's ``PUT /api/box/state`` is stored, then :meth:`publish` hands the
    one changed table to every open stream; a stream sends only that table,
    so a change costs one small event per screen, never a database read."""

    def __init__(self, limit: int = 64):
        self._cond = threading.Condition()
        self._events: list = []        # (version, payload), the last KEPT
        self._latest: dict = {}        # box -> its newest payload (for a stream that fell behind)
        self.version = 0
        self.closed = False
        self._slots = threading.BoundedSemaphore(limit)

    def publish(self, payload: dict) -> None:
        with self._cond:
            self.version += 1
            self._events.append((self.version, payload))
            del self._events[:-KEPT]
            self._latest[payload.get("box")] = payload
            self._cond.notify_all()

    def latest(self) -> list:
        with self._cond:
            return list(self._latest.values())

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def stream(self, first: list):
        """A generator of SSE bytes: every table now, then each change."""
        if not self._slots.acquire(blocking=False):
            return None

        def run():
            try:
                with self._cond:
                    seen = self.version
                yield _sse("tables", {"tables": first})
                while True:
                    with self._cond:
                        self._cond.wait_for(lambda: self.closed or self.version > seen, timeout=15)
                        if self.closed:
                            return
                        if self._events and self._events[0][0] > seen + 1:
                            # This screen fell more than KEPT changes behind (a
                            # stalled connection): send each table's newest state.
                            fresh = list(self._latest.values())
                        else:
                            fresh = [p for v, p in self._events if v > seen]
                            # a box that changed twice since: its newest state only
                            fresh = list({p.get("box"): p for p in fresh}.values())
                        seen = self.version
                    if not fresh:
                        yield b": keep-alive\n\n"
                    for payload in fresh:
                        yield _sse("table", payload)
            finally:
                self._slots.release()
        return run()


def bad_text(text: str) -> str | None:
    """What makes ``text`` unfit for the database (PostgreSQL text holds no
    NUL; UTF-8 holds no lone surrogate), or None."""
    if "\x00" in text:
        return "a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not valid Unicode)"
    return None


def parse_body(raw: bytes):
    """A request's JSON body, or ApiRefusal 400 with the reason: not JSON,
    nested deeper than :data:`MAX_DEPTH`, or a string with a NUL or a lone
    surrogate (checked without recursion; the parser's own recursion limit
    is a refusal too)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiRefusal(400, "the body must be JSON in UTF-8") from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise ApiRefusal(400, "the body must be JSON") from None
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ApiRefusal(400, f"the body is nested more than {MAX_DEPTH} deep")
            if isinstance(item, dict):
                stack.extend((k, depth) for k in item.keys())
                item = item.values()
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            problem = bad_text(item)
            if problem:
                raise ApiRefusal(400, f"the body holds {problem}")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2 ** 63:
            raise ApiRefusal(400, "the body holds a number out of range")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ApiRefusal(400, "the body holds a number out of range")
    return data


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


class KeyCache:
    """Box keys for the live path, looked up on its own pool and kept
    :data:`KEY_TTL` seconds (a refused key too, so a bad client costs one
    query per key and period)."""

    def __init__(self, pool: Pool):
        self._pool = pool
        self._lock = threading.Lock()
        self._known: dict = {}

    def box(self, key: str):
        if not key or len(key) > 200:
            return None
        now = time.monotonic()
        with self._lock:
            hit = self._known.get(key)
        if hit and hit[0] > now:
            return hit[1]
        with self._pool.connection() as conn:
            box = box_for_key(conn, key)
        with self._lock:
            if len(self._known) > 10_000:
                self._known.clear()
            self._known[key] = (now + KEY_TTL, box)
        return box


class StateWriter:
    """Stores the boxes' live tables after the screens were told: one thread,
    the newest state per box only (a box that sent ten while the database was
    slow is written once), on the live path's own pool."""

    def __init__(self, pool: Pool):
        self._pool = pool
        self._cond = threading.Condition()
        self._pending: dict = {}
        self._writing = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hub-live-writer", daemon=True)
        self._thread.start()

    def put(self, box_id: int, state: dict, game, at) -> None:
        with self._cond:
            self._pending[box_id] = (json.dumps(state), game, at)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if not self._pending and self._closed:
                    return
                batch, self._pending = self._pending, {}
                self._writing = True
            try:
                with self._pool.connection() as conn, conn.cursor() as cur:
                    cur.executemany("UPDATE boxes SET state = %s, state_game = %s, state_updated = %s WHERE id = %s",
                                    [(state, game, at, box) for box, (state, game, at) in batch.items()])
            except psycopg.DataError as exc:       # never storable: dropped (the screens had it)
                log.warning("a live table not stored: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
            except psycopg.Error as exc:
                log.warning("live tables not stored: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
                with self._cond:           # keep them (unless newer came), try again shortly
                    for box, value in batch.items():
                        self._pending.setdefault(box, value)
                time.sleep(1.0)
            finally:
                with self._cond:
                    self._writing = False

    def flush(self, timeout: float = 5.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._cond:
                if not self._pending and not self._writing:
                    return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        self.flush(2.0)
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(3.0)


class Seatings:
    """Wakes the boxes' long polls when a tournament round is seated.

    ``tournament seat`` runs in the organiser's shell, another process: it
    ends its transaction with ``NOTIFY companion_seating``, and one thread
    here LISTENs on a connection of its own (reopened if it breaks).  A
    waiting box looks at its assignment again at each notice, and every
    :data:`RECHECK` seconds in case a notice was lost while reconnecting."""

    RECHECK = 5.0

    def __init__(self, url: str, waiters: int = 128):
        self.url = url
        self._cond = threading.Condition()
        self.version = 0
        self.closed = False
        self.slots = threading.BoundedSemaphore(waiters)
        self._thread = threading.Thread(target=self._listen, name="hub-seatings", daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        failures = 0
        while not self.closed:
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                    conn.execute("LISTEN companion_seating")
                    failures = 0
                    self.ring()                 # anything seated while we were away
                    while not self.closed:
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            self.ring()
            except psycopg.Error as exc:
                if self.closed:
                    return
                failures += 1
                log.warning("seating notices: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
                time.sleep(min(30.0, 0.5 * 2 ** min(failures, 6)))

    def ring(self) -> None:
        with self._cond:
            self.version += 1
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Wait until a notice after ``seen`` (or ``timeout``); return the version."""
        with self._cond:
            self._cond.wait_for(lambda: self.closed or self.version > seen, timeout=timeout)
            return self.version

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


def _sse(event: str, data) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def create_app(url: str, *, pool_size: int = 8, streams: int = 64, waiters: int = 128) -> Flask:
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    with connect(url) as conn:
        migrate(conn)
    pool = Pool(url, pool_size)
    live_pool = Pool(url, 4)       # the live tables' and offers' own: never waits behind the boxes' catch-up
    tables = Tables(streams)
    keys = KeyCache(live_pool)
    writer = StateWriter(live_pool)
    seatings = Seatings(url, waiters)
    app.extensions["hub"] = {"pool": pool, "tables": tables, "seatings": seatings, "live_pool": live_pool,
                             "writer": writer}

    def db():
        return pool.connection()

    def box_auth(conn) -> dict:
        header = request.headers.get("Authorization", "")
        key = header[7:].strip() if header.lower().startswith("bearer ") else ""
        box = box_for_key(conn, key) if key else None
        if box is None:
            raise ApiRefusal(401, "unknown or revoked box key (Authorization: Bearer <key>)")
        return box

    def body():
        return parse_body(request.get_data(cache=False))

    def dates():
        try:
            return league.day_range(request.args.get("from") or None, request.args.get("to") or None)
        except ValueError:
            raise ApiRefusal(400, "dates are YYYY-MM-DD, years 1900 to 9998") from None

    @app.before_request
    def clean_request():
        for text in (request.path, *request.args.keys(), *request.args.values()):
            problem = bad_text(text)
            if problem:
                raise ApiRefusal(400, f"the address holds {problem}")

    # -- the pages' language: ?lang=, then the cookie it sets, then the browser's ----
    def language() -> str:
        wanted = request.args.get("lang") or request.cookies.get("lang")
        if wanted and normalise(wanted) in LANGUAGES and wanted[:2].lower() in LANGUAGES:
            return normalise(wanted)
        return normalise(request.accept_languages.best_match(LANGUAGES))

    @app.context_processor
    def texts():
        lang = language()
        return {"lang": lang, "_": lambda message, **params: gettext(message, lang, **params)}

    @app.after_request
    def remember_language(response):
        wanted = request.args.get("lang", "")
        if wanted[:2].lower() in LANGUAGES:
            response.set_cookie("lang", wanted[:2].lower(), max_age=400 * 24 * 3600, samesite="Lax")
        if response.mimetype == "text/html":
            response.headers["Content-Language"] = language()
        return response

    def titles() -> dict:
        lang = language()
        return {gid: gettext(core_games.get(gid).title, lang) for gid in core_games.available()}

    # -- the boxes ---------------------------------------------------------------
    @app.post("/api/box/games/<int:box_game>/lines")
    def box_lines(box_game):
        if box_game >= 2 ** 63:
            raise ApiRefusal(400, "a game number is below 2^63")
        with db() as conn:
            box = box_auth(conn)
            data = body()
            for attempt in range(5):
                try:
                    out = ingest.post_lines(conn, box, box_game, data)
                    break
                except ingest.Refusal as exc:
                    return jsonify(exc.payload), exc.status
                except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
                    log.info("box %s game %s: %s; trying again", box["name"], box_game, type(exc).__name__)
                    if attempt == 4:    # the transaction was rolled back: the box sends again later
                        raise ApiRefusal(503, "the hub is busy; send again shortly")
            out["assignment"] = tournament.assignment(conn, box["id"])
        return jsonify(out)

    @app.put("/api/box/state")
    def box_state():
        """The live path: the key from a short-lived cache (its own
        connections on a miss), the screens told at once, the row written
        by :class:`StateWriter` afterwards (the newest state per box only).
        Nothing here waits for the boxes' catch-up posts or their pool."""
        header = request.headers.get("Authorization", "")
        box = keys.box(header[7:].strip() if header.lower().startswith("bearer ") else "")
        if box is None:
            raise ApiRefusal(401, "unknown or revoked box key (Authorization: Bearer <key>)")
        data = body()
        if not isinstance(data, dict) or not isinstance(data.get("state"), dict):
            raise ApiRefusal(400, "the body must be {\"game\": id or null, \"state\": {...}}")
        game = data.get("game")
        game = game if isinstance(game, int) and not isinstance(game, bool) and abs(game) < 2 ** 31 else None
        now = datetime.now(timezone.utc)
        tables.publish({"box": box["name"], "state": data["state"], "updated": now.isoformat()})
        writer.put(box["id"], data["state"], game, now)
        return jsonify({})

    @app.put("/api/box/backup")
    def box_backup():
        """The box's latest backup file (appliance/backup.py, sent by
        hub/feeder.py): checked whole as a restore would, then kept, one per
        box (``companion hub backup BOX FILE`` gives it back)."""
        from appliance.backup import MAX_BACKUP_BYTES, BackupError, check_bytes

        request.max_content_length = MAX_BACKUP_BYTES
        with db() as conn:
            box = box_auth(conn)
            data = request.get_data(cache=False)
            try:
                info, _content = check_bytes(data)
            except BackupError as exc:
                raise ApiRefusal(422, str(exc)) from None
            digest = store_backup(conn, box["id"], data, info.games, info.created_at)
        return jsonify({"stored": True, "games": info.games, "sha256": digest})

    @app.get("/api/box/assignment")
    def box_assignment():
        """The box's assignment; with ``?wait=S&known=K`` a long poll: the
        answer comes as soon as the assignment is no longer the one named
        ``K`` (``tournament/round/table``, or ``none``), or after S seconds
        (at most 30).  No database connection is held while waiting."""
        try:
            wait = float(request.args.get("wait", 0))
        except ValueError:
            wait = math.nan
        if not math.isfinite(wait):
            raise ApiRefusal(400, "'wait' is a number of seconds")
        wait = min(30.0, max(0.0, wait))
        known = request.args.get("known", "")
        seen = seatings.version          # before the look: a seating from now on wakes us
        # The live pool: an offer does not wait behind the boxes' catch-up either.
        with live_pool.connection() as conn:
            box = box_auth(conn)
            current = tournament.assignment(conn, box["id"])
        if wait <= 0 or _offer_name(current) != known or not seatings.slots.acquire(blocking=False):
            return jsonify({"assignment": current})
        try:
            end = time.monotonic() + wait
            while not seatings.closed:
                left = end - time.monotonic()
                if left <= 0:
                    break
                seen = seatings.wait(seen, min(left, Seatings.RECHECK))
                with live_pool.connection() as conn:
                    current = tournament.assignment(conn, box["id"])
                if _offer_name(current) != known:
                    break
        finally:
            seatings.slots.release()
        return jsonify({"assignment": current})

    # -- league --------------------------------------------------------------------
    @app.get("/api/league")
    def api_league():
        game = request.args.get("game", "")
        if game not in core_games.MODULES:
            raise ApiRefusal(400, f"unknown game {game!r} (one of {', '.join(core_games.MODULES)})")
        start, end = dates()
        with db() as conn:
            players = league.standings_json(conn, game, start, end)
        return Response('{"game": %s, "players": %s}' % (json.dumps(game), players), mimetype="application/json")

    @app.get("/api/players/<path:name>")
    def api_player(name):
        start, end = dates()
        with db() as conn:
            page = league.player_page(conn, name, start, end)
        if page is None:
            raise ApiRefusal(404, f"no player named {name!r}")
        return jsonify(page)

    # -- live tables ---------------------------------------------------------------
    def all_tables(conn) -> list:
        rows = conn.execute("SELECT name, state, state_updated FROM boxes WHERE NOT revoked ORDER BY name").fetchall()
        latest = {p["box"]: p for p in tables.latest()}      # newer than the rows while the writer is behind
        out = []
        for r in rows:
            stored = None if r["state"] is None else {"box": r["name"], "state": r["state"],
                                                      "updated": r["state_updated"].isoformat()}
            fresh = latest.get(r["name"])
            if fresh and (stored is None or fresh["updated"] > stored["updated"]):
                stored = fresh
            if stored:
                out.append(stored)
        return out

    @app.get("/api/tables")
    def api_tables():
        with live_pool.connection() as conn:
            return jsonify({"tables": all_tables(conn)})

    @app.get("/api/tables/events")
    def api_table_events():
        with live_pool.connection() as conn:
            first = all_tables(conn)
        stream = tables.stream(first)
        if stream is None:
            raise ApiRefusal(503, "too many open screens")
        return Response(stream, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    # -- tournaments --------------------------------------------------------------
    @app.get("/api/tournaments/<int:tid>")
    def api_tournament(tid):
        with db() as conn:
            return jsonify(tournament.view(conn, tid))

    # -- pages -----------------------------------------------------------------------
    @app.get("/")
    def page_index():
        with db() as conn:
            counts = conn.execute("SELECT game, count(*) AS n FROM games WHERE finish_seq IS NOT NULL "
                                  "GROUP BY game ORDER BY game").fetchall()
            tours = conn.execute("SELECT id, name, game, round FROM tournaments ORDER BY id DESC").fetchall()
        return render_template("index.html", counts=counts, tournaments=tours, titles=titles())

    @app.get("/league/<game>")
    def page_league(game):
        if game not in core_games.MODULES:
            abort(404)
        start, end = dates()
        with db() as conn:      # the page shows the first PAGE_ROWS (the API has them all)
            players = league.standings(conn, game, start, end, limit=PAGE_ROWS + 1)
        return render_template("league.html", game=game, title=titles().get(game, game),
                               players=players[:PAGE_ROWS], more=len(players) > PAGE_ROWS,
                               start=request.args.get("from", ""), end=request.args.get("to", ""))

    @app.get("/players/<path:name>")
    def page_player(name):
        start, end = dates()
        with db() as conn:
            page = league.player_page(conn, name, start, end)
        if page is None:
            abort(404)
        return render_template("player.html", p=page, titles=titles(),
                               start=request.args.get("from", ""), end=request.args.get("to", ""))

    @app.get("/tables")
    def page_tables():
        try:     # ?page_seconds=N: how long a page stays up when the tables need several (the tests' 1)
            seconds = min(600, max(1, int(request.args.get("page_seconds", 12))))
        except ValueError:
            seconds = 12
        return render_template("tables.html", titles=titles(), page_seconds=seconds)

    @app.get("/favicon.ico")
    def favicon():
        return app.send_static_file("favicon.svg")

    @app.get("/tournaments/<int:tid>")
    def page_tournament(tid):
        with db() as conn:
            t = tournament.view(conn, tid)
        return render_template("tournament.html", t=t, title=titles().get(t["game"], t["game"]))

    # -- errors: JSON for the API, a short page otherwise, never a traceback ---------
    @app.errorhandler(ApiRefusal)
    def on_refusal(exc):
        return jsonify({"error": exc.message}), exc.status

    @app.errorhandler(HubError)
    def on_hub_error(exc):
        return _error(404, str(exc))

    @app.errorhandler(psycopg.DataError)
    def on_bad_value(exc):
        log.warning("a value the database refused: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
        return _error(400, "a value the hub cannot store (out of range or malformed)")

    @app.errorhandler(psycopg.OperationalError)
    def on_db_down(exc):
        log.warning("database unavailable: %s", exc)
        return _error(503, "the hub's database is not reachable; try again shortly")

    @app.errorhandler(HTTPException)
    def on_http(exc):
        return _error(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(Exception)
    def on_crash(exc):
        log.exception("unexpected error")
        return _error(503, "the hub could not do that; try again shortly")

    return app


def _offer_name(assignment) -> str:
    """``tournament/round/table`` of an assignment, ``none`` without one (the long poll's ``known``)."""
    if not assignment:
        return "none"
    return f"{assignment['tournament']}/{assignment['round']}/{assignment['table']}"


def _error(status: int, text: str):
    if request.path.startswith("/api/"):
        return jsonify({"error": text}), status
    return Response(f"<!doctype html><meta charset=utf-8><title>{status}</title><p>{_escape(text)}</p>",
                    status=status, mimetype="text/html")


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


class ApiRefusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def close(app: Flask) -> None:
    hub = app.extensions["hub"]
    for part in ("tables", "seatings", "writer", "pool", "live_pool"):
        if part in hub:          # (a bare app of the bench has only some)
            hub[part].close()
