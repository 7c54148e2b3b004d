"""The box's HTTP server: waitress, with a listener that no handful of clients can starve.

Production serving is waitress: it streams server-sent events without
buffering, and it is pure Python (no build on the Pi).  Each open event
stream holds one waitress worker thread, so the pool is sized above the
stream cap (``threads`` = ``max_streams`` + 16 by default) and the app
refuses the stream over the cap with a 503; ordinary requests always find a
free thread.  ``channel_request_lookahead=1`` lets waitress read a client's
hang-up while its stream is running; our channel class then wakes that
stream at once, so a gone phone frees its thread immediately.

No handful of clients may starve the table (issues 13 and 21): waitress
alone lets a client that sends its headers a byte at a time hold a
connection for ever (every byte resets the idle timer), and ~250 such
connections reach the connection limit, after which nobody is accepted.  So
the listener here is waitress's own, extended (:class:`GuardedListener`):

* each client address may hold at most ``max_connections_per_address``
  connections (48); the one over is answered a JSON 503 and closed at once,
  and the accept loop drains the backlog each turn, so a phone's connection
  never queues behind an attacker's;
* over ``connection_limit`` in all, **fair shares, not first come**
  (:class:`AddressCeiling`): a newcomer from a lighter address takes the
  place of the heaviest address's worst connection (see
  :meth:`CompanionChannel.rank`), closed between two turns of the loop; only
  a newcomer from an address as heavy as the others gets the 503;
* a request must arrive whole in time, whatever trickles in: its head within
  ``HEAD_S`` of its first byte, its body within ``REQUEST_S``; a response the
  client stops reading for ``STALLED_S`` closes the connection (a phone that
  froze, or a script that never reads its event stream);
* after waitress's own refusal (a body too large...) the connection is
  half-closed and drained, so a client still sending reads its JSON 4xx
  instead of a reset;
* every connection logs through a logger that tags its lines with the
  client's address, so :mod:`web.logsafe` escapes them and holds each
  address to a few lines a minute.

Event streams are also capped, in all and per address, with the same fair
shares (:class:`web.streams.StreamSlots`), so one address holds at most a
few of the worker threads.  A NAT'd guest network shares one address: raise
both per-address settings there.

``--dev-server`` uses Werkzeug's development server instead (reloading and
debugging are not turned on; it is just a single-process threaded server).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import weakref

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher

from appliance.backup import MAX_BACKUP_BYTES
from companion.i18n import gettext
from companion.limits import MAX_IMPORT_BYTES

from .errors import JsonErrorTask
from .logsafe import ClientBudget, client_logger, install as install_safe_log
from .streams import Marks
from .update import MAX_BUNDLE_BYTES

log = logging.getLogger("companion.web")
FIRST_THREADS = 8       # waitress workers started before serving; the rest follow

CONNECTIONS_PER_ADDRESS = 48    # a browser opens up to 6 at once: ~8 phones behind one NAT
HEAD_S = 10.0                   # a request line and headers, from their first byte
REQUEST_S = 60.0                # a whole request: a 1 MiB import at ~17 KiB/s
STALLED_S = 60.0                # a response nobody reads any more
STALE_S = 2.0                   # of no use this long, a connection may make room for anyone's
# The exit code after a restore was staged: systemd's Restart=on-failure starts
# the unit again (EX_TEMPFAIL), and the start swaps the restore in.
DRAIN_BYTES = 8 * 1024 * 1024   # what a refused client may still send, read and dropped
DRAIN_S = 30.0                  # ...and for how long
ACCEPT_BURST = 64               # connections accepted per turn of the network loop


class CompanionParser(HTTPRequestParser):
    """waitress's request parser, with two routes' larger bodies: a backup
    to restore (web/backup.py) may be MAX_BACKUP_BYTES and an update bundle
    (web/update.py, a release with its wheels) MAX_BUNDLE_BYTES; every other
    request keeps the server's limit, so no other route makes the box take
    in (and spool to disk) more than a log's worth per connection.  Those two
    also get time in proportion to what they declare (:attr:`body_s`): a
    30 MB bundle from a phone on a weak Wi-Fi takes minutes, not seconds.

    waitress reads a body whole before the app can check the PIN, so one
    such body is taken in at a time (:class:`_BigSlot`): another meanwhile
    gets the general limit (413 at once), and no client without the PIN can
    make the box spool more than one bundle's worth to its card."""

    body_s = None       # the time this request's body may take; None: REQUEST_S

    def parse_header(self, header_plus):
        super().parse_header(header_plus)
        limit = BIG_BODIES.get(self.path) if self.command == "POST" else None
        if limit is not None:
            body_s = max(REQUEST_S, (self.content_length or 0) / SLOW_UPLOAD_BPS)
            if BIG_SLOT.take(self, HEAD_S + body_s):
                self.adj = _bigger(self.adj, limit)
                self.body_s = body_s


