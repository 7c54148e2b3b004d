"""Back to the previous version: the only way down, the owner's to ask.

The service writes ``back-request`` (the owner's password with it); root
checks the password against its own record, switches ``current`` to the
previous release and ``previous`` to the one it left, brings back the store
copied aside before the update to the version left (the games since are
lost), and starts the service, never left stopped whatever fails.  The
newest version run stays the bar: forward again only to a newer one.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import types

import pytest

from appliance import updates
from companion import durable
from appliance import owner as owner_rules
from appliance.root import updater
from appliance.root.updater import Installer
from companion.session import TableSession
from companion.store import Store
from test_update import Cut, _box, _games, keys, make_bundle  # noqa: F401 (fixtures)
from test_update_faults import MIGRATED, NO_ROOM, QuickSystem, _tables

PASSWORD = "a long owner password"


def _owner_dir(tmp_path):
    folder = tmp_path / "owner"
    durable.write_json(folder / "owner.json", {"hash": owner_rules.hash_password(PASSWORD)}, mode=0o600)
    return folder


def _play(lay):
    store = Store(lay.data)
    try:
        TableSession(store).submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    finally:
        store.close()


def _updated(tmp_path, keys, make_bundle):
    """A box that went from 1.0 to 2.0 and played a game on 2.0 since."""
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    inst = Installer(lay, system, machine="x86_64", owner_dir=_owner_dir(tmp_path))
    before = _games(lay)
    assert inst.install(make_bundle("2.0"))["state"] == "done"
    _play(lay)
    assert _games(lay) != before and MIGRATED in _tables(lay)
    system.log.clear()
    return lay, system, inst, before


def _worker(lay, inst, monkeypatch):
    keys_module = types.ModuleType("appliance.root.keys")
    keys_module.serve_request = lambda layout, owner_dir: None
    monkeypatch.setitem(__import__("sys").modules, "appliance.root.keys", keys_module)

    def no_exec(*args):
        raise AssertionError(f"exec {args}")
    args = argparse.Namespace(worker=True, recover=False, file=None)
    return updater.command(lay, args, installer=inst, execv=no_exec, environ={})


def _started_after_stop(system):
    if "stop" in system.log:
        last_stop = len(system.log) - 1 - system.log[::-1].index("stop")
        assert "start" in system.log[last_stop:], system.log
    assert system.running


def test_going_back_brings_back_the_previous_version_and_its_store(tmp_path, keys, make_bundle, monkeypatch):
    lay, system, inst, before = _updated(tmp_path, keys, make_bundle)
    request = updates.request_back(lay, PASSWORD)
    assert stat.S_IMODE(os.stat(lay.back_request).st_mode) == 0o600
    assert _worker(lay, inst, monkeypatch) == 0
    status = durable.read_json(lay.status)
    assert {k: status[k] for k in ("state", "to", "back", "request", "kind")} == \
        {"state": "done", "to": "1.0", "back": "2.0", "request": request, "kind": "back"}
    assert updates.status_text(status) == "Back on 1.0 (was 2.0)."
    assert not os.path.lexists(lay.back_request)
    assert updater.release_of(lay.current) == "1.0" and updater.release_of(lay.previous) == "2.0"
    assert _games(lay) == before and MIGRATED not in _tables(lay)      # the store from before 2.0
    _started_after_stop(system)
    assert system.log.index("stop") < system.log.index("start")
    assert durable.read_json(lay.highest) == {"version": "2.0"}       # not lowered
    # Forward again: only to a newer version than any the box has run.
    again = inst.install(make_bundle("2.0"))
    assert again["state"] == "failed" and "not newer than 2.0" in updates.status_text(again)
    assert updater.release_of(lay.current) == "1.0"
    assert inst.install(make_bundle("3.0"))["state"] == "done"
    assert updater.release_of(lay.current) == "3.0" and updater.release_of(lay.previous) == "1.0"


@pytest.mark.parametrize("password", ["not the owner's password", None, 12345])
def test_a_wrong_password_changes_nothing(tmp_path, keys, make_bundle, monkeypatch, password):
    lay, system, inst, _before = _updated(tmp_path, keys, make_bundle)
    after = _games(lay)
    durable.write_json(lay.back_request, {"request": "r1", "owner_password": password}, mode=0o600)
    _worker(lay, inst, monkeypatch)
    status = durable.read_json(lay.status)
    assert status["state"] == "failed" and status["request"] == "r1"
    assert updates.status_text(status) == ("Could not go back to the previous version: still on 2.0: "
                                           "wrong owner password: nothing changed")
    assert system.log == [] and not os.path.lexists(lay.back_request)
    assert updater.release_of(lay.current) == "2.0" and updater.release_of(lay.previous) == "1.0"
    assert _games(lay) == after


def test_without_a_previous_version_there_is_no_way_back(tmp_path, keys):
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    inst = Installer(lay, system, machine="x86_64", owner_dir=_owner_dir(tmp_path))
    result = inst.back(PASSWORD, "r2")
    assert result["state"] == "failed"
    assert updates.status_text(result).endswith("there is no previous version on this box")
    assert system.log == [] and updater.release_of(lay.current) == "1.0"


class Fails:
    """``real``, except that calls for which ``when`` holds raise ENOSPC (``times`` of them, or all)."""

    def __init__(self, real, when, times):
        self.real, self.when, self.left = real, when, times

    def __call__(self, *args, **kwargs):
        if self.when(*args, **kwargs) and (self.left is None or self.left > 0):
            self.left = None if self.left is None else self.left - 1
            raise OSError(errno.ENOSPC, NO_ROOM)
        return self.real(*args, **kwargs)


@pytest.mark.parametrize("where", ["switch current", "switch previous", "store WAL removal", "store copy back",
                                   "marker"])
@pytest.mark.parametrize("times", [1, None], ids=["once", "always"])
def test_whatever_fails_going_back_the_box_ends_started_on_a_whole_version(
        tmp_path, keys, make_bundle, monkeypatch, where, times):
    lay, system, inst, before = _updated(tmp_path, keys, make_bundle)
    after = _games(lay)
    target, attr, when = {
        "switch current": (updater, "switch_link", lambda link, to: link == lay.current),
        "switch previous": (updater, "switch_link", lambda link, to: link == lay.previous),
        "store WAL removal": (updater.safefs, "unlink", lambda folder, name: name == "companion.db-wal"),
        "store copy back": (updater.safefs, "copy_in", lambda src, folder, name, **k: name == "companion.db"),
        "marker": (updater, "write_json", lambda path, obj, *a, **k: path == lay.marker),
    }[where]
    monkeypatch.setattr(target, attr, Fails(getattr(target, attr), when, times))
    result = inst.back(PASSWORD, "r3")
    _started_after_stop(system)
    on = updater.release_of(lay.current)
    assert (lay.releases / on / "src/RELEASE").read_text().strip() == on
    assert not (lay.releases / on / updater.UNFINISHED).exists()
    assert durable.read_json(lay.status)["state"] == result["state"]
    if times == 1 and where != "marker":        # tried again after the other steps: it went back
        assert result["state"] == "done", updates.status_text(result)
        assert (on, updater.release_of(lay.previous)) == ("1.0", "2.0")
        assert _games(lay) == before
    else:                                       # it could not: still on the version it was on
        assert result["state"] == "failed", result
        assert (on, updater.release_of(lay.previous)) == ("2.0", "1.0")
        assert result["params"] == {"detail": NO_ROOM}
        if where in ("marker", "switch current", "switch previous"):
            assert _games(lay) == after
    if where == "marker":
        assert "stop" not in system.log          # refused before anything changed
    if times == 1 or where in ("marker", "store WAL removal", "store copy back"):
        assert not lay.marker.exists()


def test_a_cut_while_going_back_is_finished_at_the_next_boot(tmp_path, keys, make_bundle, monkeypatch):
    lay, system, inst, before = _updated(tmp_path, keys, make_bundle)

    def cut(src, data_dir):
        raise Cut("restore")
    monkeypatch.setattr(updater, "restore_store", cut)
    with pytest.raises(Cut):
        inst.back(PASSWORD, "r4")
    monkeypatch.undo()
    assert lay.marker.exists()
    system.running = False
    Installer(lay, system, machine="x86_64", owner_dir=inst.owner_dir).recover()
    status = durable.read_json(lay.status)
    assert (status["state"], status["kind"], status["request"]) == ("done", "back", "r4")
    assert updater.release_of(lay.current) == "1.0" and updater.release_of(lay.previous) == "2.0"
    assert _games(lay) == before and not lay.marker.exists()


def test_the_texts_of_going_back():
    base = {"kind": "back", "to": "1.0", "back": "2.0"}
    assert updates.status_text({**base, "state": "installing"}) == "Going back to 1.0…"
    assert updates.status_text({**base, "state": "done"}) == "Back on 1.0 (was 2.0)."
    assert updates.status_text({**base, "state": "failed", "reason": updater.HALFWAY,
                                "params": {"detail": NO_ROOM}}) == \
        f"Could not go back to the previous version: still on 2.0: a step could not be finished: {NO_ROOM}"
