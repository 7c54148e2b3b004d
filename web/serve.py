"""``companion run``: the appliance — store, table session, box, web server.

Production serving is waitress: it streams server-sent events without
buffering, and it is pure Python (no build on the Pi).  Each open event
stream holds one waitress worker thread, so the pool is sized above the
stream cap (``threads`` = ``max_streams`` + 16 by default) and the app
refuses the stream over the cap with a 503; ordinary requests always find a
free thread.  ``channel_request_lookahead=1`` lets waitress read a client's
hang-up while its stream is running; our channel class then wakes that
stream at once, so a gone phone frees its thread immediately.

``--dev-server`` uses Werkzeug's development server instead (reloading and
debugging are not turned on; it is just a single-process threaded server).
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
import sys
import threading
import time

from waitress.channel import HTTPChannel

from . import sdnotify
from .app import create_app
from .auth import new_pin
from .mdns import start_mdns

log = logging.getLogger("companion.web")
FIRST_THREADS = 8       # waitress workers started before serving; the rest follow


class CompanionChannel(HTTPChannel):
    """waitress's HTTP channel, plus callbacks run when the client hangs up
    (see :func:`web.streams.watch_disconnect`)."""

    def __init__(self, *args, **kwargs):
        self.disconnect_callbacks: list = []
        super().__init__(*args, **kwargs)

    def _told_gone(self) -> None:
        for callback in list(self.disconnect_callbacks):
            try:
                callback()
            except Exception:
                log.exception("disconnect callback failed")

    def handle_read(self):
        super().handle_read()
        if not self.connected:
            self._told_gone()

    def handle_close(self):
        super().handle_close()
        self._told_gone()


def waitress_settings(config: dict) -> dict:
    """The waitress adjustments for ``config`` (also used by the benchmark)."""
    streams = int(config.get("max_streams") or 100)
    return {
        "threads": int(config.get("threads") or 0) or streams + 16,
        "channel_request_lookahead": 1,     # see a hung-up client while its stream runs
        "connection_limit": 2 * streams + 50,
        "asyncore_use_poll": True,          # no 1024-descriptor limit of select()
        "ident": "companion",
        "expose_tracebacks": False,
        # Refuse a huge declared body before buffering it (to the SD card);
        # bodies over the app's 16 KiB cap get the app's JSON 413.
        "max_request_body_size": 1024 * 1024,
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
            from waitress.server import BaseWSGIServer, create_server

            settings = waitress_settings(config)
            if settings["threads"] <= int(config.get("max_streams") or 100):
                log.warning("threads (%s) <= max_streams: open streams can starve other requests",
                            settings["threads"])
            # Start serving with a few worker threads and add the rest from
            # the serving loop's side (see serve_forever): starting ~120
            # threads costs ~15 ms here, over 100 ms on a Pi Zero, and no
            # phone is there yet to need them.
            self._threads = settings["threads"]
            settings["threads"] = min(self._threads, FIRST_THREADS)
            self._server = create_server(app, host=host, port=port, **settings)
            # One listening socket, or several when the host name has several
            # addresses (localhost: 127.0.0.1 and ::1).
            self._map = getattr(self._server, "_map", None) or self._server.map
            self._listeners = [d for d in self._map.values() if isinstance(d, BaseWSGIServer)]
            for listener in self._listeners:
                listener.channel_class = CompanionChannel
            self.port = self._listeners[0].effective_port

    def _grow(self) -> None:
        """Start the rest of waitress's workers, a few at a time (its lock is
        held while it starts threads: requests wait for each step only)."""
        dispatcher, count = self._server.task_dispatcher, FIRST_THREADS
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

                self._grower = threading.Thread(target=self._grow, name="companion-threads", daemon=True)
                self._grower.start()
                while not self._stopping.is_set():
                    # One poll (at most 1 s, waitress's own loop timeout) per turn.
                    wasyncore.loop(timeout=1.0, map=self._map, use_poll=True, count=1)
                    self._beat()
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
            self._server.task_dispatcher.shutdown(timeout=5)
            wasyncore.close_all(self._map)


def lan_address() -> str:
    """This machine's address on the local network (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("10.254.254.254", 1))
            return sock.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def join_url(host: str, port: int) -> str:
    """The URL phones open (and the QR code holds)."""
    address = lan_address() if host in ("", "0.0.0.0", "::") else host
    if ":" in address:
        address = f"[{address}]"
    return f"http://{address}:{port}/"


def table_pin(config: dict) -> str:
    """``COMPANION_PIN`` (already folded into config by companion.config), the
    config file's ``pin``, or 4 random digits for this start."""
    pin = config.get("pin")
    if pin is None or str(pin).strip() == "":
        return new_pin()
    return str(pin).strip()


def run(args, parts) -> int:
    """``companion run [--mock] [--host H] [--port P] [--data DIR] [--config FILE] [--dev-server]``.

    ``parts``: the config, store, session and box (or None), already
    started by :func:`companion.cli.cmd_run` — the box before this module
    (Flask, waitress) is even imported, so its first frame comes sooner."""
    config, store, session, box = parts
    host = getattr(args, "host", None) or config["host"]
    port = getattr(args, "port", None)
    port = config["port"] if port is None else port
    mock = config["mock"]
    pin = table_pin(config)
    app = create_app(session, box=box, config=config, pin=pin)
    try:
        server = Server(app, host, port, config, dev=bool(getattr(args, "dev_server", False)))
    except OSError as exc:
        app.extensions["companion"].close()
        _close(box, store)
        print(f"companion: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1

    url = join_url(host, server.port)
    config["url"] = url
    if box is not None:
        try:
            box.show_join(url, pin)
        except Exception:
            log.exception("the box cannot show the join screen")

    def on_signal(signum, frame):
        # Not server.stop() here: the handler runs on the serving thread, which
        # may hold a stream hub's lock at that moment (a phone hanging up), and
        # stop() takes it too.  A thread of its own waits for it instead.
        threading.Thread(target=server.stop, name="companion-stop", daemon=True).start()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    print(f"companion: serving {url}  table PIN {pin}" + ("  (mock box: /dev)" if mock else ""), flush=True)
    sdnotify.notify("READY=1")
    # Everything made so far lives as long as the process: out of the
    # collector's sight (a full collection would scan it all: ~15 ms here,
    # over 0.1 s on a Pi Zero, at a random moment), and back on for the rest.
    gc.freeze()
    gc.enable()
    watchdog = sdnotify.Watchdog(lambda: server.alive(within=3.0)).start()
    # Phones find the box by its friendly name (mDNS).  Only the real box
    # advertises: a laptop demo (--mock) or a loopback server stays quiet.
    advertise = config.get("mdns", True) and not mock and not host.startswith("127.") and host != "localhost"
    stop_mdns = start_mdns(config.get("name") or "companion", server.port) if advertise else (lambda: None)
    try:
        server.serve_forever()
    finally:
        sdnotify.notify("STOPPING=1")
        stop_mdns()
        watchdog.stop()
        _close(box, store)
    return 0


def _close(box, store) -> None:
    if box is not None:
        try:
            box.close()
        except Exception:
            log.exception("closing the box failed")
    try:
        store.close()
    except Exception:
        log.exception("closing the store failed")
