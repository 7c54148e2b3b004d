"""The box's own Wi-Fi: the pure part (issue 23).

At a table with no network the box knows (a club, a café, a holiday house)
phones cannot reach it; guest networks often keep phones apart too.  So the
box may raise its own access point: WPA2, a per-box password, DHCP, every
DNS name answered with the box, no internet.  This module holds what that
decision and those settings are, with no system call in it; running
NetworkManager or hostapd and dnsmasq is :mod:`appliance.root.wifi`'s job (as
root, in its own unit: the companion's own service keeps its hardening).

The two sides talk through two files of the data folder:

* ``wifi-password``: the per-box password, drawn once (unless the
  ``wifi_password`` setting fixes it) and kept, so phones that joined once
  join again;
* ``wifi.json``: what the system side did at this start (``mode`` "own" with
  the network's name, password and the box's address on it, or "join").
  The box's Phones screen and the web portal read it (:func:`read_status`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from .datafiles import read_private, remove, write_private

MODES = ("auto", "own", "join")
STATUS_FILE = "wifi.json"
PASSWORD_FILE = "wifi-password"
# NetworkManager's hotspot uses 10.42.0.1/24; the hostapd path takes the same.
ADDRESS = "10.42.0.1"
PREFIX = 24
DHCP_RANGE = ("10.42.0.10", "10.42.0.250")
# No 0/O, 1/l/I: read off a screen and typed by hand when a phone cannot scan.
PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
PASSWORD_LENGTH = 12            # ~60 bits; short enough for the panel's QR code
# Probes that phones send to learn whether a network reaches the internet
# (web/portal.py answers them; here so both sides agree on the names).
PROBE_HOSTS = ("connectivitycheck.gstatic.com", "clients3.google.com", "captive.apple.com",
               "www.msftconnecttest.com", "www.msftncsi.com", "detectportal.firefox.com")


#: The 2.4 GHz channels an access point may use in every country, even before
#: the system knows which country it is in (the "world" regulatory domain:
#: 12 and 13 are listen-only there, and not allowed at all in the US).  Left
#: to itself, NetworkManager picks a hotspot's channel at random among 1, 6,
#: 11 and 13, so one start in four never came up (seen in the VM).
CHANNELS = range(1, 12)


class WifiSettingError(ValueError):
    """A Wi-Fi setting that cannot work; its text says which and why."""


@dataclass(frozen=True)
class Settings:
    mode: str                  # "auto" | "own" | "join"
    ssid: str                  # the network's name when the box raises its own
    password: str | None       # fixed by the settings, else drawn and kept
    wait_s: float              # auto: how long a known network has to appear
    country: str | None        # regulatory country (hostapd), e.g. "FR"
    port: int                  # the box's web port (the portal sends phones there)
    backend: str = "auto"      # "auto" (NetworkManager where it runs) | "networkmanager" | "hostapd"
    channel: int = 6           # 2.4 GHz channel, fixed (see CHANNELS)


def settings(config: dict) -> Settings:
    """The Wi-Fi settings out of :func:`companion.config.load`'s dict, checked."""
    mode = str(config.get("wifi") or "auto").strip().lower()
    if mode not in MODES:
        raise WifiSettingError(f"wifi = {mode!r}: use \"auto\", \"own\" or \"join\"")
    ssid = config.get("wifi_ssid") or default_ssid(str(config.get("name") or "companion"))
    ssid = str(ssid)
    if not 1 <= len(ssid.encode("utf-8")) <= 32:
        raise WifiSettingError("wifi_ssid: a network's name is 1 to 32 bytes")
    password = config.get("wifi_password")
    if password is not None:
        password = str(password)
        check_password(password)
    country = config.get("wifi_country")
    if country is not None and not (len(str(country)) == 2 and str(country).isalpha()):
        raise WifiSettingError("wifi_country: two letters, such as \"FR\"")
    backend = str(config.get("wifi_backend") or "auto").strip().lower()
    if backend not in ("auto", "networkmanager", "hostapd"):
        raise WifiSettingError(f"wifi_backend = {backend!r}: use \"auto\", \"networkmanager\" or \"hostapd\"")
    try:
        channel = int(config.get("wifi_channel", 6))
    except (TypeError, ValueError):
        channel = 0
    if channel not in CHANNELS:
        raise WifiSettingError("wifi_channel: 1 to 11 (channels every country allows)")
    return Settings(mode=mode, ssid=ssid, password=password, backend=backend, channel=channel,
                    wait_s=float(config.get("wifi_wait_s", 30.0)),
                    country=str(country).upper() if country else None,
                    port=int(config.get("port") or 8000))


def check_password(password: str) -> None:
    """WPA2's passphrase: 8 to 63 printable ASCII characters."""
    if not 8 <= len(password) <= 63 or not all(" " <= ch <= "~" for ch in password):
        raise WifiSettingError("wifi_password: 8 to 63 printable ASCII characters (WPA2)")


