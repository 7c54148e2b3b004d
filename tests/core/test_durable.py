"""The one durable write (companion/durable.py), cut at every step.

Two ways to cut, at every system call of a write (open, write, chmod,
fsync, rename, link, the folder's fsync):

* **an injected failure**: the call raises (a card that gives up, a full
  card); the name then holds the old file or the new one, whole, and no
  temporary file is left;
* **a power cut, against a model of what a card keeps** (after ALICE,
  OSDI'14): the calls of one write are recorded; at a cut after any of
  them, a file's bytes reach the card only up to its last fsync (anything
  from none to all of the rest, torn anywhere), and a folder's changes
  (a new name, a rename, a link, a removal) only up to the folder's last
  fsync (any of the rest, in any combination).  Every state allowed is
  read: the name holds the old file or the new one, whole, never a mix
  and never nothing; once the write returned, only the new one.

A careless write (no flush before the rename) is run through the same
model to show it can fail: the model finds the empty file it would leave.
"""

from __future__ import annotations

import errno
import io
import itertools
import os
import stat
from pathlib import Path

import pytest

from companion import durable

OLD, NEW = b"old settings\n" * 3, "nouveaux réglages, Éloïse\n".encode() * 40


class Calls:
    """``os`` for the durable module: every call of interest recorded (files
    by their inode, with what each holds at that moment) or made to fail."""

    WATCHED = ("open", "write", "fchmod", "fchown", "fsync", "rename", "replace", "link", "unlink", "symlink")

    def __init__(self, fail_at: int | None = None):
        self.fail_at, self.count, self.trace = fail_at, 0, []
        self.real = {name: getattr(os, name) for name in self.WATCHED}

    def __getattr__(self, name):
        if name not in self.WATCHED:
            return getattr(os, name)
        real = self.real[name]

        def call(*args, **kwargs):
            if self.fail_at is not None and self.count == self.fail_at:
                self.count += 1
                raise OSError(errno.EIO, f"cut at {name}")
            self.count += 1
            result = real(*args, **kwargs)
            self._record(name, args, kwargs, result)
            return result
        return call

    def _record(self, name, args, kwargs, result):
        base = lambda path: Path(str(path)).name      # noqa: E731 (every name is in the one folder)
        if name == "open" and args[1] & os.O_CREAT:
            self.trace.append(("create", base(args[0]), os.fstat(result).st_ino))
        elif name in ("write", "fsync"):
            st = os.fstat(args[0])
            if stat.S_ISDIR(st.st_mode):
                self.trace.append(("fsync-dir",))
            else:
                self.trace.append(("wrote" if name == "write" else "fsync", st.st_ino, _held(args[0])))
        elif name in ("rename", "replace", "link"):
            self.trace.append(("link" if name == "link" else "rename", base(args[0]), base(args[1])))
        elif name == "unlink":
            self.trace.append(("unlink", base(args[0])))
        elif name == "symlink":
            st = os.stat(args[1], dir_fd=kwargs.get("dir_fd"), follow_symlinks=False)
            self.trace.append(("symlink", base(args[1]), st.st_ino, b"->" + str(args[0]).encode()))


def _held(fd: int) -> bytes:
    """What the open file holds now (its descriptor may be write-only)."""
    with open(f"/proc/self/fd/{fd}", "rb") as fh:
        return fh.read()


# -- the writes under test ---------------------------------------------------------------
def _streamed(path):
    with durable.writing(path, mode=0o600) as fh:
        for n in range(0, len(NEW), 100):
            fh.write(NEW[n:n + 100])


WRITES = {
    "write": lambda path: durable.write(path, NEW, mode=0o600),
    "write from a file": lambda path: durable.write(path, io.BytesIO(NEW), mode=0o600),
    "write_text": lambda path: durable.write_text(path, NEW.decode(), mode=0o600),
    "writing": _streamed,
    "write_in (root's)": lambda path: _in_folder(path, lambda fd: durable.write_in(fd, path.name, NEW, mode=0o600)),
}


def _in_folder(path, step):
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        step(fd)
    finally:
        os.close(fd)


