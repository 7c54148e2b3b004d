"""The one durable write: every file the box keeps, whole after a power cut.

Settings, the set-up record, the Wi-Fi files, SSH keys, the updates'
markers and status, the backups' markers, the public logs of finished
games, the names' cache, the release keys: each is written here, one way,
with one guarantee.  A write is five steps, each for a reason:

1. **a new file beside the old one**, under a name drawn at random, made
   with ``O_CREAT | O_EXCL | O_NOFOLLOW`` relative to the folder's open
   descriptor: a name planted in advance (a link to ``/etc/shadow`` in a
   folder the service can write) makes the write fail, never writes through;
2. **the bytes, the mode and the owner** set on that descriptor (``fchmod``,
   ``fchown``: never a path that a link could redirect), before any reader
   can see the file;
3. **the file flushed** (``fsync``): its bytes are on the card before a name
   points at them;
4. **renamed over the old name** (``rename(2)`` within the folder's
   descriptor: a link at the name is replaced, never followed);
5. **the folder flushed** (``fsync`` of the folder): the rename itself is on
   the card.

**The guarantee.**  When a write returns, the new file is on the card.  Until
it returns, and after a power cut at any moment, the name holds the old file
or the new one, whole: never a mix, never nothing (tests/core/test_durable.py
cuts at every step, against a model of what a card keeps).  A write that
raises has not happened as far as its caller may count: the temporary file is
removed (a power cut can leave one, ``.<name>.<random>.tmp``, which no reader
looks at).  **If the folder's flush fails** after the rename, the write
raises all the same (an ``OSError``): the new file is in place, but it is not
known to survive a power cut, so the caller must not report it as kept (an
action unacknowledged, a setting "not saved"); the next write of the file
flushes the folder again.

Folders swapped whole (a restore's) and links (``current``) go through
:func:`move` and :func:`switch_link`: one rename, then both folders flushed.
SQLite's own flushes are SQLite's (the store's database is not written here).

The core imports nothing of the appliance, and every side of the box (the
table's core, the service, root) writes through this one module.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_CHUNK = 1 << 20


def _tmp_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(6)}.tmp"


def _one_name(name: str) -> str:
    if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
        raise ValueError(f"{name!r}: one name in its folder")
    return name


@contextmanager
def _folder_of(path: Path):
    fd = os.open(path.parent, _FOLDER)
    try:
        yield fd
    finally:
        os.close(fd)


def fsync_dir(folder) -> None:
    """Flush a folder (a path, or an open descriptor of one): the names made,
    renamed or removed in it are on the card when this returns."""
    if isinstance(folder, int):
        os.fsync(folder)
        return
    fd = os.open(folder, _FOLDER)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_file(path) -> None:
    """Flush a file written by other means (SQLite with its own flushes
    turned off for a bulk load): its bytes are on the card when this returns."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data) -> None:
    """``data`` (bytes, or a binary file object read to its end) into ``fd``."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return
    while chunk := data.read(_CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]


def _set_mode_owner(fd: int, mode: int, owner) -> None:
    os.fchmod(fd, mode)
    if owner is not None and os.geteuid() == 0:
        os.fchown(fd, *owner)


def write_in(folder_fd: int, name: str, data, *, mode: int = 0o644, owner: tuple[int, int] | None = None,
             exclusive: bool = False) -> None:
    """The durable write of ``name`` in the folder open as ``folder_fd``
    (root's way in the service's folder: the folder opened without following
    a link, :mod:`appliance.root.safefs`).  ``data``: bytes, or a binary file
    object streamed to its end.  ``owner`` (uid, gid) is given to the file on
    its descriptor when run as root.  ``exclusive``: the name must not exist
    yet (a file made once, never replaced: a release maker's private key)."""
    _one_name(name)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = _tmp_name(name)
    fd = os.open(tmp, _CREATE, mode, dir_fd=folder_fd)
    try:
        try:
            _write_all(fd, data)
            _set_mode_owner(fd, mode, owner)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            _place_new(folder_fd, tmp, name)
        else:
            os.rename(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        _forget(folder_fd, tmp)
        raise
    os.fsync(folder_fd)


def _place_new(folder_fd: int, tmp: str, name: str) -> None:
    """``tmp`` becomes ``name`` only if ``name`` does not exist: a hard link
    (which never replaces), then the temporary name removed.  A file system
    without hard links (a FAT stick) gets a look first, then the rename."""
    try:
        os.link(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
            raise
        try:
            os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            return
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name) from None
    os.unlink(tmp, dir_fd=folder_fd)


def _forget(folder_fd: int, tmp: str) -> None:
    try:
        os.unlink(tmp, dir_fd=folder_fd)
    except OSError:
        pass


def write(path, data, *, mode: int = 0o644, owner: tuple[int, int] | None = None, exclusive: bool = False) -> None:
    """The durable write of ``path`` (bytes, text, or a binary file object):
    after a power cut at any moment, the old file or the new one."""
    path = Path(path)
    with _folder_of(path) as folder:
        write_in(folder, path.name, data, mode=mode, owner=owner, exclusive=exclusive)


def write_text(path, text: str, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    write(path, text.encode("utf-8"), mode=mode, owner=owner)


def write_json(path, obj, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """``obj`` as JSON (keys sorted), durably; the folder is made if missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, json.dumps(obj, sort_keys=True).encode("utf-8"), mode=mode, owner=owner)


@contextmanager
def writing(path, *, mode: int = 0o644, owner: tuple[int, int] | None = None):
    """A file written bit by bit (an archive, a bundle): the block gets a
    binary file object, open for reading too; when the block ends without an
    error the file is made durable in place of ``path`` (the same steps as
    :func:`write`), and when it raises, nothing changes."""
    path = Path(path)
    with _folder_of(path) as folder:
        tmp = _tmp_name(path.name)
        fd = os.open(tmp, (_CREATE & ~os.O_WRONLY) | os.O_RDWR, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "w+b", closefd=False) as fh:
                yield fh
                fh.flush()
            _set_mode_owner(fd, mode, owner)
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.rename(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            _forget(folder, tmp)
            raise
        os.fsync(folder)


def remove(path) -> bool:
    """Remove a name (a link itself, never what it points at) and flush its
    folder; whether there was one."""
    path = Path(path)
    with _folder_of(path) as folder:
        return remove_in(folder, path.name)


def remove_in(folder_fd: int, name: str) -> bool:
    try:
        os.unlink(_one_name(name), dir_fd=folder_fd)
    except FileNotFoundError:
        return False
    os.fsync(folder_fd)
    return True


def move(src, dst) -> None:
    """Rename ``src`` (a file or a whole folder) to ``dst`` on the same file
    system, in one ``rename(2)`` (a file, or an empty folder, at ``dst`` is
    replaced), then flush both folders: after a power cut it is at one name
    or the other, never at neither."""
    src, dst = Path(src), Path(dst)
    os.rename(src, dst)
    fsync_dir(dst.parent)
    if src.parent.resolve() != dst.parent.resolve():
        fsync_dir(src.parent)


def move_in(folder_fd: int, src: str, dst_folder_fd: int, dst: str) -> None:
    """:func:`move` between two open folders (root's way: no link followed)."""
    os.rename(_one_name(src), _one_name(dst), src_dir_fd=folder_fd, dst_dir_fd=dst_folder_fd)
    os.fsync(dst_folder_fd)
    if not os.path.samestat(os.fstat(folder_fd), os.fstat(dst_folder_fd)):
        os.fsync(folder_fd)


def link_in(folder_fd: int, name: str, new_name: str) -> None:
    """A second name for a file of the open folder (a hard link: the same
    bytes, no copy), on the card when this returns.  A link at ``name`` is
    linked itself, never what it points at; ``new_name`` must be new."""
    os.link(_one_name(name), _one_name(new_name), src_dir_fd=folder_fd, dst_dir_fd=folder_fd,
            follow_symlinks=False)
    os.fsync(folder_fd)


def switch_link(link, target: str) -> None:
    """Point the symbolic link ``link`` at ``target`` in one rename: a reader
    (or a boot after a power cut) finds the old link or the new one, never none."""
    link = Path(link)
    with _folder_of(link) as folder:
        tmp = _tmp_name(link.name)
        os.symlink(target, tmp, dir_fd=folder)
        try:
            os.rename(tmp, link.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            _forget(folder, tmp)
            raise
        os.fsync(folder)


def read_json(path):
    """A JSON file's content, or None when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None
