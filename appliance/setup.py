"""Set-up from a phone: the pure part (what set-up mode is, what a request holds).

A box that has no settings yet is in *set-up mode*: its panel shows its own
Wi-Fi's QR code with "scan to set up", and a phone on that network lands on
the Setup page (web/setup.py): the table's name, its language, its time
zone, and "Join a Wi-Fi" (the networks the box saw, a password, "Join").

Set-up mode, precisely (:func:`in_setup_mode`): the data folder's record
``setup.json`` says ``{"done": false}`` (written by "Reset settings" in the
box's menu), or there is no record and no ``companion.toml`` either (a box
fresh from its image).  A box that was set up by hand (a ``companion.toml``)
is never in set-up mode unless someone resets it on its buttons.

The companion's own service is not root and keeps its hardening; joining a
network, the time zone, the host name and SSH need root.  So the web side
(the table PIN) only writes validated request files into the data folder,
and the root side (appliance/root/setup_apply.py) reads them as hostile input,
checks them again with the same functions, and writes what happened:

* ``setup-join.json``: ``{"ssid", "password"}``: read by ``companion wifi``
  (the process that holds the box's own network), which drops its network,
  tries the other one, and on failure raises its own again;
* ``setup-system.json``: ``{"timezone", "hostname", "ssh_key"}``, each
  optional: applied by ``companion setup-apply`` (companion-setup.path);
* ``setup-status.json``: the join's outcome (joining, joined with the new
  address, failed and why), read by the panel and the page;
* ``wifi-networks.json``: the networks the radio saw before raising its own;
* ``setup-system-status.json``: what became of the time zone and SSH.

Nothing here runs a command; everything is a plain function, tested alone.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from pathlib import Path

from companion import durable
from companion.i18n import LANGUAGES, N_

from .datafiles import read_private, remove, write_private  # noqa: F401 (write_private: the web's and root's too)

RECORD = "setup.json"
JOIN_REQUEST = "setup-join.json"
SYSTEM_REQUEST = "setup-system.json"
STATUS = "setup-status.json"
NETWORKS = "wifi-networks.json"
SYSTEM_STATUS = "setup-system-status.json"
SETTINGS = "companion.toml"
#: The settings file a reset sets aside (kept, never read): nothing typed is lost.
SET_ASIDE = "companion.toml.before-reset"

#: A failed join gives the box its own network back within this many seconds
#: of "Join" (NetworkManager's 30 s wait for the handshake, the access point's
#: own start, and slack for a slow Pi).  The page and the docs say it.
BACK_WITHIN_S = 90
JOIN_WAIT_S = 30
MAX_NAME = 40
MAX_REQUEST = 32 * 1024
ZONEINFO = Path("/usr/share/zoneinfo")

#: Why a join failed, as the page and the panel say it.
REASONS = {
    "wrong_password": N_("wrong password"),
    "not_found": N_("network not found"),
    "failed": N_("could not join"),
}


class SetupError(ValueError):
    """A field that cannot be used; ``field`` names it, ``template`` and
    ``params`` say why (translated by whoever shows it)."""

    def __init__(self, field: str, template: str, **params):
        super().__init__(template.format(**params) if params else template)
        self.field, self.template, self.params = field, template, params


# -- set-up mode ------------------------------------------------------------------------------

def read_json(path: Path, limit: int = MAX_REQUEST):
    """A small JSON file, or None (missing, too big, not JSON, or, read by
    root, a link: :func:`appliance.datafiles.read_private`)."""
    raw = read_private(Path(path), limit)
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeError):
        return None


def in_setup_mode(data_dir) -> bool:
    if not data_dir:
        return False
    folder = Path(data_dir)
    record = read_json(folder / RECORD)
    if isinstance(record, dict) and isinstance(record.get("done"), bool):
        return not record["done"]
    return not (folder / SETTINGS).exists()


def mark_done(data_dir, done: bool = True) -> None:
    write_private(Path(data_dir) / RECORD, json.dumps({"done": bool(done)}) + "\n")


#: "Reset settings" on the box's buttons waits this long for the owner's
#: confirmation (a phone, the owner's password: web/owner.py).
RESET_WINDOW_S = 600
RESET_ASKED = "reset-asked.json"


def ask_reset(data_dir, now: float | None = None) -> None:
    """The box's buttons asked for a reset: the owner confirms it on a phone."""
    import time

    write_private(Path(data_dir) / RESET_ASKED, json.dumps({"at": time.time() if now is None else now}) + "\n")


