"""The box's owner: a password apart from the table PIN.

The PIN is on the panel for everyone at the table: it starts games and
enters bids.  The *system* (updates, a restore, SSH keys, release keys, the
Wi-Fi after set-up) is the owner's, who chose a password when set-up ended
(``owner_password`` of ``POST /api/setup``).  Pages send it in a form, the
API in the header ``X-Owner-Password`` (web/guards.py, ``owner_required``).

The rule for a password (:func:`check_password`): 10 to 128 characters,
any characters; not the table PIN's kind (it cannot be digits only).

It is kept only as a slow salted hash (:func:`hash_password`:
``hashlib.scrypt``, N=2^14, r=8, p=1, a 16-byte salt: about 16 MiB and a
fraction of a second per comparison on a Pi Zero 2 W, which also bounds
how fast anyone can guess).  Two copies of the hash, each trusted by one
side only:

* the service's, ``owner.json`` in its data folder: the web routes compare
  against it (:func:`read_hash`);
* root's, in its own folder (appliance/root/owner.py): root compares every
  password a request for root carries against that one, never against the
  service's copy, so that nothing the service writes can make root do
  more than the owner asked.

Forgetting the password is a physical act read by root (docs/security.md,
"The owner"): a file named ``companion-reset-owner`` on the card's boot
partition.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from pathlib import Path

from companion.i18n import N_

MIN_LEN = 10
MAX_LEN = 128
RECORD = "owner.json"           # the service's copy of the hash, in its data folder
HEADER = "X-Owner-Password"

# scrypt's cost: 2^14 x 8 x 128 bytes = 16 MiB of memory per comparison.
_N, _R, _P = 1 << 14, 8, 1
_MAXMEM = 64 * 1024 * 1024


class OwnerError(ValueError):
    """A password that cannot be the owner's; ``template`` and ``params`` say why."""

    def __init__(self, template: str, **params):
        super().__init__(template.format(**params) if params else template)
        self.field, self.template, self.params = "owner_password", template, params


RULE = N_("owner password: {low} to {high} characters, not only digits")


def check_password(value) -> str:
    """The password as given (never stripped: spaces count), or OwnerError."""
    if not isinstance(value, str) or not MIN_LEN <= len(value) <= MAX_LEN or value.isdigit() \
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise OwnerError(RULE, low=MIN_LEN, high=MAX_LEN)
    return value


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def hash_password(password: str, salt: bytes | None = None) -> str:
    """``scrypt$N$r$p$salt$hash``: what is kept, never the password."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_N, r=_R, p=_P, maxmem=_MAXMEM, dklen=32)
    return f"scrypt${_N}${_R}${_P}${_b64(salt)}${_b64(digest)}"


def verify(password, hashed) -> bool:
    """Whether ``password`` is the one ``hashed`` was made from.  A record that
    is not one of ours (or asks for an absurd cost) matches nothing."""
    if not isinstance(password, str) or not isinstance(hashed, str) or len(password) > MAX_LEN:
        return False
    try:
        kind, n, r, p, salt, digest = hashed.split("$")
        n, r, p = int(n), int(r), int(p)
        salt, digest = base64.b64decode(salt, validate=True), base64.b64decode(digest, validate=True)
    except ValueError:
        return False
    if kind != "scrypt" or not (2 <= n <= 1 << 16 and 1 <= r <= 16 and 1 <= p <= 4) or len(digest) != 32:
        return False
    try:
        mine = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=32)
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(mine, digest)


# -- the service's copy, in its data folder ------------------------------------------------------

def read_hash(data_dir) -> str | None:
    try:
        with open(Path(data_dir) / RECORD, "rb") as fh:
            record = json.loads(fh.read(4096).decode("utf-8"))
    except (OSError, ValueError, UnicodeError, TypeError):
        return None
    value = record.get("hash") if isinstance(record, dict) else None
    return value if isinstance(value, str) and value.startswith("scrypt$") else None


def write_hash(data_dir, hashed: str) -> None:
    """Owner-only and durable (a power cut leaves the old record or the new)."""
    from companion.durable import write_json

    write_json(Path(data_dir) / RECORD, {"hash": hashed}, mode=0o600)


def forget(data_dir) -> None:
    from companion import durable

    durable.remove(Path(data_dir) / RECORD)
