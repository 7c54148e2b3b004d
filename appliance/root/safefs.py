"""Root's hands in a folder the service can write: no link followed, ever.

The companion's service owns its data folder (``/var/lib/companion``) and
everything in it.  Root reads requests there and writes a few answers back,
and whatever the service planted must not turn that into a read or a write
somewhere else: a symbolic link named like a request (``setup-system.json
-> /etc/shadow``), a link in place of a sub-folder (``update -> /root``),
a hard link to a root file, or a link at the name of a temporary file.

So, here, a folder is opened one component at a time with ``O_NOFOLLOW``
(:func:`open_folder`), files inside it are opened relative to that folder's
descriptor with ``O_NOFOLLOW`` and must be plain files with one name
(:func:`read_file`, :func:`copy_out`), and a file written for the service
is a new file (``O_CREAT | O_EXCL``: a planted name makes it fail rather
than write through it), handed to the service by ``fchown`` on the open
descriptor (never ``chown`` of a path), flushed, renamed over the old name
(a rename replaces a link, never follows it), and the folder flushed
(:func:`write_file`: the one durable write, :mod:`companion.durable`,
within the folder's descriptor).  Every function takes the folder as a path and opens
it afresh, so a check and its use never look at two different folders.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path

from companion import durable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unsafe(OSError):
    """What root found is not a plain file or folder of its own making."""


@contextmanager
def open_folder(path):
    """A descriptor of ``path`` (absolute), every component opened without
    following a link; raises OSError (``ELOOP``/``ENOTDIR``) for a link."""
    path = Path(path)
    if not path.is_absolute():
        path = Path.cwd() / path
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parts[1:]:
            if part in ("", "."):
                continue
            if part == "..":
                raise Unsafe(f"{path}: no '..' in root's paths")
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_plain(dir_fd: int, name: str) -> int:
    """A plain file with one name, opened for reading, never through a link."""
    if "/" in name or name in ("", ".", ".."):
        raise Unsafe(f"{name!r}: one name in the folder")
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise Unsafe(f"{name}: not a plain file with one name")
    return fd


def read_file(folder, name: str, limit: int = 64 * 1024) -> bytes | None:
    """The file's bytes, or None when it is missing, a link, not a plain
    file, or longer than ``limit``."""
    try:
        with open_folder(folder) as dfd:
            fd = _open_plain(dfd, name)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(limit + 1)
    except OSError:
        return None
    return raw if len(raw) <= limit else None


def copy_out(folder, name: str, dest: Path, limit: int | None = None) -> int:
    """Copy a plain file of the service's folder to ``dest`` (a path in root's
    own folder), durably (:mod:`companion.durable`); its size.  Raises
    OSError for a link, a missing file, or one larger than ``limit``."""
    with open_folder(folder) as dfd:
        fd = _open_plain(dfd, name)
        with os.fdopen(fd, "rb") as src:
            reader = _Bounded(src, name, limit)
            durable.write(dest, reader, mode=0o600)
    return reader.size


class _Bounded:
    """A file read to its end, counted, refused past ``limit`` bytes."""

    def __init__(self, src, name: str, limit: int | None):
        self.src, self.name, self.limit, self.size = src, name, limit, 0

    def read(self, n: int) -> bytes:
        chunk = self.src.read(n)
        self.size += len(chunk)
        if self.limit is not None and self.size > self.limit:
            raise Unsafe(f"{self.name}: larger than {self.limit} bytes")
        return chunk


def owner_of(folder) -> tuple[int, int]:
    """The folder's owner and group (the service's user), not following a link."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe(f"{folder}: not a folder")
    return st.st_uid, st.st_gid


def write_file(folder, name: str, data: bytes, *, mode: int = 0o600, owner: tuple[int, int] | None = None) -> None:
    """``name`` in ``folder`` holds ``data``, whole or not at all, owned by
    ``owner`` (default: the folder's owner), after a power cut too: the
    durable write (:func:`companion.durable.write_in`) within the folder
    opened here without following a link."""
    _check_name(name)
    with open_folder(folder) as dfd:
        durable.write_in(dfd, name, data, mode=mode, owner=owner if owner is not None else _owner(dfd))


def _check_name(name: str) -> None:
    if "/" in name or name in ("", ".", ".."):
        raise Unsafe(f"{name!r}: one name in the folder")


def _owner(dfd: int) -> tuple[int, int]:
    st = os.fstat(dfd)
    return st.st_uid, st.st_gid


def unlink(folder, name: str) -> None:
    """Remove a name (a link itself, never what it points at); missing is fine."""
    _check_name(name)
    try:
        with open_folder(folder) as dfd:
            durable.remove_in(dfd, name)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise Unsafe(f"{name}: a folder where a file was expected") from None


def present(folder, name: str) -> bool:
    """Whether ``folder`` holds anything at all under ``name`` (a link
    counts, and is not followed): root can then remove what it would not read."""
    try:
        with open_folder(folder) as dfd:
            os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return False
    return True


def copy_in(src_path, folder, name: str, *, owner: tuple[int, int] | None = None, mode: int = 0o600) -> int:
    """Root's own file ``src_path`` becomes ``name`` in the service's ``folder``,
    whole or not at all, after a power cut too; its size.

    The durable write (:func:`companion.durable.write_in`) within the folder
    opened here without following a link: streamed into a new file under a
    random name (``O_CREAT | O_EXCL``: a name the service planted makes it
    fail, and a random one cannot be planted in advance), handed to ``owner``
    (default: the folder's owner) by ``fchown`` on the descriptor, flushed,
    renamed over ``name`` (a link there is replaced, never followed), and
    the folder flushed."""
    _check_name(name)
    with open(src_path, "rb") as src, open_folder(folder) as dfd:
        reader = _Bounded(src, name, None)
        durable.write_in(dfd, name, reader, mode=mode, owner=owner if owner is not None else _owner(dfd))
    return reader.size


def keep_aside(folder, name: str, aside: str, *, anywhere: bool = True) -> str | None:
    """A second name, ``aside``, for the plain file ``name`` of the service's
    folder (a hard link: no copy, so no room needed), owned by the folder's
    owner; the name it is kept under, or None when there is no such file.
    Already kept is kept: at ``aside``, or (``anywhere``) at any other name
    of the folder that holds the very same file.  The file stays the
    service's own: root reads nothing of it, and never gives a file of its
    own a name there."""
    _check_name(name)
    _check_name(aside)
    with open_folder(folder) as dfd:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.fstat(dfd).st_uid:
            return None
        with os.scandir(dfd) as entries:
            for entry in entries:
                if entry.name != name and (anywhere or entry.name == aside):
                    other = entry.stat(follow_symlinks=False)
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        return entry.name
        durable.link_in(dfd, name, aside)
    return aside