class _BigSlot:
    """The one big body being taken in.  Free again once that request is
    whole, its connection gone (the parser is dropped with it) or its
    deadline past.  Only the server's network loop parses, so no lock."""

    def __init__(self):
        self._holder, self._until = None, 0.0

    def take(self, parser, seconds: float) -> bool:
        holder = self._holder() if self._holder is not None else None
        now = time.monotonic()
        if holder is not None and not holder.completed and holder.error is None and now < self._until:
            return False
        self._holder, self._until = weakref.ref(parser), now + seconds
        return True

    def give_back(self, parser) -> None:
        if parser is not None and self._holder is not None and self._holder() is parser:
            self._holder = None


BIG_SLOT = _BigSlot()


RESTORE_PATH = "/api/backup/restore"
BIG_BODIES = {RESTORE_PATH: MAX_BACKUP_BYTES, "/api/update": MAX_BUNDLE_BYTES}
SLOW_UPLOAD_BPS = 32 * 1024     # the slowest upload a big body is waited for (a 30 MB bundle: 16 min)
_BIGGER: dict = {}


def _bigger(adj, limit: int):
    """waitress's settings with a body of ``limit`` allowed (one copy per limit)."""
    found = _BIGGER.get((id(adj), limit))
    if found is None or found[0] is not adj:
        import copy

        bigger = copy.copy(adj)
        bigger.max_request_body_size = limit + 64 * 1024
        found = _BIGGER[(id(adj), limit)] = (adj, bigger)
    return found[1]


