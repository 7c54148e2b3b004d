"""Carry over, into a new release's environment, what the bundle would install again.

An update bundle holds every wheel the release needs, but between two
releases most of them are the same files: only the companion's own wheel
changes.  Unpacking and byte-compiling thirty wheels is most of an update's
minutes on a Pi, so :func:`carry_over` links a dependency's installed files
from the running release into the new one instead, when, and only when, they
are provably what the bundle's wheel would install:

* the wheel's ``RECORD`` and the installed ``RECORD`` name the same files
  with the same SHA-256, and
* every one of those files on the card still has that SHA-256 (a file the
  card damaged is not carried over: its wheel is installed afresh).

What pip adds at install time comes along: the byte-compiled ``.pyc`` files
(a release folder is root's, so the service could never write them itself),
``INSTALLER``/``REQUESTED``/``direct_url.json``, and the console scripts,
whose first line names their own environment and is rewritten for the new
one.  Files are hard links (same card, no second copy); a link is never
written through (pip and Python replace files, they do not rewrite them), so
removing either release leaves the other whole.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import zipfile
from pathlib import Path, PurePosixPath

# What pip writes into a dist-info at install time, never in the wheel's RECORD.
_ADDED = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _record(text: str) -> dict[str, str]:
    """``RECORD`` as {path: "sha256=..." or ""}."""
    return {row[0]: (row[1] if len(row) > 1 else "") for row in csv.reader(io.StringIO(text)) if row}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def _wheel_record(wheel: Path) -> tuple[str, dict[str, str]] | None:
    """The wheel's dist-info folder and RECORD, or None for a wheel we do not carry over."""
    with zipfile.ZipFile(wheel) as z:
        records = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
        if len(records) != 1:
            return None
        record = _record(z.read(records[0]).decode("utf-8"))
    if any(".data/" in path for path in record):   # scripts or data outside site-packages: install it
        return None
    return records[0].split("/")[0], record


def _plan(wheel: Path, old_site: Path) -> list[str] | None:
    """The installed files (RECORD paths) to carry over, or None if the wheel must be installed."""
    found = _wheel_record(wheel)
    if found is None:
        return None
    dist_info, want = found
    installed_record = old_site / dist_info / "RECORD"
    try:
        have = _record(installed_record.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    for path, digest in want.items():
        if path == f"{dist_info}/RECORD":
            continue
        if not digest or have.get(path) != digest:
            return None
    for path, digest in have.items():
        pure = PurePosixPath(path)
        if path in want or pure.suffix == ".pyc" or (pure.parent.name == dist_info and pure.name in _ADDED):
            continue
        if pure.parts[:3] == ("..", "..", "..") and pure.parts[3:4] == ("bin",) and len(pure.parts) == 5:
            continue                                   # a console script pip made from entry_points.txt
        return None
    try:
        for path, digest in want.items():
            if digest and _digest(old_site / path) != digest:
                return None
        return [p for p in have if (old_site / p).is_file()]
    except OSError:
        return None


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:                 # another file system, or links refused: a copy does as well
        shutil.copy2(src, dest)


def _script(src: Path, dest: Path, old_env: Path, new_env: Path) -> None:
    """A console script, its ``#!`` line naming the new environment's Python."""
    data = src.read_bytes()
    first, _, rest = data.partition(b"\n")
    # A release installed the old way is reached through a link
    # (releases/legacy/venv -> /opt/companion/venv): its scripts name the real path.
    for old in {str(old_env).encode(), str(old_env.resolve()).encode()}:
        if first.startswith(b"#!") and old in first:
            data = first.replace(old, str(new_env).encode()) + b"\n" + rest
            break
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    os.chmod(dest, 0o755)


def site_packages(env: Path) -> Path | None:
    found = sorted(env.glob("lib/python3*/site-packages"))
    return found[0] if len(found) == 1 else None


def carry_over(wheels: list[Path], old_env: Path, new_env: Path) -> list[Path]:
    """Link what can be carried over from ``old_env`` into ``new_env``; the wheels left to install."""
    old_site, new_site = site_packages(old_env), site_packages(new_env)
    if old_site is None or new_site is None or old_env.resolve() == new_env.resolve():
        return list(wheels)
    left = []
    for wheel in wheels:
        try:
            plan = _plan(wheel, old_site)
        except (OSError, zipfile.BadZipFile, UnicodeDecodeError, csv.Error):
            plan = None
        if plan is None:
            left.append(wheel)
            continue
        for path in plan:
            pure = PurePosixPath(path)
            if pure.parts[0] == "..":
                _script(old_env / "bin" / pure.name, new_env / "bin" / pure.name, old_env, new_env)
            else:
                _place(old_site / path, new_site / path)
    return left
