"""The web app of one table: :func:`create_app` and its per-app objects.

Nothing here is global: everything an app needs hangs off
``app.extensions["companion"]`` (a :class:`Companion`), so tests can build
as many apps as they like, side by side.
"""

from __future__ import annotations

import json
import logging
import threading

from flask import Flask, current_app, request
from jinja2 import BytecodeCache

from companion.i18n import N_, gettext

from . import errors
from appliance import owner

from .auth import OwnerGuard, PinGuard, SeatTokens
from .hosts import HostCheck
from .streams import Hub, StreamSlots, sse_event

log = logging.getLogger("companion.web")

MAX_BODY = 16 * 1024        # one action is a few hundred bytes
GUESSING = N_("Someone is guessing the table PIN ({n} wrong PINs). Menu \u25b8 New PIN draws another one.")


class CompiledTemplates(BytecodeCache):
    """The pages' templates compiled once per process, for every app made in
    it.  Jinja compiles a template per environment, and each app has its
    own: a process that makes many apps side by side (the tests make
    hundreds, two worlds at a time) would compile each page each time.
    A template whose source changed is compiled again (Jinja checks the
    source's checksum against the stored one)."""

    def __init__(self):
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


COMPILED = CompiledTemplates()


class Companion:
    """The table as the web app sees it: session, box, PIN, seats, streams."""

    def __init__(self, session, box, config: dict, pin: str):
        self.session, self.box, self.config, self.pin = session, box, config, str(pin)
        self.mock = bool(config.get("mock"))
        self.guard = PinGuard(self.pin, tries=int(config.get("pin_tries", 5)),
                              block_s=float(config.get("pin_block_s", 5.0)),
                              table_burst=int(config.get("pin_table_burst", 20)),
                              table_refill_s=float(config.get("pin_table_refill_s", 60.0)),
                              alarm_after=int(config.get("pin_alarm_after", 10)),
                              alarm=self._someone_is_guessing)
        self.owner_guard = OwnerGuard(self._owner_hash)
        self.seats = SeatTokens(session)
        self.hosts = HostCheck(config)
        self.slots = StreamSlots(int(config.get("max_streams") or 100))
        keepalive = float(config.get("keepalive_s", 15.0))
        self.events = Hub(self.slots, self._table_snapshot, lock=session.lock, keepalive=keepalive)
        # One frame stream, for the mock box's /dev page (``/dev/frames``):
        # every frame of the panel.  The public mirror (``/oled.png``) has no
        # event stream: no page of the phones shows it live, and a surface
        # nobody uses is one less to keep secret (issue 21, finding 7).
        self.dev_frames = Hub(self.slots, self._dev_frame_snapshot, keepalive=keepalive)
        self._last_seats: str | None = None
        self._last_notices = json.dumps(self.public_notices(), sort_keys=True)
        self._unsubscribe = [session.subscribe(self._on_change)]
        if box is not None and hasattr(box, "subscribe_pin"):
            self._unsubscribe.append(box.subscribe_pin(self.set_pin))
        if box is not None and hasattr(box, "subscribe_frames"):
            self._unsubscribe.append(box.subscribe_frames(self._on_dev_frame))

    # -- what is public ----------------------------------------------------
    def public_seats(self) -> dict:
        """Which seat is claimed, with its label (never its token)."""
        with self.session.lock:
            claims = self.session.table.claims
            return {"seats": [{"seat": seat, "player": name, "claimed": seat in claims,
                               "label": claims.get(seat)}
                              for seat, name in enumerate(self.session.players)]}

    def public_notices(self, language: str | None = None) -> dict:
        """The table's notices as texts in ``language`` (default: the box's)."""
        with self.session.lock:
            notices = list(self.session.table.notices)
        language = language or self.config.get("language")
        return {"notices": [gettext(template, language, **(params or {})) for template, params in notices]}

    def _owner_hash(self) -> str | None:
        """The owner's password hash the service keeps (appliance/owner.py)."""
        folder = self.config.get("data_dir")
        return owner.read_hash(folder) if folder else None

    def set_pin(self, pin: str) -> None:
        """A new table PIN (drawn on the box's menu): the old one stops
        working at once; seat tokens go on working."""
        self.pin = str(pin)
        self.guard.set_pin(self.pin)

    def _someone_is_guessing(self, wrong: int) -> None:
        """The guard saw many wrong PINs: tell the table (OLED and phones),
        one notice, updated with the count."""
        def note(table):
            table.notices[:] = [n for n in table.notices if n[0] != GUESSING]
            table.notices.append((GUESSING, {"n": wrong}))
        self.session.update_table(note)

    def join_url(self, fallback: str) -> str:
        return self.config.get("url") or fallback

    # -- news for the event streams -----------------------------------------
    def _table_snapshot(self):
        with self.session.lock:
            version, state = self.session.snapshot()
            live = self.session.clock.live()
        seats = self.public_seats()
        data = sse_event("state", state, version) + sse_event("seats", seats, version)
        if live is not None:            # the turn clock, live: a page counts down from it by itself
            data += sse_event("clock", live, version)
        notices = self.public_notices()
        if notices["notices"]:          # none: no event (a page starts without notices)
            data += sse_event("notices", notices, version)
        return [(version, data)]

    def _on_change(self, change) -> None:
        # Runs in the submitting thread under the session lock: encode once,
        # post to every mailbox, return.
        if change.kind == "table":
            self.seats.forget_released()
        data = sse_event("state", change.state, change.version)
        if change.clock is not None:    # none in effect: the state has no "clock" key, pages drop theirs
            data += sse_event("clock", change.clock, change.version)
        seats = self.public_seats()
        encoded = json.dumps(seats, sort_keys=True)
        if encoded != self._last_seats:
            self._last_seats = encoded
            data += sse_event("seats", seats, change.version)
        notices = self.public_notices()
        encoded = json.dumps(notices, sort_keys=True)
        if encoded != self._last_notices:
            self._last_notices = encoded
            data += sse_event("notices", notices, change.version)
        self.events.publish([(change.version, data)])
        if change.kind in ("new_game", "resume"):   # another game at the table: fewer seats maybe
            self._drop_claims_beyond(len(change.state.get("players") or ()))

    def _drop_claims_beyond(self, seats: int) -> None:
        """Claims a new game kept on purpose (``keep_claims``; without it the
        session ended them all) go for the seats it does not have.  The change
        is made after the current announcement ends (never nested in it), so
        every stream sees the new game first and the claims change next."""
        if not any(seat >= seats for seat in self.session.table.claims):
            return

        def drop():
            with self.session.lock:
                gone = [s for s in self.session.table.claims if s >= len(self.session.players)]
                if gone:
                    self.session.update_table(lambda table: [table.claims.pop(s, None) for s in gone])
        threading.Thread(target=drop, name="companion-claims", daemon=True).start()

    def _dev_frame_snapshot(self):
        version = int(getattr(self.box, "frame_version", 0) or 0)
        return [(0, sse_event("frame", {"version": version}, version))]

    def _on_dev_frame(self, version) -> None:
        self.dev_frames.publish([(0, sse_event("frame", {"version": version}, version))])

    # -- shutdown -------------------------------------------------------------
    def close(self) -> None:
        """End every stream and stop listening to the session and the box."""
        for unsubscribe in self._unsubscribe:
            try:
                unsubscribe()
            except Exception:
                log.exception("unsubscribe failed")
        self._unsubscribe = []
        self.events.close()
        self.dev_frames.close()


