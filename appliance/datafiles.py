"""The data folder's small files, which the service and root pass each other.

Set-up's record and requests, the Wi-Fi password and status, the owner's
copy: owner-only (0600), written whole or not at all, after a power cut too,
by the one durable write (:mod:`companion.durable`).  Root writes some of
them into the service's folder, for the service, and reads others there:
then a file is written and read without following any link the service may
have planted, and handed over on its descriptor
(:mod:`appliance.root.safefs`).
"""

from __future__ import annotations

import os
from pathlib import Path

from companion import durable


def write_private(path, text: str, owner: tuple[int, int] | None = None) -> None:
    """Write ``text`` owner-only, durably; as root, for the data folder's
    owner (or ``owner``), without following a link."""
    path = Path(path)
    if os.geteuid() == 0:
        from .root import safefs

        safefs.write_file(path.parent, path.name, text.encode("utf-8"), mode=0o600, owner=owner)
        return
    durable.write(path, text.encode("utf-8"), mode=0o600)


def read_private(path, limit: int = 64 * 1024) -> bytes | None:
    """A small file of the data folder, or None.  Root reads it without
    following a link (a ``wifi-password`` pointing at ``/etc/shadow`` is
    no file at all to root)."""
    path = Path(path)
    if os.geteuid() == 0:
        from .root import safefs

        return safefs.read_file(path.parent, path.name, limit)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError:
        return None
    return raw if len(raw) <= limit else None


def remove(path) -> None:
    """Remove a file of the data folder (a link itself, never what it points
    at), durably; missing is fine."""
    path = Path(path)
    if os.geteuid() == 0:
        from .root import safefs

        safefs.unlink(path.parent, path.name)
        return
    durable.remove(path)
