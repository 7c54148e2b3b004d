"""A failed update never leaves the box stopped.

A full card (ENOSPC) or a step that raises, injected at each step of an
update in turn, and at each step of the rollback that follows a new version
that does not stay up: every time the service is started after it was last
stopped, ``current`` names a whole release, the status says how it ended,
and the store holds what it held (the pre-update copy after a rollback, the
new version's after a kept update).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from appliance import updates
from companion import durable
from appliance.root import updater
from appliance.root.updater import Installer
from test_update import FakeSystem, _box, _games, keys, make_bundle  # noqa: F401 (fixtures)

NO_ROOM = os.strerror(errno.ENOSPC)
MIGRATED = "migrated_by_2_0"


class QuickSystem(FakeSystem):
    """The fake system, with a self-check that only moves the store forward
    (as a new version's does) instead of replaying the samples."""

    def self_check(self, release: Path):
        self._step("self-check")
        db = sqlite3.connect(self.layout.data / "companion.db")
        db.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATED} (x)")
        db.commit()
        db.close()
        return None


def _tables(lay) -> set[str]:
    db = sqlite3.connect(lay.data / "companion.db")
    try:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        db.close()


class Once:
    """``real``, except that the first call for which ``when`` holds raises
    ENOSPC (``after``: once ``real`` has done its part, as a flush that fails
    after the name is gone)."""

    def __init__(self, real, when, after=False):
        self.real, self.when, self.fired, self.after = real, when, False, after

    def __call__(self, *args, **kwargs):
        if not self.fired and self.when(*args, **kwargs):
            self.fired = True
            if self.after:
                self.real(*args, **kwargs)
            raise OSError(errno.ENOSPC, NO_ROOM)
        return self.real(*args, **kwargs)


def _fault(monkeypatch, lay, system, where):
    """Patch the step named ``where`` to fail once; the patch (its ``fired`` says if it did)."""
    module_attr = {
        "backup copy": (updater.safefs, "copy_out", lambda folder, name, dest, *a, **k: "pre-" in str(dest)),
        "backup flush": (updater, "fsync_dir", lambda path: Path(path) == lay.backups),
        "marker prepared": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "prepared"),
        "marker backed-up": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "backed-up"),
        "marker checking": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "checking"),
        "marker switching": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "switching"),
        "marker switched": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "switched"),
        "status installing": (updater, "write_json", lambda p, obj, *a, **k: p == lay.status and obj.get("state") == "installing"),
        "status checking": (updater, "write_json", lambda p, obj, *a, **k: p == lay.status and obj.get("state") == "checking"),
        "self-check": (system, "self_check", lambda release: True),
        "switch previous": (updater, "switch_link", lambda link, target: link == lay.previous),
        "switch current": (updater, "switch_link", lambda link, target: link == lay.current),
        "restarts": (system, "restarts", lambda: True),
        "health check": (system, "wait_healthy", lambda since: True),
        "record of the newest": (updater, "write_json", lambda p, *a, **k: p == lay.highest),
        "marker removal": (updater.durable, "remove", lambda path: Path(path) == lay.marker),
        "old release removal": (updater.shutil, "rmtree", lambda path, *a, **k: Path(path).name == "0.8"),
        # In the rollback after a new version that did not stay up:
        "rollback marker": (updater, "write_json", lambda p, obj, *a, **k: p == lay.marker and obj.get("phase") == "rolling-back"),
        "rollback stop": (system, "stop", lambda: system.log.count("stop") >= 1),
        "current back": (updater, "switch_link", lambda link, target: link == lay.current and target == "releases/1.0"),
        "previous back": (updater, "switch_link", lambda link, target: link == lay.previous and target == "releases/0.9"),
        "store WAL removal": (updater.safefs, "unlink", lambda folder, name: name == "companion.db-wal"),
        "store copy back": (updater.safefs, "copy_in", lambda src, folder, name, **k: name == "companion.db"),
        "new release removal": (updater.shutil, "rmtree", lambda path, *a, **k: Path(path).name == "2.0"),
        "marker removal after rollback": (updater.durable, "remove", lambda path: Path(path) == lay.marker),
    }
    target, attr, when = module_attr[where]
    patch = Once(getattr(target, attr), when, after=where.startswith("marker removal"))
    monkeypatch.setattr(target, attr, patch)
    return patch