def default_ssid(name: str, machine_id: str | None = None) -> str:
    """``<name>-xxxx``: the friendly name and four letters of this machine,
    so two boxes in one room raise two networks."""
    if machine_id is None:
        try:
            machine_id = Path("/etc/machine-id").read_text().strip()
        except OSError:
            machine_id = ""
    suffix = hashlib.sha256(machine_id.encode()).hexdigest()[:4]
    base = "".join(ch for ch in name if ch.isprintable())[:20] or "companion"
    # Short enough that the QR code with a drawn password fits the panel.
    while len(base) > 1 and not fits_panel_qr(f"{base}-{suffix}", "x" * PASSWORD_LENGTH):
        base = base[:-1]
    return f"{base.rstrip(' -')}-{suffix}"


#: What the panel's QR code holds at 2 px per module (hardware/ui/common.py,
#: ``qr_image``): version 3, 29 modules, at error level L: 53 bytes.  A
#: bigger code does not fit 64 px, and 1-px modules do not scan.
QR_BYTES = 53


def fits_panel_qr(ssid: str, password: str) -> bool:
    """The ``WIFI:`` text of this network fits the box's QR code (counted in
    UTF-8: never fewer bytes than the code's own encoding)."""
    return len(wifi_qr_payload(ssid, password).encode("utf-8")) <= QR_BYTES


def decide(mode: str, *, has_radio: bool, joined: bool) -> str:
    """What the box does with its Wi-Fi: "own" (raise its access point) or
    "join" (leave the system's Wi-Fi alone, exactly as before this feature).

    ``joined``: the radio reached a known network within the wait (auto).
    No radio: nothing to raise, whatever the setting."""
    if mode not in MODES:
        raise WifiSettingError(f"wifi = {mode!r}: use \"auto\", \"own\" or \"join\"")
    if not has_radio or mode == "join":
        return "join"
    if mode == "own":
        return "own"
    return "join" if joined else "own"


def draw_password(rng=secrets) -> str:
    return "".join(rng.choice(PASSWORD_ALPHABET) for _ in range(PASSWORD_LENGTH))


def box_password(data_dir: Path, fixed: str | None = None) -> str:
    """The setting's password, else the one kept in ``wifi-password``, else
    a new one, kept there (owner-only) for the next starts."""
    if fixed:
        return fixed
    path = Path(data_dir) / PASSWORD_FILE
    try:
        kept = (read_private(path, 256) or b"").decode("ascii").strip()
        check_password(kept)
        return kept
    except (UnicodeError, WifiSettingError):
        pass
    password = draw_password()
    write_private(path, password + "\n")
    return password


def wifi_qr_payload(ssid: str, password: str) -> str:
    """The ``WIFI:`` text phones' cameras join a network from (the ZXing
    format that Android and iOS read): ``\\ ; , : "`` escaped with a backslash."""
    return f"WIFI:T:WPA;S:{_escape(ssid)};P:{_escape(password)};;"


def _escape(value: str) -> str:
    return "".join("\\" + ch if ch in '\\;,:"' else ch for ch in value)


def parse_wifi_qr(text: str) -> dict:
    """The fields of a ``WIFI:`` text (the inverse of :func:`wifi_qr_payload`;
    the VM check configures the phone from what the QR code says)."""
    if not text.startswith("WIFI:"):
        raise ValueError("not a WIFI: code")
    fields: dict = {}
    key, current, i, body = None, [], 0, text[5:]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            current.append(body[i + 1])
            i += 2
            continue
        if ch == ":" and key is None:
            key, current = "".join(current), []
        elif ch == ";":
            if key is not None:
                fields[key] = "".join(current)
            key, current = None, []
        else:
            current.append(ch)
        i += 1
    return fields


# -- the status file: what the system side did at this start -----------------------

@dataclass(frozen=True)
class Status:
    mode: str                       # "own" | "join"
    ssid: str | None = None
    password: str | None = None
    address: str | None = None      # the box's address on its own network
    backend: str | None = None      # "networkmanager" | "hostapd"
    reason: str | None = None       # why (no radio, a known network, the setting)

    @property
    def own(self) -> bool:
        return self.mode == "own" and bool(self.ssid and self.password and self.address)

    def qr_payload(self) -> str | None:
        return wifi_qr_payload(self.ssid, self.password) if self.own else None


def write_status(data_dir: Path, status: Status, owner: tuple[int, int] | None = None) -> None:
    data = {k: v for k, v in status.__dict__.items() if v is not None}
    write_private(Path(data_dir) / STATUS_FILE, json.dumps(data) + "\n", owner)


def clear_status(data_dir: Path) -> None:
    remove(Path(data_dir) / STATUS_FILE)


_cache: dict[str, tuple[tuple, Status | None]] = {}


def read_status(data_dir) -> Status | None:
    """This start's Wi-Fi status, or None (no file: the Wi-Fi is the
    system's, as before).  Cheap to call often: one ``stat`` unless the file
    changed."""
    if not data_dir:
        return None
    path = Path(data_dir) / STATUS_FILE
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _cache.get(str(path))
    if cached and cached[0] == key:
        return cached[1]
    try:
        raw = json.loads((read_private(path) or b"").decode("utf-8"))
        status = Status(**{k: raw.get(k) for k in Status.__dataclass_fields__})
        if status.mode not in ("own", "join"):
            status = None
    except (OSError, ValueError, TypeError):
        status = None
    _cache[str(path)] = (key, status)
    return status


def own_status(data_dir) -> Status | None:
    """The status when the box runs its own network, else None."""
    status = read_status(data_dir)
    return status if status is not None and status.own else None
