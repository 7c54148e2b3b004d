"""Root's record of the owner: its own folder, its own copy of the hash.

``/var/lib/companion-owner`` (root's, mode 0700) holds:

* ``owner.json``: ``{"hash": "scrypt$…"}``, made by root itself from the
  password the request that finished set-up carried;
* ``setup.json``: ``{"open": true|false}``: whether set-up is open *for
  root*.  Open on a box fresh from its image (first boot writes it), after
  the owner confirmed "Reset settings" on the box, and after the physical
  reset; closed as soon as set-up finishes or the box joins a house Wi-Fi.
  No record at all is closed: a box installed by hand has no owner until
  its owner makes one (the physical reset, docs/security.md).

What root does for a request from the service's folder (:func:`allows`):
while set-up is open for root and the box has no owner yet, what set-up
does (time zone, host name, joining a network) and making the owner from
the request's password; everything else, and everything once the box has
an owner, only with the owner's password, compared here with root's copy.
The service's own copy (appliance/owner.py) is never read by root.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from appliance import owner as rules
from companion import durable
from companion.durable import read_json, write_json

log = logging.getLogger("appliance.root.owner")

ROOT_DIR = Path("/var/lib/companion-owner")
OWNER = "owner.json"
SETUP = "setup.json"
#: The physical reset: this file on the card's boot partition (any content).
RESET_FILE = "companion-reset-owner"
BOOT_DIRS = (Path("/boot/firmware"), Path("/boot"))


def _ensure(root_dir: Path) -> Path:
    root_dir = Path(root_dir)
    root_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root_dir


def owner_hash(root_dir=ROOT_DIR) -> str | None:
    record = read_json(Path(root_dir) / OWNER)
    value = record.get("hash") if isinstance(record, dict) else None
    return value if isinstance(value, str) and value.startswith("scrypt$") else None


def setup_open(root_dir=ROOT_DIR) -> bool:
    record = read_json(Path(root_dir) / SETUP)
    return isinstance(record, dict) and record.get("open") is True


def set_setup_open(root_dir=ROOT_DIR, is_open: bool = True) -> None:
    write_json(_ensure(root_dir) / SETUP, {"open": bool(is_open)}, mode=0o600)


def verifies(password, root_dir=ROOT_DIR) -> bool:
    hashed = owner_hash(root_dir)
    return hashed is not None and rules.verify(password, hashed)


def may_set_up(root_dir=ROOT_DIR) -> bool:
    """Set-up's own steps without a password: only while set-up is open for
    root and nobody owns the box yet."""
    return setup_open(root_dir) and owner_hash(root_dir) is None


def allows(request: dict, root_dir=ROOT_DIR) -> bool:
    """Whether a request may do what the owner alone may do: its
    ``owner_password`` matches root's copy of the hash."""
    return verifies(request.get("owner_password"), root_dir)


def make_owner(password, root_dir=ROOT_DIR) -> bool:
    """The owner, from the request that finishes set-up: only while set-up is
    open for root and there is no owner yet; the password checked again."""
    if not may_set_up(root_dir):
        return False
    try:
        password = rules.check_password(password)
    except rules.OwnerError:
        return False
    write_json(_ensure(root_dir) / OWNER, {"hash": rules.hash_password(password)}, mode=0o600)
    log.info("owner: set")
    return True


def close_setup(root_dir=ROOT_DIR) -> None:
    if setup_open(root_dir):
        set_setup_open(root_dir, False)


def forget_owner(root_dir=ROOT_DIR) -> None:
    """The owner forgotten and set-up open again (a reset)."""
    root_dir = _ensure(root_dir)
    durable.remove(root_dir / OWNER)
    set_setup_open(root_dir, True)


def reset_file(boot_dirs=BOOT_DIRS) -> Path | None:
    """The physical reset's file, if one is on the boot partition."""
    for folder in boot_dirs:
        path = Path(folder) / RESET_FILE
        if path.is_file() and not path.is_symlink():
            return path
    return None


def status(root_dir=ROOT_DIR) -> dict:
    return {"owner": owner_hash(root_dir) is not None, "setup_open": setup_open(root_dir)}


def dump(root_dir=ROOT_DIR) -> str:
    return json.dumps(status(root_dir))


def set_owner(password: str, data_dir: Path, root_dir=ROOT_DIR) -> None:
    """The owner's password chosen by root itself (``companion owner``, at a
    root shell: whoever is root already owns the box): root's copy, then the
    service's, made without following a link in its folder."""
    from appliance.datafiles import write_private

    password = rules.check_password(password)
    write_private(Path(data_dir) / rules.RECORD, json.dumps({"hash": rules.hash_password(password)}) + "\n")
    write_json(_ensure(root_dir) / OWNER, {"hash": rules.hash_password(password)}, mode=0o600)
    close_setup(root_dir)


def command(args) -> int:
    """``companion owner``: the owner's password from one line on standard
    input, for a box installed by hand (set-up from a phone makes it on a
    flashed box).  Root only: the service cannot run it."""
    import os
    import sys

    from companion.config import default_data_dir
    from companion.i18n import _

    if os.geteuid() != 0:
        print(_("companion owner: run it as root"), file=sys.stderr)
        return 1
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass(_("Owner password: "))
    else:
        password = sys.stdin.readline().rstrip("\n")
    try:
        set_owner(password, Path(args.data) if args.data else default_data_dir())
    except rules.OwnerError as exc:
        print(f"companion owner: {_(exc.template, **exc.params)}", file=sys.stderr)
        return 1
    print(_("companion owner: the owner password is set"))
    return 0