class CompanionChannel(HTTPChannel):
    """waitress's HTTP channel, plus callbacks run when the client hangs up
    (see :func:`web.streams.watch_disconnect`), the deadlines of
    :meth:`overdue`, eviction (:meth:`evict`), a logger that tags its lines
    with the client's address (:mod:`web.logsafe`), and a graceful end after
    waitress's own refusals (:meth:`_drain`)."""

    parser_class = CompanionParser

    error_task_class = JsonErrorTask       # waitress's own refusals in the API's JSON too

    def __init__(self, *args, **kwargs):
        self.disconnect_callbacks: list = []
        super().__init__(*args, **kwargs)
        self.logger = client_logger(self.logger, self.addr, getattr(self.server, "log_budget", None))

    def _told_gone(self) -> None:
        for callback in list(self.disconnect_callbacks):
            try:
                callback()
            except Exception:
                log.exception("disconnect callback failed")

    def handle_read(self):
        if self.draining:
            self._discard()
            return
        super().handle_read()
        if not self.connected:
            self._told_gone()

    def handle_close(self):
        if self._answered and not self.draining and self.connected and self.refused_early:
            self._drain()
            return
        super().handle_close()
        self._told_gone()

    # -- deadlines (checked each second by GuardedListener.sweep) --------------
    partial = None              # the request being received (waitress's parser)
    partial_since = 0.0         # monotonic time of its first byte
    ceiling = None              # the AddressCeiling this connection counts in
    address_key = ""
    streaming = False           # an event stream is served on it (set by web.streams)

    def received(self, data):
        done = super().received(data)
        if self.request is not self.partial:        # a new request began (or none is pending)
            self.partial, self.partial_since = self.request, time.monotonic()
        return done

    def overdue(self, now: float) -> str | None:
        """Why this connection must close now, or None."""
        if self.draining:
            return "slow client after a refusal" if now > self.drain_until else None
        request = self.request
        if request is not None and not request.completed:
            limit = (request.body_s or REQUEST_S) if request.headers_finished else HEAD_S
            if now - self.partial_since > limit:
                return "slow request"
        if self.requests and self.total_outbufs_len and time.time() - self.last_activity > STALLED_S:
            return "unread response"
        return None

    def del_channel(self, map=None):
        super().del_channel(map)
        BIG_SLOT.give_back(self.request)       # a big body cut short frees its slot now
        ceiling, self.ceiling = self.ceiling, None
        if ceiling is not None:
            ceiling.give_back(self)

    # -- eviction ---------------------------------------------------------------
    def evict(self, why: str) -> None:
        """Close this connection to make room for a lighter address (from any
        thread: the serving loop closes it after its current turn)."""
        ceiling = self.ceiling
        if ceiling is not None:
            ceiling.evict(self, why)
            try:
                self.server.pull_trigger()
            except OSError:
                pass

    def stale(self) -> float | None:
        """Seconds this connection has been of no use, if it is idle (a
        keep-alive between requests), still receiving a request, or a
        refused one being drained; None while it is served (a request being
        answered, an event stream)."""
        if self.draining:
            return float("inf")
        if self.requests:
            return None
        if self.request is None:
            return time.time() - self.last_activity
        return time.monotonic() - self.partial_since

    def rank(self) -> tuple:
        """Which of an address's connections goes first when it must give one
        up (the smallest): a refused one being drained, then the one of no
        use for the longest (idle keep-alive, or a request still trickling
        in), then event streams (the reader furthest behind, then the
        oldest), then requests being answered (the oldest)."""
        stale = self.stale()
        if stale is not None:
            return (0, -stale)
        if self.streaming:
            return (1, -self.total_outbufs_len, self.creation_time)
        return (2, self.creation_time)

    # -- a graceful end after waitress's own refusal -------------------------
    # waitress answers a body over max_request_body_size (or headers too
    # large, or bytes that are not HTTP) at once, then closes; a client still
    # sending its body then gets a reset, and often never reads the answer
    # (issue 21, finding 6).  Instead, once the answer is flushed, the
    # connection is half-closed (the client reads the answer, then the end)
    # and what the client still sends is read and dropped, up to DRAIN_BYTES
    # or DRAIN_S, whichever comes first.
    refused_early = False       # waitress's own error answer was served on it
    draining = False
    drain_left = 0
    drain_until = 0.0
    _answered = False

    def service(self):
        if self.requests and self.requests[0].error is not None:
            self.refused_early = True
        super().service()

    def handle_write(self):
        self._answered = bool(self.close_when_flushed)
        try:
            super().handle_write()
        finally:
            self._answered = False

    def _drain(self) -> None:
        try:
            self.socket.shutdown(socket.SHUT_WR)
        except OSError:
            self._answered = False
            self.handle_close()
            return
        self.will_close = self.close_when_flushed = False
        self.draining = True
        self.drain_left = DRAIN_BYTES
        self.drain_until = time.monotonic() + DRAIN_S

    def _discard(self) -> None:
        try:
            data = self.socket.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self.drain_left -= len(data)
        if not data or self.drain_left <= 0:
            self.draining = False
            self.refused_early = False
            self.handle_close()

    def readable(self):
        return True if self.draining else super().readable()

    def writable(self):
        return False if self.draining else super().writable()


