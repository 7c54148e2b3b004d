"""Carry over, into a new release's environment, what the bundle would install again.

An update bundle holds every wheel the release needs, but between two
releases most of them are the same files: only the companion's own wheel
changes.  Unpacking and byte-compiling thirty wheels is most of an update's
minutes on a Pi, so :func:`carry_over` links a dependency's installed files
from the running release into the new one instead, when, and only when, they
are provably what the bundle's wheel would install:

* the wheel's ``RECORD`` and the installed ``RECORD`` name the same files
  with the same SHA-256, and
* every file the installed ``RECORD`` lists with a SHA-256, those and what
  pip added at install time alike (the console scripts, ``INSTALLER``...),
  still has that SHA-256 on the card, and so has every byte-compiled
  ``.pyc`` file, which pip lists without one: its SHA-256 is the one
  :func:`note_hashes` wrote beside the environment when it was built
  (``companion-hashes.json``; an environment without it carries over no
  compiled file).  A file the card damaged is not carried over: its wheel
  is installed afresh.

What pip adds at install time comes along: the byte-compiled ``.pyc`` files
(a release folder is root's, so the service could never write them itself),
``INSTALLER``/``REQUESTED``/``direct_url.json``, and the console scripts,
whose first line names their own environment and is rewritten for the new
one (the new environment's ``RECORD`` then gives the rewritten script's
SHA-256, so that the next release checks it in turn).  Files are hard links (same card, no second copy); a link is never
written through (pip and Python replace files, they do not rewrite them), so
removing either release leaves the other whole.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import sys
import shutil
import zipfile
from pathlib import Path, PurePosixPath

# What pip writes into a dist-info at install time, never in the wheel's RECORD.
_ADDED = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}
#: In an environment: the SHA-256 of each byte-compiled file (pip's RECORD has none).
HASHES = "companion-hashes.json"


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


def note_hashes(env) -> None:
    """Write the SHA-256 of every byte-compiled file of ``env`` beside it,
    once it is built: what the next release's carry-over checks them by."""
    env = Path(env)
    site = site_packages(env)
    if site is None:
        return
    hashes = {p.relative_to(site).as_posix(): _digest(p) for p in sorted(site.rglob("*.pyc")) if p.is_file()}
    (env / HASHES).write_text(json.dumps(hashes, sort_keys=True) + "\n", encoding="utf-8")


def _compiled_hashes(env: Path) -> dict[str, str]:
    try:
        hashes = json.loads((env / HASHES).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return hashes if isinstance(hashes, dict) else {}


def _plan(wheel: Path, old_site: Path, compiled: dict[str, str] | None = None) -> list[str] | None:
    """The installed files (RECORD paths) to carry over, or None if the wheel
    must be installed; ``compiled``: the SHA-256 of the byte-compiled files."""
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
        # Every file with a digest, the wheel's own and what pip added
        # (console scripts, byte-compiled files): as the card holds it now.
        compiled = compiled or {}
        for path, digest in {**have, **want}.items():
            if PurePosixPath(path).suffix == ".pyc" and not digest:
                digest = compiled.get(path)
                if digest is None and (old_site / path).is_file():
                    return None            # a compiled file nothing vouches for
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


def _script(src: Path, dest: Path, old_env: Path, new_env: Path) -> tuple[str, int]:
    """A console script, its ``#!`` line naming the new environment's Python;
    its new RECORD row's digest and size."""
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
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), len(data)


def _record_text(old_record: Path, changed: dict[str, tuple[str, int]]) -> str:
    """The installed RECORD with the rows of ``changed`` (path -> digest, size) rewritten."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in csv.reader(io.StringIO(old_record.read_text("utf-8"))):
        if row and row[0] in changed:
            row = [row[0], changed[row[0]][0], str(changed[row[0]][1])]
        writer.writerow(row)
    return out.getvalue()


def site_packages(env: Path) -> Path | None:
    found = sorted(env.glob("lib/python3*/site-packages"))
    return found[0] if len(found) == 1 else None


def carry_over(wheels: list[Path], old_env: Path, new_env: Path) -> list[Path]:
    """Link what can be carried over from ``old_env`` into ``new_env``; the wheels left to install."""
    old_site, new_site = site_packages(old_env), site_packages(new_env)
    if old_site is None or new_site is None or old_env.resolve() == new_env.resolve():
        return list(wheels)
    left = []
    compiled = _compiled_hashes(old_env)
    for wheel in wheels:
        try:
            plan = _plan(wheel, old_site, compiled)
        except (OSError, zipfile.BadZipFile, UnicodeDecodeError, csv.Error):
            plan = None
        if plan is None:
            left.append(wheel)
            continue
        changed, records = {}, []
        for path in plan:
            pure = PurePosixPath(path)
            if pure.parts[0] == "..":
                changed[path] = _script(old_env / "bin" / pure.name, new_env / "bin" / pure.name, old_env, new_env)
            elif pure.name == "RECORD" and len(pure.parts) == 2 and pure.parts[0].endswith(".dist-info"):
                records.append(path)
            else:
                _place(old_site / path, new_site / path)
        for path in records:        # last: it names the scripts as rewritten
            if changed:
                (new_site / path).parent.mkdir(parents=True, exist_ok=True)
                (new_site / path).write_text(_record_text(old_site / path, changed), encoding="utf-8")
            else:
                _place(old_site / path, new_site / path)
    return left


if __name__ == "__main__":        # systemd/install.sh, once the first environment is built
    for folder in sys.argv[1:]:
        note_hashes(folder)
