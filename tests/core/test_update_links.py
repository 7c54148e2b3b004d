"""Root trusts only its own files: links planted in the service's folder.

The service owns ``/var/lib/companion``; whatever it leaves there (a symbolic
link named like the bundle, the request or a file of the store, a hard link
to a root file, a link in place of the ``update`` folder, a link at the name
of a temporary file) must not make root read or write a file elsewhere.
Run as a user: the files "elsewhere" are this test's own, outside the
folder, and each is checked byte for byte afterwards.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from appliance import updates
from companion import durable
from appliance.root import safefs, updater
from appliance.updates import Layout
from companion.store import Store
from test_update import _box, _games, keys, make_bundle  # noqa: F401 (fixtures)

SECRET = b"root's own file: not the service's to read or to write\n"


def _secret(tmp_path, name="secret") -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / name
    path.write_bytes(SECRET)
    return path


def _link(how: str, target: Path, name: Path) -> None:
    name.parent.mkdir(parents=True, exist_ok=True)
    if how == "symlink":
        name.symlink_to(target)
    else:
        try:
            os.link(target, name)
        except OSError as exc:
            pytest.skip(f"no hard link here: {exc}")


def _holds_secret(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and SECRET in p.read_bytes()]


@pytest.mark.parametrize("how", ["symlink", "hard link", "folder link"])
def test_a_bundle_reached_through_a_planted_link_is_not_installed(tmp_path, keys, make_bundle, how):
    lay, system, inst = _box(tmp_path, keys)
    outside = tmp_path / "outside"
    outside.mkdir()
    bundle = outside / "root-only.bundle"          # a good bundle, but not one the service may hand root
    shutil.copy(make_bundle("2.0"), bundle)
    before = bundle.read_bytes()
    if how == "folder link":
        shutil.rmtree(lay.inbox, ignore_errors=True)
        (outside / "elsewhere").mkdir()
        os.replace(bundle, outside / "elsewhere" / "incoming.bundle")
        bundle = outside / "elsewhere" / "incoming.bundle"
        lay.inbox.symlink_to(outside / "elsewhere")
    else:
        _link(how, bundle, lay.incoming)
    result = inst.install(lay.incoming, "abc")
    assert result["state"] == "failed", result
    assert "cannot read the bundle" in updates.status_text(result)
    assert updater.release_of(lay.current) == "1.0"
    assert sorted(p.name for p in lay.releases.iterdir()) == ["1.0"]
    assert "stop" not in system.log
    assert bundle.read_bytes() == before


@pytest.mark.parametrize("how", ["symlink", "hard link", "folder link"])
@pytest.mark.parametrize("name", [updater.REQUEST, updater.BACK_REQUEST])
def test_a_request_reached_through_a_planted_link_is_not_read(tmp_path, how, name):
    """An id read through a link would go into the status the service reads."""
    lay = Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root", keys=tmp_path / "k")
    secret = _secret(tmp_path)
    if how == "folder link":
        lay.data.mkdir()
        (tmp_path / "outside" / name).write_bytes(SECRET)
        lay.inbox.symlink_to(tmp_path / "outside")
    else:
        _link(how, secret, lay.inbox / name)
    take = updater.take_request if name == updater.REQUEST else updater.take_back_request
    assert take(lay) is None
    assert secret.read_bytes() == SECRET
    if how != "folder link":       # removed (the link itself), so the path unit does not fire again and again
        assert not os.path.lexists(lay.inbox / name)


@pytest.mark.parametrize("how", ["symlink", "hard link"])
@pytest.mark.parametrize("name", updater.STORE_FILES)
def test_the_store_copy_aside_reads_through_no_link(tmp_path, how, name):
    """A file of root's copied into root's backup would come back into the
    service's folder with the next rollback."""
    data = tmp_path / "data"
    Store(data).close()
    secret = _secret(tmp_path)
    (data / name).unlink(missing_ok=True)
    _link(how, secret, data / name)
    dest = tmp_path / "root" / "backups" / "pre-2.0"
    with pytest.raises(OSError):
        updater.backup_store(data, dest)
    assert not (dest / "complete").exists()
    assert _holds_secret(tmp_path / "root") == []
    assert secret.read_bytes() == SECRET


def test_an_update_over_a_planted_store_link_fails_and_the_box_serves_on(tmp_path, keys, make_bundle):
    lay, system, inst = _box(tmp_path, keys)
    secret = _secret(tmp_path)
    (lay.data / "companion.db-wal").unlink(missing_ok=True)
    (lay.data / "companion.db-wal").symlink_to(secret)
    result = inst.install(make_bundle("2.0"))
    assert result["state"] == "failed", result
    assert system.running and system.log[-1] == "start"
    assert updater.release_of(lay.current) == "1.0"
    assert _holds_secret(lay.root) == [] and _holds_secret(lay.data) == []
    assert secret.read_bytes() == SECRET


