"""A network that comes (or changes) after the box has started.

The box starts without waiting for any network (the unit is not ordered
after ``network-online.target``): at a table with no Wi-Fi it serves on
loopback and shows the table at once.  When a network appears later (the
cable, the Wi-Fi, the box's own access point), phones must be able to
find it: this watcher looks at the machine's address every few seconds
and, when it changes, calls back (serve.py then updates the join address
and QR code, and announces the table by mDNS on the new network).

Looking costs one ``connect()`` of a UDP socket (no packet is sent): a
few microseconds, on a thread of its own, never the box's.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("companion.web")
EVERY_S = 3.0


def watch(address: Callable[[], str], changed: Callable[[str], None], *, every: float = EVERY_S,
          first: str | None = None) -> Callable[[], None]:
    """Call ``changed(new)`` each time ``address()`` answers something new
    (compared with ``first``, else its first answer); return the function
    that stops watching.  A failing callback is logged, never fatal."""
    stop = threading.Event()
    last = [address() if first is None else first]

    def run() -> None:
        while not stop.wait(every):
            try:
                now = address()
            except Exception:
                log.exception("network watch: cannot read the address")
                continue
            if now != last[0]:
                log.info("network: address %s -> %s", last[0], now)
                last[0] = now
                try:
                    changed(now)
                except Exception:
                    log.exception("network watch: handling the new address failed")

    thread = threading.Thread(target=run, name="companion-netwatch", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(timeout=every + 5)

    return halt
