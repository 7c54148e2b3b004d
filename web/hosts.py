"""Which ``Host`` the box answers to: a defence against DNS rebinding.

A web page on a phone (any site at all) can point its own host name at the
box's address and then read the box's answers as if they were its own: the
browser sees one site.  The box tells such requests apart by their ``Host``
header, which then names the page's site, not the box, and refuses them
(docs/api.md, "Limits and hygiene").

The box answers to: ``localhost`` and any loopback address, the host of the
URL it shows (``config["url"]``, the QR code's), its own host name and its
``.local`` mDNS name, the names in the ``allowed_hosts`` setting (a name the
operator gives it on the network), and any address of its own network
interfaces.  A request without a ``Host`` header (HTTP/1.0 tools; a browser
always sends one) is answered.  The check is a set lookup; the list of the
box's addresses is read again only when an unknown address is asked for,
at most every :data:`REFRESH_S` seconds.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from urllib.parse import urlsplit

REFRESH_S = 30.0


def split_host(value: str) -> str:
    """The host of a ``Host`` header, lower case, without port, brackets or final dot."""
    host = value.strip().lower()
    if host.startswith("["):                        # [::1]:8000
        return host[1:host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:                        # name:8000 (a bare IPv6 has several)
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def own_addresses() -> set[str]:
    """Every address of this machine's network interfaces (IPv4 and IPv6)."""
    try:
        import ifaddr        # zeroconf's own dependency: present wherever mDNS works
    except ImportError:
        return set()
    found = set()
    try:
        for adapter in ifaddr.get_adapters():
            for ip in adapter.ips:
                address = ip.ip[0] if isinstance(ip.ip, tuple) else ip.ip
                found.add(str(address).split("%")[0].lower())
    except OSError:
        pass
    return found


class HostCheck:
    """``allows(host_header)``: whether the box answers to that name."""

    def __init__(self, config: dict, addresses=own_addresses, clock=time.monotonic):
        self.config = config
        self._addresses = addresses
        self._clock = clock
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._read_at = -REFRESH_S
        hostname = socket.gethostname().split(".")[0].lower()
        self._names = {"localhost", hostname, f"{hostname}.local"}
        try:
            from .mdns import host_label
            self._names.add(f"{host_label().lower()}.local")
        except Exception:
            pass
        self._names.update(split_host(str(name)) for name in config.get("allowed_hosts") or ())

    def allows(self, header: str | None) -> bool:
        if header is None:
            return True
        host = split_host(header)
        if host in self._names or host.endswith(".localhost") or host == self._url_host():
            return True
        if host == f"{socket.gethostname().split('.')[0].lower()}.local":
            return True                 # renamed since the start (the Setup page names the box)
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False                                # a name we do not know
        if address.is_loopback:
            return True
        return self._is_own(str(address))

    def _url_host(self) -> str:
        url = self.config.get("url") or ""
        return split_host(urlsplit(url).netloc) if url else ""

    def _is_own(self, address: str) -> bool:
        with self._lock:
            if address in self._known:
                return True
            now = self._clock()
            if now - self._read_at < REFRESH_S:
                return False
            self._read_at = now
        known = self._addresses()          # outside the lock: it asks the kernel
        with self._lock:
            self._known = known
            return address in known