class AddressCeiling:
    """The connections of every client address, shared by the listeners.

    At accept time (:meth:`admit`): an address over its own ceiling
    (``per_address``) is refused; when the server holds ``limit``
    connections, **fair shares, not first come** (issue 21): the newcomer's
    address takes one from the heaviest address if that one holds at least
    two more than the newcomer's (its worst connection by
    :meth:`CompanionChannel.rank` is closed), and is refused only when it is
    itself among the heaviest.  So however an attacker spreads its
    connections over addresses, a phone's address is never the one refused.

    Also: the answers of a connection refused, and a tally of what was
    refused or closed, logged at most once a minute (an attacker must not
    fill the SD card with log lines)."""

    def __init__(self, per_address: int, limit: int, language: str | None):
        self.per_address = per_address
        self.limit = limit
        self.over_address = refusal_bytes(per_address, language)
        self.over_limit = refusal_bytes(limit, language)
        self._held: dict[str, set] = {}
        self._marks = Marks(STALE_S * 5)    # refused or made to give way: not by the spread-out rule
        self._evicting: list = []
        self._lock = threading.Lock()
        self.tally: dict[str, int] = {}
        self._logged = time.monotonic()

    def admit(self, key: str, in_use: int) -> tuple[bytes, str] | None:
        """None if a connection from ``key`` may be taken now (a heavier
        address's worst connection is then already set to close), else the
        refusal to send and why.  ``in_use``: the server's map size."""
        with self._lock:
            held = len(self._held.get(key, ()))
            if held >= self.per_address:
                return self.over_address, "connection over its address's ceiling"
            if in_use - len(self._evicting) >= self.limit:
                victim = self._victim(key, held)
                if victim is None:
                    self._marks.mark(key)
                    return self.over_limit, "connection over the server's limit"
                self._evict(victim, "connection closed for a lighter address")
            return None

    def _victim(self, key: str, held: int):
        """The connection to close for a newcomer from ``key``, which holds
        ``held``: the worst (:meth:`CompanionChannel.rank`) of the heaviest
        address if that holds two more; else, if the newcomer's address holds
        less than a fair share (the connections are spread over many
        addresses) and was neither refused nor made to give way in the last
        5 x ``STALE_S``, the one of no use for the longest, at least
        ``STALE_S``, of another address holding at least as many."""
        heaviest = max(self._held.values(), key=len, default=set())
        if len(heaviest) >= held + 2:
            return min(heaviest, key=lambda ch: ch.rank())
        if held * (len(self._held) + 1) >= self.limit:
            return None             # the newcomer's address has its fair share already
        if self._marks.marked(key):
            return None             # refused or made to give way lately: not by this rule
        worst, worst_stale = None, STALE_S
        for address, channels in self._held.items():
            if address == key or len(channels) < held:
                continue
            for channel in channels:
                stale = channel.stale()
                if stale is not None and stale >= worst_stale:
                    worst, worst_stale = channel, stale
        return worst

    def register(self, key: str, channel) -> None:
        with self._lock:
            self._held.setdefault(key, set()).add(channel)
            channel.ceiling, channel.address_key = self, key

    def held(self, key: str) -> int:
        with self._lock:
            return len(self._held.get(key, ()))

    def _forget(self, channel) -> None:
        channels = self._held.get(channel.address_key)
        if channels is not None:
            channels.discard(channel)
            if not channels:
                self._held.pop(channel.address_key, None)

    def give_back(self, channel) -> None:
        with self._lock:
            self._forget(channel)

    def _evict(self, channel, why: str) -> None:
        self._forget(channel)
        self._marks.mark(channel.address_key)
        channel.ceiling = None
        self._evicting.append(channel)
        self.count(why)

    def evict(self, channel, why: str) -> None:
        with self._lock:
            if channel.ceiling is self:
                self._evict(channel, why)

    def close_evicted(self) -> None:
        """Close the connections set to close (serving loop, between turns)."""
        with self._lock:
            evicting, self._evicting = self._evicting, []
        for channel in evicting:
            channel.draining = False
            channel._answered = False
            channel.handle_close()

    def count(self, why: str) -> None:
        self.tally[why] = self.tally.get(why, 0) + 1

    def log_tally(self, now: float) -> None:
        if self.tally and now - self._logged >= 60:
            log.warning("defended the table in the last minute: %s",
                        ", ".join(f"{n} x {why}" for why, n in sorted(self.tally.items())))
            self.tally, self._logged = {}, now

    def refuse(self, conn, answer: bytes, why: str) -> None:
        """A connection not taken: its JSON 503, then closed at once."""
        self.count(why)
        try:
            conn.setblocking(False)
            conn.send(answer)
            conn.recv(65536)        # what the client already sent: fewer resets
        except OSError:
            pass
        conn.close()


def refusal_bytes(n: int, language: str | None) -> bytes:
    """The JSON 503 of a connection refused, the API's text with ``n``."""
    text = gettext("too many live connections ({n}): close a page or try again later", language, n=n)
    body = json.dumps({"error": text}, ensure_ascii=False).encode()
    head = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 10\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("latin-1") + body


