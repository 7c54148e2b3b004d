"""``companion hub serve``: the hub's app under waitress, as the box serves its own.

Each big screen's event stream holds one waitress thread, and so does each
box's long poll for a tournament seating, so the pool is those two caps plus
room for the boxes' posts.  SIGTERM/SIGINT stop it cleanly:
streams end, the worker threads are joined, the connections closed.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from waitress import wasyncore
from waitress.server import create_server

from appliance.backup import MAX_BACKUP_BYTES

from .app import close, create_app

log = logging.getLogger("companion.hub")

STREAMS = 64
WAITERS = 128       # boxes' long polls for a tournament seating (each holds a thread, no connection)
# The largest body: a box's backup file (the boxes' lines come in smaller posts).
BODY_LIMIT = max(8 * 1024 * 1024, MAX_BACKUP_BYTES + 64 * 1024)


class HubServer:
    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, streams: int = STREAMS,
                 waiters: int = WAITERS):
        self.app = app
        self._stopping = threading.Event()
        self._server = create_server(app, host=host, port=port, threads=streams + waiters + 16,
                                     connection_limit=2 * streams + waiters + 200, asyncore_use_poll=True,
                                     ident="companion-hub", expose_tracebacks=False,
                                     max_request_body_size=BODY_LIMIT)
        self._map = getattr(self._server, "_map", None) or self._server.map
        # One listening socket, or several for a name with several addresses.
        self.port = getattr(self._server, "effective_port", None) or self._server.effective_listen[0][1]

    def serve_forever(self) -> None:
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=1.0, map=self._map, use_poll=True, count=1)
        finally:
            close(self.app)
            self._server.task_dispatcher.shutdown(timeout=5)
            wasyncore.close_all(self._map)

    def stop(self) -> None:
        if not self._stopping.is_set():
            self._stopping.set()
            for part in ("tables", "seatings"):
                if part in self.app.extensions["hub"]:
                    self.app.extensions["hub"][part].close()


def serve(url: str, host: str, port: int) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app = create_app(url, pool_size=16, streams=STREAMS)
    except Exception as exc:       # psycopg.OperationalError: wrong URL, server down...
        print(f"companion hub: cannot open the database: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}",
              file=sys.stderr)
        return 1
    try:
        server = HubServer(app, host, port)
    except OSError as exc:
        close(app)
        print(f"companion hub: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1

    def on_signal(signum, frame):
        threading.Thread(target=server.stop, daemon=True).start()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    print(f"companion hub: serving http://{host}:{server.port}/", flush=True)
    server.serve_forever()
    return 0
