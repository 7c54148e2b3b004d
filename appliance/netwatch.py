"""Where phones find the box, and a network that comes (or changes) after the start.

The box starts without waiting for any network (the unit is not ordered
after ``network-online.target``): at a table with no Wi-Fi it serves on
loopback and shows the table at once.  When a network appears later (the
cable, the Wi-Fi, the box's own access point), phones must be able to
find it: this watcher looks at the machine's address every few seconds
and, when it changes, calls back (the start sequence, :mod:`appliance.runner`,
then updates the join address and QR code, and announces the table by mDNS
on the new network).

Looking costs one ``connect()`` of a UDP socket (no packet is sent): a
few microseconds, on a thread of its own, never the box's.
"""

from __future__ import annotations

import logging
import socket
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


# -- where phones find the box ------------------------------------------------------
def lan_address(route=None, interfaces=None) -> str:
    """This machine's address on the local network (no packet is sent): the
    source address towards a default route; on a network without a router
    (the box's own access point, a cable to a laptop, a guest network that
    gives none) the first IPv4 address of an interface; else loopback."""
    try:
        return (route or _route_address)()
    except OSError:
        pass
    for address in (interfaces or interface_addresses)():
        return address
    return "127.0.0.1"


def _route_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("10.254.254.254", 1))
        return sock.getsockname()[0]


def interface_addresses() -> list[str]:
    """The IPv4 addresses of this machine's interfaces, loopback left out
    (Linux's SIOCGIFADDR; elsewhere, or on any error, none)."""
    found: list[str] = []
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
                except OSError:
                    continue            # no IPv4 address on this one
                address = socket.inet_ntoa(packed[20:24])
                if not address.startswith("127."):
                    found.append(address)
    except (OSError, ImportError, AttributeError):
        pass
    return found


def box_address(config: dict | None = None) -> str:
    """The box's address for phones: on its own Wi-Fi (appliance/wifi.py,
    no route out there), else the one its route out uses."""
    from .wifi import own_status

    own = own_status((config or {}).get("data_dir"))
    return own.address if own is not None else lan_address()


def join_url(host: str, port: int, config: dict | None = None) -> str:
    """The URL phones open (and the QR code holds)."""
    address = box_address(config) if host in ("", "0.0.0.0", "::") else host
    if ":" in address:
        address = f"[{address}]"
    return f"http://{address}:{port}/"