class GuardedListener(TcpWSGIServer):
    """waitress's TCP listener, with fair shares at accept time
    (:class:`AddressCeiling`) and the deadlines of
    :meth:`CompanionChannel.overdue`."""

    channel_class = CompanionChannel

    def __init__(self, *args, ceiling: AddressCeiling, log_budget: ClientBudget | None = None, **kwargs):
        self.ceiling = ceiling
        self.log_budget = log_budget        # the lines its connections may log (web.logsafe)
        super().__init__(*args, **kwargs)

    def readable(self):
        # waitress stops accepting at connection_limit, and the connections
        # over it wait unanswered in the backlog; here they are accepted and
        # refused at once, or make room (handle_accept).
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)           # waitress: idle connections past channel_timeout
        return self.accepting

    def handle_accept(self):
        # waitress accepts one connection per loop turn; a stubborn attacker
        # reconnecting would keep the backlog full and a phone waiting in it.
        # Drain it instead: refusing one costs an accept and a close.
        for _ in range(ACCEPT_BURST):
            try:
                pair = self.accept()
            except OSError as exc:         # out of descriptors...: counted, not logged each turn
                self.ceiling.count(f"accept() failed: {exc.strerror or exc}")
                return
            if pair is None:
                return
            conn, addr = pair
            key = str(addr[0]) if isinstance(addr, tuple) else ""
            refusal = self.ceiling.admit(key, len(self._map))
            if refusal is not None:
                self.ceiling.refuse(conn, *refusal)
                continue
            try:
                self.set_socket_options(conn)
                channel = self.channel_class(self, conn, self.fix_addr(addr), self.adj, map=self._map)
            except OSError:
                conn.close()
                continue
            self.ceiling.register(key, channel)

    def sweep(self, now: float) -> None:
        """Close every connection past a deadline (see
        :meth:`CompanionChannel.overdue`).  Called by :class:`Server` between
        turns of the network loop, never from inside one: closing a socket
        while waitress builds its poll list would let a new connection reuse
        its descriptor and be handed the old one's poll result."""
        for channel in list(self.active_channels.values()):
            why = channel.overdue(now) if isinstance(channel, CompanionChannel) else None
            if why:
                self.ceiling.count(why)
                # Closed now: will_close would wait for the socket to be
                # writable, which a socket nobody reads never is.
                channel.draining = False
                channel._answered = False
                channel.handle_close()
        self.ceiling.log_tally(now)


def waitress_settings(config: dict) -> dict:
    """The waitress adjustments for ``config`` (also used by the benchmark)."""
    streams = int(config.get("max_streams") or 100)
    return {
        "threads": int(config.get("threads") or 0) or streams + 16,
        "channel_request_lookahead": 1,     # see a hung-up client while its stream runs
        "connection_limit": 2 * streams + 50,
        "channel_timeout": 30,              # an idle keep-alive connection, in seconds
        "cleanup_interval": 5,              # waitress's sweep of idle connections
        # A response waits in memory up to this much for a slow reader; past
        # it the worker waits (an unread event stream costs 256 KiB, not 16 MB).
        "outbuf_high_watermark": 256 * 1024,
        "asyncore_use_poll": True,          # no 1024-descriptor limit of select()
        "ident": "companion",
        "expose_tracebacks": False,
        # Refuse a huge declared body before buffering it (to the SD card).
        # Just above the largest import, so that the app's own limits (16 KiB
        # for an action, MAX_IMPORT_BYTES for a log) answer first.
        "max_request_body_size": MAX_IMPORT_BYTES + 64 * 1024,
        # never send_bytes: the default (1) flushes every event at once
    }