def _copy_aside(tmp_path) -> Path:
    src = tmp_path / "root" / "backups" / "pre-2.0"
    src.mkdir(parents=True)
    (src / "companion.db").write_bytes(b"the pre-update store")
    return src


def test_putting_the_store_back_writes_through_no_planted_name(tmp_path):
    """The old temporary name (``.companion.db.restore``), the store's own
    names and its WAL's: links there are replaced or removed, never written
    through; a WAL the copy lacks is removed, not kept beside it."""
    data = tmp_path / "data"
    data.mkdir()
    src = _copy_aside(tmp_path)
    victims = {name: _secret(tmp_path, f"victim-{i}") for i, name in enumerate(
        [".companion.db.restore", ".companion.db-wal.restore", "companion.db", "companion.db-wal", "companion.db-shm"])}
    for name, victim in victims.items():
        (data / name).symlink_to(victim)
    updater.restore_store(src, data)
    assert (data / "companion.db").read_bytes() == b"the pre-update store"
    assert not (data / "companion.db").is_symlink() and os.stat(data / "companion.db").st_nlink == 1
    assert oct(os.stat(data / "companion.db").st_mode & 0o777) == oct(0o600)
    assert not os.path.lexists(data / "companion.db-wal") and not os.path.lexists(data / "companion.db-shm")
    for victim in victims.values():
        assert victim.read_bytes() == SECRET


def test_the_temporary_names_in_the_services_folder_cannot_be_planted(tmp_path, monkeypatch):
    """Each new file root makes there has a name drawn at random; a link
    planted at the very name drawn (forced here) makes the copy fail rather
    than write through it."""
    data = tmp_path / "data"
    data.mkdir()
    src = _copy_aside(tmp_path)
    made = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *, dir_fd=None):
        if flags & os.O_CREAT:
            assert flags & os.O_EXCL and flags & os.O_NOFOLLOW and dir_fd is not None, path
            made.append(path)
        return real_open(path, flags, mode, dir_fd=dir_fd)
    monkeypatch.setattr(os, "open", spy)
    updater.restore_store(src, data)
    updater.restore_store(src, data)
    monkeypatch.setattr(os, "open", real_open)
    assert len(made) == 2 and len(set(made)) == 2, made
    assert ".companion.db.restore" not in made

    victim = _secret(tmp_path, "victim")
    monkeypatch.setattr(durable.secrets, "token_hex", lambda n: "0123456789ab")
    (data / ".companion.db.0123456789ab.tmp").symlink_to(victim)
    with pytest.raises(FileExistsError):
        updater.restore_store(src, data)
    assert victim.read_bytes() == SECRET
    assert (data / "companion.db").read_bytes() == b"the pre-update store"


def test_root_hands_a_file_over_on_its_descriptor_never_by_path(tmp_path, monkeypatch):
    """As root, the file put back is given to the folder's owner by fchown on
    the open file: a chown by path would follow a link swapped in meanwhile."""
    data = tmp_path / "data"
    data.mkdir()
    src = _copy_aside(tmp_path)
    calls = []
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "chown", lambda *a, **k: calls.append(("chown", a)))
    monkeypatch.setattr(os, "fchown", lambda fd, uid, gid: calls.append(("fchown", uid, gid)))
    updater.restore_store(src, data)
    st = data.stat()
    assert calls == [("fchown", st.st_uid, st.st_gid)]


def test_a_store_put_back_by_a_rollback_is_the_copy_and_nothing_else(tmp_path, keys, make_bundle):
    """End to end: a new version that crashes; a link planted meanwhile at
    the old temporary name does not matter, and the pre-update store is back."""
    lay, system, inst = _box(tmp_path, keys)
    before = _games(lay)
    victim = _secret(tmp_path, "victim")

    def crashes(release):
        (lay.data / ".companion.db.restore").symlink_to(victim)
        db = sqlite3.connect(lay.data / "companion.db")
        db.execute("PRAGMA user_version=99")
        db.commit()
        db.close()
        return "it crashed 3 times"
    system.health = crashes
    assert inst.install(make_bundle("2.0"))["state"] == "failed"
    assert victim.read_bytes() == SECRET
    assert _games(lay) == before
    assert durable.read_json(lay.status)["params"] == {"detail": "it crashed 3 times"}