def companion() -> Companion:
    return current_app.extensions["companion"]


def create_app(session, *, box=None, config: dict, pin: str) -> Flask:
    """The Flask app of one table.  ``config`` is the dict of
    :func:`companion.config.load` (plus ``mock`` and ``url`` from the
    runner); ``pin`` the table PIN shown on the box."""
    from . import (api, backup, board, clock, dev, game_api, history, owner, pages, plays, portal, roster, seats, setup,
                   update)
    from .rules import LazyBuildRule

    app = Flask("web")
    app.jinja_options = {**app.jinja_options, "bytecode_cache": COMPILED}
    app.url_rule_class = LazyBuildRule      # URL builders at first use (web/rules.py): a faster start
    # Before any route is added: every <int:...> is a number the store can hold.
    app.url_map.converters["int"] = errors.StoredInt
    app.config["MAX_CONTENT_LENGTH"] = int(config.get("max_body") or MAX_BODY)
    app.config["JSON_AS_ASCII"] = False
    app.json.sort_keys = False          # keep the replay contract's key order
    app.json.ensure_ascii = False
    app.json.compact = True
    app.extensions["companion"] = Companion(session, box, config, pin)
    errors.register(app)
    app.before_request(_refuse_foreign_host)
    app.register_blueprint(api.bp)
    app.register_blueprint(seats.bp)
    app.register_blueprint(dev.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(plays.bp)        # before history: its /api/history/plays.* routes
    app.register_blueprint(history.bp)
    app.register_blueprint(game_api.bp)
    app.register_blueprint(roster.bp)
    app.register_blueprint(backup.bp)
    app.register_blueprint(portal.bp)
    app.register_blueprint(clock.bp)
    app.register_blueprint(update.bp)
    app.register_blueprint(setup.bp)
    app.register_blueprint(owner.bp)
    app.register_blueprint(board.bp)
    _seed_roster(session, config)
    return app


def _seed_roster(session, config: dict) -> None:
    """The settings' ``names`` become the roster of a table that has none."""
    from companion.roster import Roster

    try:
        Roster(session).seed(config.get("names") or [])
    except Exception:          # a store that cannot be written now: the box says so elsewhere
        log.exception("could not seed the roster")


def _refuse_foreign_host():
    """Answer only to the box's own names (web/hosts.py: DNS rebinding).
    Runs before routing, so no route's work is done for a foreign name."""
    host = request.environ.get("HTTP_HOST")
    if not companion().hosts.allows(host):
        from .portal import ALLOW, answer_foreign      # the box's own Wi-Fi: every name is the box there

        answer = answer_foreign(companion().config, host)
        if answer == ALLOW:
            return None
        if answer is not None:
            return answer
        raise errors.ApiError(400, N_("this box does not answer to the name '{host}': "
                                      "open it by its address or its .local name"), host=host[:80])