def reset_asked(data_dir, now: float | None = None) -> bool:
    import time

    record = read_json(Path(data_dir) / RESET_ASKED)
    at = record.get("at") if isinstance(record, dict) else None
    now = time.time() if now is None else now
    return isinstance(at, (int, float)) and 0 <= now - at <= RESET_WINDOW_S


def reset(data_dir) -> None:
    """"Reset settings": the settings file set aside (never deleted) and the
    record back to "not done".  Games, the roster, the Wi-Fi password stay."""
    folder = Path(data_dir)
    settings = folder / SETTINGS
    if settings.exists():
        durable.move(settings, folder / SET_ASIDE)
    for name in (STATUS, JOIN_REQUEST, SYSTEM_STATUS, RESET_ASKED):
        remove(folder / name)
    mark_done(data_dir, False)


# -- the fields -------------------------------------------------------------------------------

def check_name(value) -> str:
    name = str(value or "").strip()
    if not 1 <= len(name) <= MAX_NAME or not all(ch.isprintable() for ch in name):
        raise SetupError("name", N_("the table's name: 1 to {n} printable characters"), n=MAX_NAME)
    return name


def hostname_for(name: str) -> str:
    """The box's host name from the table's name (``<host>.local`` on the
    network): ASCII letters, digits and hyphens, at most 63."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    label = re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")[:63].strip("-")
    return label or "companion"


def check_language(value) -> str:
    language = str(value or "").strip().lower()
    if language not in LANGUAGES:
        raise SetupError("language", N_("language: one of {choices}"), choices=", ".join(LANGUAGES))
    return language


_ZONE = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$")


def check_timezone(value, zoneinfo: Path = ZONEINFO) -> str:
    """A name of the system's time-zone database (``Europe/Paris``): a
    plain relative path to a TZif file there, nothing else."""
    zone = str(value or "").strip()
    ok = bool(_ZONE.fullmatch(zone)) and len(zone) <= 64 and ".." not in zone
    if ok:
        path = Path(zoneinfo) / zone
        try:
            ok = path.is_file() and path.resolve().is_relative_to(Path(zoneinfo).resolve())
            with open(path, "rb") as fh:
                ok = ok and fh.read(4) == b"TZif"
        except OSError:
            ok = False
    if not ok:
        raise SetupError("timezone", N_("time zone: a name such as Europe/Paris"))
    return zone


def check_ssid(value) -> str:
    ssid = value if isinstance(value, str) else ""
    if not 1 <= len(ssid.encode("utf-8")) <= 32 or any(ord(ch) < 32 or ord(ch) == 127 for ch in ssid):
        raise SetupError("ssid", N_("network: a name of 1 to 32 bytes, no control characters"))
    return ssid


def check_wifi_password(value) -> str:
    """WPA2's key: a passphrase of 8 to 63 printable ASCII characters, or
    64 hex digits; empty for an open network."""
    if value is not None and not isinstance(value, str):
        raise SetupError("password", N_("password: 8 to 63 characters (letters, digits, signs; no accents), "
                                        "or 64 hex digits"))
    password = value or ""
    if password == "":
        return password
    if len(password) == 64 and all(ch in "0123456789abcdefABCDEF" for ch in password):
        return password
    if 8 <= len(password) <= 63 and all(" " <= ch <= "~" for ch in password):
        return password
    raise SetupError("password", N_("password: 8 to 63 characters (letters, digits, signs; no accents), "
                                    "or 64 hex digits"))


SSH_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def check_ssh_key(value) -> str:
    """One public key line (ed25519, ECDSA or RSA), as ``authorized_keys``
    takes it with no options: type, base64 blob whose own type matches,
    an optional plain comment.  Returned normalised."""
    text = value if isinstance(value, str) else ""
    bad = SetupError("ssh_key", N_("SSH key: paste one public key line (ssh-ed25519, ecdsa-sha2-… or ssh-rsa)"))
    text = text.strip()
    if not text or len(text) > 8192 or "\n" in text or "\r" in text or "\0" in text:
        raise bad
    parts = text.split(None, 2)
    if len(parts) < 2 or parts[0] not in SSH_TYPES:
        raise bad
    kind, blob = parts[0], parts[1]
    comment = parts[2] if len(parts) == 3 else ""
    if comment and not all(" " <= ch <= "~" for ch in comment):
        raise bad
    try:
        raw = base64.b64decode(blob, validate=True)
        (n,) = struct.unpack(">I", raw[:4])
        inner = raw[4:4 + n].decode("ascii")
    except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
        raise bad from None
    if inner != kind or len(raw) < 4 + n + 16:
        raise bad
    return " ".join(p for p in (kind, blob, comment) if p)


def check_join(raw) -> dict:
    """A join request (from the page, or read back from its file)."""
    if not isinstance(raw, dict):
        raise SetupError("ssid", N_("network: pick one"))
    return {"ssid": check_ssid(raw.get("ssid")), "password": check_wifi_password(raw.get("password", ""))}


def check_system(raw) -> dict:
    """A system request: each of ``timezone``, ``hostname``, ``ssh_key`` optional."""
    if not isinstance(raw, dict):
        return {}
    out = {}
    if raw.get("timezone"):
        out["timezone"] = check_timezone(raw["timezone"])
    if raw.get("hostname"):
        host = str(raw["hostname"])
        if hostname_for(host) != host:
            raise SetupError("name", N_("the table's name: 1 to {n} printable characters"), n=MAX_NAME)
        out["hostname"] = host
    if raw.get("ssh_key"):
        out["ssh_key"] = check_ssh_key(raw["ssh_key"])
    return out


# -- the networks the box saw -------------------------------------------------------------------

def parse_scan(text: str) -> list[dict]:
    """``nmcli -t -f SSID,SIGNAL,SECURITY dev wifi list``: one network per
    name (the strongest), hidden ones left out, strongest first.  nmcli's
    terse form escapes ``:`` and ``\\`` in a field with a backslash."""
    best: dict[str, dict] = {}
    for line in text.splitlines():
        fields, cur, i = [], [], 0
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                cur.append(line[i + 1])
                i += 2
                continue
            if ch == ":":
                fields.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
            i += 1
        fields.append("".join(cur))
        if len(fields) < 3:
            continue
        ssid, signal, security = fields[0], fields[1], ":".join(fields[2:])
        try:
            ssid = check_ssid(ssid)
            strength = max(0, min(100, int(signal)))
        except (SetupError, ValueError):
            continue
        secured = security.strip() not in ("", "--")
        if ssid not in best or best[ssid]["signal"] < strength:
            best[ssid] = {"ssid": ssid, "signal": strength, "secured": secured}
    return sorted(best.values(), key=lambda n: (-n["signal"], n["ssid"]))


def read_networks(data_dir) -> list[dict]:
    raw = read_json(Path(data_dir) / NETWORKS) if data_dir else None
    out = []
    for item in raw if isinstance(raw, list) else []:
        try:
            out.append({"ssid": check_ssid(item.get("ssid")), "signal": int(item.get("signal", 0)),
                        "secured": bool(item.get("secured"))})
        except (SetupError, AttributeError, TypeError, ValueError):
            continue
    return out[:50]


def classify_failure(output: str) -> str:
    """NetworkManager's words for why a join failed: "wrong_password" (it
    asked for the secrets again: the 4-way handshake failed or timed out),
    "not_found" (no such network in reach), else "failed"."""
    text = output.lower()
    if "no network with ssid" in text or "not found" in text:
        return "not_found"
    if "secrets were required" in text or "4-way" in text or "no-secrets" in text or "psk" in text:
        return "wrong_password"
    return "failed"


def read_status(data_dir) -> dict | None:
    """The join's outcome: ``{"state": "joining"|"joined"|"failed", ...}``."""
    raw = read_json(Path(data_dir) / STATUS) if data_dir else None
    if not isinstance(raw, dict) or raw.get("state") not in ("joining", "joined", "failed"):
        return None
    if raw.get("reason") is not None and raw["reason"] not in REASONS:
        raw["reason"] = "failed"
    return raw
