"""The durable write: small files and links that a power cut leaves whole.

A file written here is, after a power cut at any moment, either the old one
or the new one, never a mix or nothing: the bytes go to a temporary file in
the same folder, are flushed to the card, the file is renamed over the old
one in one ``rename(2)``, and the folder is flushed so that the rename itself
is on the card.  The updates' markers and links use it, so that the box
always comes back on exactly one version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, obj, mode: int = 0o644) -> None:
    """Write ``obj`` so that after a power cut the file is either the old or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` so that after a power cut the file is either the old or
    the new one (root's own folders: a fixed temporary name is safe there)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def switch_link(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` in one rename: a reader (or a boot after a
    power cut) finds the old link or the new one, never none."""
    tmp = link.with_name(f".{link.name}.new")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)
    fsync_dir(link.parent)
