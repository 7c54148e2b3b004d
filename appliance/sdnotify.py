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
import time
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
        # Looks often (a second, or less) and pings at most once an interval:
        # a loop that stalls for a moment and turns again is pinged for as
        # soon as it turns, not an interval later, so only a real freeze
        # (longer than WatchdogSec less the interval) gets the process killed.
        last = time.monotonic()
        stalled = False
        while not self._stop.wait(min(1.0, self.interval / 2)):
            if not self.alive():
                if not stalled:
                    log.error("serving loop stalled: not pinging the systemd watchdog")
                stalled = True
                continue
            if stalled:
                log.warning("serving loop turning again: pinging the systemd watchdog")
            stalled = False
            now = time.monotonic()
            if now - last >= self.interval:
                notify("WATCHDOG=1")
                last = now

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