def _careless(path, calls=os):
    """What the module's steps guard against: the bytes written, renamed, never flushed."""
    tmp = path.with_name(path.name + ".tmp")
    fd = calls.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    calls.write(fd, NEW)
    os.close(fd)
    calls.rename(tmp, path)


@pytest.fixture
def folder(tmp_path):
    place = tmp_path / "data"
    place.mkdir()
    return place


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


# -- injected failures -----------------------------------------------------------------
@pytest.mark.parametrize("how", WRITES)
@pytest.mark.parametrize("had_old", [True, False], ids=["over a file", "a new file"])
def test_a_write_that_fails_at_any_call_leaves_the_old_file_or_the_new_one(folder, monkeypatch, how, had_old):
    target = folder / "companion.toml"
    steps = None
    for fail_at in itertools.count():
        for leftover in folder.iterdir():
            leftover.unlink()
        if had_old:
            target.write_bytes(OLD)
        calls = Calls(fail_at)
        monkeypatch.setattr(durable, "os", calls)
        try:
            WRITES[how](target)
            raised = False
        except OSError as exc:
            assert "cut at" in str(exc)
            raised = True
        finally:
            monkeypatch.setattr(durable, "os", os)
        held = target.read_bytes() if target.exists() else None
        assert held in ((OLD if had_old else None), NEW), (fail_at, held)
        assert _names(folder) == (["companion.toml"] if held is not None else []), (fail_at, _names(folder))
        if not raised:
            assert held == NEW and stat.S_IMODE(target.stat().st_mode) == 0o600
            steps = fail_at
            break
    assert steps is not None and steps >= 5       # open, write, chmod, fsync, rename, fsync of the folder


# -- power cuts, against a model of the card -----------------------------------------------
def _crash_states(trace, names: dict, data: dict, name: str):
    """Every content ``name`` can hold after a cut at each point of ``trace``
    (the recorded calls), from the folder's ``names`` (name -> inode) and
    the files' ``data`` (inode -> bytes) on the card before it:
    ``[(point, {contents})]``, None for no file at all."""
    on_card_names, on_card = dict(names), dict(data)
    pending: list[tuple] = []                 # the folder's changes since its last fsync
    now: dict = dict(data)                    # what each file holds now (not all of it on the card)
    live = dict(names)                        # name -> inode, as a reader sees it now
    points = []
    for point in range(len(trace) + 1):
        points.append((point, _states_now(on_card_names, on_card, pending, now, name)))
        if point == len(trace):
            break
        op = trace[point]
        kind = op[0]
        if kind == "create":
            live[op[1]] = op[2]
            now[op[2]] = b""
            pending.append(("name", op[1], op[2]))
        elif kind == "wrote":
            now[op[1]] = op[2]
        elif kind == "fsync":
            now[op[1]] = on_card[op[1]] = op[2]
        elif kind == "fsync-dir":
            for change in pending:
                _apply(on_card_names, change)
            pending.clear()
        elif kind in ("rename", "link"):
            ino = live[op[1]]
            if kind == "rename":
                del live[op[1]]
            live[op[2]] = ino
            pending.append((kind, op[1], op[2], ino))
        elif kind == "unlink":
            live.pop(op[1], None)
            pending.append(("unlink", op[1]))
        elif kind == "symlink":
            live[op[1]] = op[2]
            now[op[2]] = on_card[op[2]] = op[3]      # a link's target comes with its name
            pending.append(("name", op[1], op[2]))
    return points


def _apply(names: dict, change) -> None:
    kind = change[0]
    if kind == "name":
        names[change[1]] = change[2]
    elif kind == "rename":
        names.pop(change[1], None)
        names[change[2]] = change[3]
    elif kind == "link":
        names[change[2]] = change[3]
    elif kind == "unlink":
        names.pop(change[1], None)


def _states_now(on_card_names, on_card, pending, now, name):
    """What ``name`` may hold after a cut now: each of the folder's pending
    changes kept or lost, each file's unflushed bytes kept in part or not."""
    contents = set()
    for kept in itertools.product((False, True), repeat=len(pending)):
        names = dict(on_card_names)
        for change, keep in zip(pending, kept):
            if keep:
                _apply(names, change)
        ino = names.get(name)
        if ino is None:
            contents.add(None)
            continue
        flushed, held = on_card.get(ino, b""), now.get(ino, b"")
        if held == flushed:
            contents.add(flushed)
        else:                                  # none of the rest, all of it, or torn
            contents.update(held[:cut] for cut in {len(flushed), len(flushed) + 1, len(held) // 2,
                                                     len(held) - 1, len(held)} if cut >= len(flushed))
    return contents


