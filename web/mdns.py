"""The table on the local network under its friendly name (mDNS / DNS-SD).

    stop = start_mdns("companion", 8000)     # never raises; returns at once
    ...
    stop()                                    # withdraws the name; never raises

Phones and laptops that browse ``_http._tcp`` services (the "Bonjour"
list of a browser or a network tool, ``avahi-browse -r _http._tcp``) then
see "companion" with the box's address and port.  python-zeroconf does the
work in pure Python; where it is missing, or the network refuses the
multicast socket (no interface up, a container), the table simply is not
advertised: the QR code and the printed URL still work.

Registering probes the network for a clash first (about a second), so it
runs on its own thread; a clash gets a new name ("companion (2)") rather
than an error.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from typing import Callable

log = logging.getLogger("companion.mdns")

SERVICE = "_http._tcp.local."
MAX_LABEL = 63          # bytes in one DNS label


def instance_name(name: str) -> str:
    """A DNS-SD instance label from the friendly name: printable, no dots
    (a dot would split the label), at most 63 bytes of UTF-8."""
    text = "".join(ch for ch in str(name or "") if ch.isprintable()).replace(".", "-").strip()
    text = text or "companion"
    while len(text.encode("utf-8")) > MAX_LABEL:
        text = text[:-1]
    return text


def host_label() -> str:
    """This machine's host name as one mDNS label (``raspberrypi``)."""
    label = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0]).strip("-")
    return label[:MAX_LABEL] or "companion"


def _addresses() -> list[str]:
    from zeroconf import get_all_addresses

    return [a for a in get_all_addresses() if not a.startswith("127.")]


def start_mdns(name: str, port: int, *, zeroconf_factory=None) -> Callable[[], None]:
    """Advertise ``name`` as an HTTP service on ``port``; return the function
    that withdraws it.  Never raises: without zeroconf or a usable network it
    logs why and returns a function that does nothing."""
    try:
        from zeroconf import IPVersion, ServiceInfo, Zeroconf

        addresses = _addresses()
        if not addresses:
            log.warning("mDNS: no network address to advertise (not on a network?)")
            return _nothing
        label = instance_name(name)
        info = ServiceInfo(
            SERVICE, f"{label}.{SERVICE}",
            addresses=[socket.inet_aton(a) for a in addresses], port=int(port),
            properties={"path": "/"}, server=f"{host_label()}.local.")
        zc = (zeroconf_factory or Zeroconf)(ip_version=IPVersion.V4Only)
    except Exception as exc:        # ImportError, OSError from the multicast socket, ...
        log.warning("mDNS: not advertising the table (%s: %s)", type(exc).__name__, exc)
        return _nothing

    done = threading.Event()

    def register():
        try:
            zc.register_service(info, allow_name_change=True)
            log.info("mDNS: advertised as %r on port %s (%s)", info.name, port, ", ".join(addresses))
        except Exception as exc:
            log.warning("mDNS: registering %r failed (%s: %s)", label, type(exc).__name__, exc)
        finally:
            done.set()

    threading.Thread(target=register, name="companion-mdns", daemon=True).start()

    def stop() -> None:
        try:
            done.wait(5)
            try:
                zc.unregister_service(info)
            finally:
                zc.close()
        except Exception as exc:
            log.warning("mDNS: withdrawing failed (%s: %s)", type(exc).__name__, exc)

    return stop


def _nothing() -> None:
    return None