# (where, the new version stays up, the status it must end on)
CASES = [
    ("backup copy", True, "failed"),
    ("backup flush", True, "failed"),
    ("marker prepared", True, "failed"),
    ("marker backed-up", True, "failed"),
    ("marker checking", True, "failed"),
    ("marker switching", True, "failed"),
    ("marker switched", True, "failed"),
    ("status installing", True, "done"),
    ("status checking", True, "done"),
    ("self-check", True, "failed"),
    ("switch previous", True, "failed"),
    ("switch current", True, "failed"),
    ("restarts", True, "failed"),
    ("health check", True, "failed"),
    ("record of the newest", True, "done"),
    ("marker removal", True, "done"),
    ("old release removal", True, "done"),
    ("rollback marker", False, "failed"),
    ("rollback stop", False, "failed"),
    ("current back", False, "failed"),
    ("previous back", False, "failed"),
    ("store WAL removal", False, "failed"),
    ("store copy back", False, "failed"),
    ("new release removal", False, "failed"),
    ("marker removal after rollback", False, "failed"),
]


def _plain_release(lay, name):
    rel = lay.releases / name
    (rel / "src").mkdir(parents=True)
    (rel / "src/RELEASE").write_text(name)
    (rel / "venv").mkdir()


@pytest.mark.parametrize("where,stays_up,ends", CASES, ids=[c[0] for c in CASES])
def test_whatever_fails_the_box_ends_started_on_a_whole_version_with_its_store(
        tmp_path, keys, make_bundle, monkeypatch, where, stays_up, ends):
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    inst = Installer(lay, system, machine="x86_64")
    _plain_release(lay, "0.9")                       # the version kept to go back to
    durable.switch_link(lay.previous, "releases/0.9")
    _plain_release(lay, "0.8")                       # one no link names: tidied once 2.0 is kept
    (lay.backups / "pre-1.0").mkdir(parents=True)    # an older update's copy: tidied too
    before = _games(lay)
    bundle = make_bundle("2.0")

    def health(release):
        if stays_up:
            return None
        db = sqlite3.connect(lay.data / "companion.db")      # the new version wrote to the store, then crashed
        db.execute("CREATE TABLE written_by_2_0 (x)")
        db.commit()
        db.close()
        return "it crashed 3 times"
    system.health = health
    fault = _fault(monkeypatch, lay, system, where)

    result = inst.install(bundle)

    assert fault.fired, f"the step {where!r} was never reached"
    last_stop = len(system.log) - 1 - system.log[::-1].index("stop")
    assert "start" in system.log[last_stop:], system.log
    assert system.running
    on = updater.release_of(lay.current)
    assert on in ("1.0", "2.0")
    assert (lay.releases / on / "src/RELEASE").read_text().strip() == on
    assert not (lay.releases / on / updater.UNFINISHED).exists()
    status = durable.read_json(lay.status)
    assert status["state"] == result["state"] == ends, (result, updates.status_text(result))
    assert not lay.marker.exists()
    assert _games(lay) == before
    if ends == "done":
        assert on == "2.0" and updater.release_of(lay.previous) == "1.0"
        assert MIGRATED in _tables(lay)
    else:
        assert on == "1.0" and updater.release_of(lay.previous) == "0.9"
        assert not {MIGRATED, "written_by_2_0"} & _tables(lay)        # the store as it was
        assert (lay.releases / "0.9/src/RELEASE").exists()
        if stays_up:       # the failure itself is the reason, in the card's own words
            assert status["params"]["detail"] == NO_ROOM, status
        else:
            assert status["params"]["detail"] == "it crashed 3 times", status