def _record(folder, write, monkeypatch, had_old=True):
    target = folder / "companion.toml"
    names, data = {}, {}
    if had_old:
        target.write_bytes(OLD)
        names[target.name] = target.stat().st_ino
        data[names[target.name]] = OLD
    calls = Calls()
    if write is _careless:
        _careless(target, calls)
    else:
        monkeypatch.setattr(durable, "os", calls)
        try:
            write(target)
        finally:
            monkeypatch.setattr(durable, "os", os)
    return calls.trace, target, names, data


@pytest.mark.parametrize("how", WRITES)
@pytest.mark.parametrize("had_old", [True, False], ids=["over a file", "a new file"])
def test_a_power_cut_at_any_point_of_a_write_leaves_the_old_file_or_the_new_one(folder, monkeypatch, how, had_old):
    trace, target, names, data = _record(folder, WRITES[how], monkeypatch, had_old)
    assert target.read_bytes() == NEW
    old = OLD if had_old else None
    points = _crash_states(trace, names, data, target.name)
    for point, contents in points:
        assert contents <= {old, NEW}, (point, trace[:point], sorted(map(repr, contents))[:4])
    assert points[-1][1] == {NEW}, "once the write returned, only the new file"
    assert any(contents == {old, NEW} for _p, contents in points), "the cuts reach the moment it changes"


def test_the_model_finds_what_a_careless_write_would_lose(folder, monkeypatch):
    trace, target, names, data = _record(folder, _careless, monkeypatch)
    assert target.read_bytes() == NEW
    lost = [contents - {OLD, NEW} for _point, contents in _crash_states(trace, names, data, target.name)]
    assert any(b"" in bad for bad in lost), "renamed before flushed: an empty file after a cut"


def test_a_link_switched_is_the_old_link_or_the_new_one_after_a_cut(folder, monkeypatch):
    (folder / "releases/1.0").mkdir(parents=True)
    (folder / "releases/2.0").mkdir()
    durable.switch_link(folder / "current", "releases/1.0")
    old = os.stat(folder / "current", follow_symlinks=False).st_ino
    calls = Calls()
    monkeypatch.setattr(durable, "os", calls)
    try:
        durable.switch_link(folder / "current", "releases/2.0")
    finally:
        monkeypatch.setattr(durable, "os", os)
    assert os.readlink(folder / "current") == "releases/2.0"
    points = _crash_states(calls.trace, {"current": old}, {old: b"->releases/1.0"}, "current")
    for point, contents in points:
        assert contents <= {b"->releases/1.0", b"->releases/2.0"}, (point, contents)
    assert points[-1][1] == {b"->releases/2.0"}


def test_a_folder_fsync_that_fails_is_a_write_not_made(folder, monkeypatch):
    """The guarantee when the folder cannot be flushed: the new file is in
    place, but the write raises, so no caller reports it kept."""
    target = folder / "companion.toml"
    target.write_bytes(OLD)
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "the folder's flush failed")
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="folder's flush"):
        durable.write(target, NEW)
    assert target.read_bytes() == NEW and _names(folder) == ["companion.toml"]


def test_a_planted_link_at_a_temporary_name_is_never_written_through(folder, tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's")
    monkeypatch.setattr(durable.secrets, "token_hex", lambda n: "0123456789ab")
    (folder / ".companion.toml.0123456789ab.tmp").symlink_to(victim)
    with pytest.raises(FileExistsError):
        durable.write(folder / "companion.toml", NEW)
    assert victim.read_bytes() == b"root's" and not (folder / "companion.toml").exists()


def test_a_file_made_once_is_never_written_over(folder):
    durable.write(folder / "release.pem", OLD, mode=0o600, exclusive=True)
    with pytest.raises(FileExistsError):
        durable.write(folder / "release.pem", NEW, mode=0o600, exclusive=True)
    assert (folder / "release.pem").read_bytes() == OLD and _names(folder) == ["release.pem"]
