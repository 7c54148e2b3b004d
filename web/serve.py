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

import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from waitress.channel import HTTPChannel

from companion import config as cfg
from companion.limits import MAX_IMPORT_BYTES
from companion.i18n import set_language

from . import sdnotify
from .app import create_app
from .auth import new_pin
from .errors import JsonErrorTask
from .mdns import start_mdns

log = logging.getLogger("companion.web")


class CompanionChannel(HTTPChannel):
    """waitress's HTTP channel, plus callbacks run when the client hangs up
    (see :func:`web.streams.watch_disconnect`)."""

    error_task_class = JsonErrorTask       # waitress's own refusals in the API's JSON too

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
            from waitress.server import BaseWSGIServer, create_server

            settings = waitress_settings(config)
            if settings["threads"] <= int(config.get("max_streams") or 100):
                log.warning("threads (%s) <= max_streams: open streams can starve other requests",
                            settings["threads"])
            self._server = create_server(app, host=host, port=port, **settings)
            # One listening socket, or several when the host name has several
            # addresses (localhost: 127.0.0.1 and ::1).
            self._map = getattr(self._server, "_map", None) or self._server.map
            self._listeners = [d for d in self._map.values() if isinstance(d, BaseWSGIServer)]
            for listener in self._listeners:
                listener.channel_class = CompanionChannel
            self.port = self._listeners[0].effective_port

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


def start_box(session, config: dict, mock: bool):
    """The buttons and screen, or None (the table still works from phones)."""
    try:
        import hardware

        box = hardware.Box(session, config, mock=mock)
        box.start()
        return box
    except Exception as exc:       # missing package, no pins, a broken driver...
        log.error("running without the box (buttons and screen): %s: %s", type(exc).__name__, exc)
        return None


def run(args) -> int:
    """``companion run [--mock] [--host H] [--port P] [--data DIR] [--config FILE] [--dev-server]``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from companion.session import TableSession
    from companion.store import Store

    data_dir = Path(args.data) if getattr(args, "data", None) else cfg.default_data_dir()
    config = cfg.load(data_dir, getattr(args, "config", None))
    mock = bool(getattr(args, "mock", False))
    config["mock"] = mock
    config["dev_anywhere"] = bool(getattr(args, "dev_anywhere", False))   # /dev beyond loopback
    host = getattr(args, "host", None) or config["host"]
    port = getattr(args, "port", None)
    port = config["port"] if port is None else port
    set_language(config.get("language"))
    if mock:
        os.environ.setdefault("GPIOZERO_PIN_FACTORY", "mock")

    store = Store(data_dir)
    session = TableSession(store)
    pin = table_pin(config)
    box = start_box(session, config, mock)
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