class Server:
    """One listening server (waitress, or Werkzeug's with ``dev=True``) that
    can be stopped from a signal handler or another thread."""

    def __init__(self, app, host: str, port: int, config: dict, dev: bool = False):
        self.app, self.dev = app, dev
        self.heartbeat = time.monotonic()
        self._stopping = threading.Event()
        if dev:
            from werkzeug.serving import make_server

            log.warning("Werkzeug's development server: for development only, not for the table")
            self._server = make_server(host, port, app, threaded=True)
            self._server.service_actions = self._beat
            self.port = self._server.server_port
        else:
            settings = waitress_settings(config)
            streams = int(config.get("max_streams") or 100)
            if settings["threads"] <= streams:
                log.warning("threads (%s) <= max_streams: open streams can starve other requests",
                            settings["threads"])
            per_address = int(config.get("max_connections_per_address") or CONNECTIONS_PER_ADDRESS)
            ceiling = self._ceiling = AddressCeiling(per_address, settings["connection_limit"],
                                                     config.get("language"))
            install_safe_log()          # client text reaches the log escaped and rate-limited
            self.log_budget = ClientBudget()
            companion = app.extensions.get("companion")
            if companion is not None:
                slots = companion.slots
                slots.per_address = int(config.get("max_streams_per_address") or slots.PER_ADDRESS)
            adj = Adjustments(host=host, port=port, **settings)
            self._dispatcher = ThreadedTaskDispatcher()
            # Start serving with a few worker threads and add the rest from
            # the serving loop's side (see serve_forever): starting ~120
            # threads costs ~15 ms here, over 100 ms on a Pi Zero, and no
            # phone is there yet to need them.
            self._threads = adj.threads
            self._dispatcher.set_thread_count(min(self._threads, FIRST_THREADS))
            # One listening socket, or several when the host name has several
            # addresses (localhost: 127.0.0.1 and ::1), sharing one map.
            self._map: dict = {}
            self._listeners = []
            try:
                for sockinfo in adj.listen:
                    self._listeners.append(GuardedListener(app, self._map, dispatcher=self._dispatcher, adj=adj,
                                                           sockinfo=sockinfo, ceiling=ceiling,
                                                           log_budget=self.log_budget))
            except OSError:
                self._dispatcher.shutdown(timeout=1)
                from waitress import wasyncore

                wasyncore.close_all(self._map)
                raise
            self.port = int(self._listeners[0].effective_port)

    def _grow(self) -> None:
        """Start the rest of waitress's workers, a few at a time (its lock is
        held while it starts threads: requests wait for each step only)."""
        dispatcher, count = self._dispatcher, FIRST_THREADS
        while count < self._threads and not self._stopping.is_set():
            count = min(self._threads, count + FIRST_THREADS)
            dispatcher.set_thread_count(count)

    def _beat(self) -> None:
        self.heartbeat = time.monotonic()

    def alive(self, within: float = 10.0) -> bool:
        return time.monotonic() - self.heartbeat < within

    def serve_forever(self) -> None:
        """Serve until :meth:`stop`; then end every stream and join the workers."""
        try:
            if self.dev:
                self._server.serve_forever(poll_interval=0.5)
            else:
                from waitress import wasyncore

                next_sweep = 0.0
                self._grower = threading.Thread(target=self._grow, name="companion-threads", daemon=True)
                self._grower.start()
                while not self._stopping.is_set():
                    # One poll (at most 1 s, waitress's own loop timeout) per turn.
                    wasyncore.loop(timeout=1.0, map=self._map, use_poll=True, count=1)
                    self._beat()
                    self._ceiling.close_evicted()   # between turns, as the sweep (see there)
                    now = time.monotonic()
                    if now >= next_sweep:       # the deadlines, once a second
                        next_sweep = now + 1.0
                        for listener in self._listeners:
                            listener.sweep(now)
                        self.log_budget.flush()     # the summary of log lines suppressed
        except KeyboardInterrupt:
            pass
        finally:
            self._finish()

    def stop(self) -> None:
        """Ask the server to stop; returns at once.  From a signal handler, call
        it on another thread (see ``run``): it takes the stream hubs' locks."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.app.extensions["companion"].close()        # every stream ends now
        if self.dev:
            threading.Thread(target=self._server.shutdown, daemon=True).start()
        else:
            try:
                self._listeners[0].pull_trigger()
            except OSError:
                pass    # the serving loop already ended and closed its trigger

    def _finish(self) -> None:
        self._stopping.set()
        self.app.extensions["companion"].close()
        if self.dev:
            self._server.server_close()
        else:
            from waitress import wasyncore

            if getattr(self, "_grower", None) is not None:
                self._grower.join()         # no worker may start after the shutdown
            self._dispatcher.shutdown(timeout=5)
            wasyncore.close_all(self._map)
