"""systemd's notify protocol in a few lines of stdlib (Type=notify units).

``READY=1`` once the server listens, ``WATCHDOG=1`` at half of
``$WATCHDOG_USEC`` while the serving loop is alive, ``STOPPING=1`` at the
end.  Without ``$NOTIFY_SOCKET`` every call is a no-op.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Callable

log = logging.getLogger("companion.web")


def notify(message: str) -> bool:
    """Send one datagram to systemd; False when not under systemd or on error."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):              # abstract namespace socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
        return True
    except OSError as exc:
        log.warning("systemd notify failed: %s", exc)
        return False


def watchdog_interval() -> float | None:
    """Seconds between two WATCHDOG=1 (half of WATCHDOG_USEC), or None."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or not os.environ.get("NOTIFY_SOCKET"):
        return None
    if pid and pid != str(os.getpid()):
        return None
    try:
        return max(int(usec) / 2_000_000, 0.05)
    except ValueError:
        return None


class Watchdog:
    """A timer thread that pings systemd while ``alive()`` says the serving
    loop still turns; a stuck loop stops the pings and systemd restarts us."""

    def __init__(self, alive: Callable[[], bool], interval: float | None = None):
        self.alive = alive
        self.interval = interval if interval is not None else watchdog_interval()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Watchdog":
        if self.interval:
            self._thread = threading.Thread(target=self._run, name="companion-watchdog", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.alive():
                notify("WATCHDOG=1")
            else:
                log.error("serving loop stalled: not pinging the systemd watchdog")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
