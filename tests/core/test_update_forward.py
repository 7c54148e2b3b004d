"""Updates only go forward: a bundle must be newer than every version the box has run.

Root keeps the newest version it has kept (``highest.json`` in its own
folder); with the current and the previous release it is the bar a bundle
must clear, refused before anything changes.  The one way down is going
back to the previous version (tests/core/test_update_back.py).
"""

from __future__ import annotations

import shutil
import sys

import pytest

from appliance import updates
from companion import durable
from appliance.root import updater
from appliance.root.updater import Installer
from test_update import _box, _games, keys, make_bundle  # noqa: F401 (fixtures)
from test_update_faults import QuickSystem, _plain_release


def _quick(tmp_path, keys, first="1.0"):
    lay, _system, _inst = _box(tmp_path, keys, first)
    system = QuickSystem(lay)
    return lay, system, Installer(lay, system, machine="x86_64")


def _refused(lay, system, result, current):
    assert result["state"] == "failed", result
    assert "stop" not in system.log                 # refused before anything changed
    assert updater.release_of(lay.current) == current
    return updates.status_text(result)


def test_a_bundle_older_than_the_running_version_is_refused(tmp_path, keys, make_bundle):
    lay, system, inst = _quick(tmp_path, keys, "2.0")
    _plain_release(lay, "1.0")
    durable.switch_link(lay.previous, "releases/1.0")
    text = _refused(lay, system, inst.install(make_bundle("1.5")), "2.0")
    assert text == ("Update refused: still on 2.0: version 1.5 is not newer than 2.0, the newest this box "
                    "has run: updates only go forward")
    assert sorted(p.name for p in lay.releases.iterdir()) == ["1.0", "2.0"]


def test_a_bundle_of_the_previous_version_never_removes_it(tmp_path, keys, make_bundle):
    """The version kept to go back to is not rebuilt in place (which would
    remove it first, and a failure then would leave nothing to go back to)."""
    lay, system, inst = _quick(tmp_path, keys, "2.0")
    _plain_release(lay, "1.0")
    (lay.releases / "1.0/src/mine").write_text("the release kept to go back to")
    durable.switch_link(lay.previous, "releases/1.0")
    text = _refused(lay, system, inst.install(make_bundle("1.0")), "2.0")
    assert "version 1.0 is not newer than 2.0" in text
    assert (lay.releases / "1.0/src/mine").read_text() == "the release kept to go back to"
    assert updater.release_of(lay.previous) == "1.0"


def test_the_newest_version_kept_is_remembered_when_the_releases_are_gone(tmp_path, keys, make_bundle):
    lay, system, inst = _quick(tmp_path, keys)
    assert inst.install(make_bundle("2.0"))["state"] == "done"
    assert durable.read_json(lay.highest) == {"version": "2.0"}
    # By hand (install.sh of 1.0 again): 2.0 neither current nor previous any more.
    durable.switch_link(lay.current, "releases/1.0")
    lay.previous.unlink()
    shutil.rmtree(lay.releases / "2.0")
    system.log.clear()
    text = _refused(lay, system, inst.install(make_bundle("1.5")), "1.0")
    assert "version 1.5 is not newer than 2.0, the newest this box has run" in text
    # A rollback does not lower it either.
    system.health = lambda release: "it crashed 3 times"
    assert inst.install(make_bundle("3.0"))["state"] == "failed"
    assert durable.read_json(lay.highest) == {"version": "2.0"}


def test_the_boot_records_the_running_version_but_not_one_under_check(tmp_path, keys):
    lay, system, inst = _quick(tmp_path, keys)
    assert inst.highest() is None
    inst.recover()
    assert durable.read_json(lay.highest) == {"version": "1.0"}
    # A cut during a health check: current names 2.0, which the box has not kept.
    _plain_release(lay, "2.0")
    durable.switch_link(lay.previous, "releases/1.0")
    durable.switch_link(lay.current, "releases/2.0")
    durable.write_json(lay.marker, {"from": "1.0", "to": "2.0", "phase": updater.SWITCHED, "previous": None})
    inst.recover()
    assert durable.read_json(lay.highest) == {"version": "1.0"}


@pytest.mark.parametrize("running,bundle,goes", [
    ("9.9", "10.0", True),          # numbers, not text: "10.0" < "9.9" as text
    ("2.0", "2.0.0", False),        # the same version, spelt longer
    ("2.0", "2.0rc1", False),       # a candidate comes before its release
    ("2.0", "abc", False),          # not a version anyone can compare: refused
])
def test_versions_are_compared_as_versions(tmp_path, keys, make_bundle, running, bundle, goes):
    lay, system, inst = _quick(tmp_path, keys, running)
    result = inst.install(make_bundle(bundle))
    assert (result["state"] == "done") is goes, updates.status_text(result)
    if not goes:
        text = _refused(lay, system, result, running)
        assert "updates only go forward" in text


def test_without_packaging_plain_numbers_still_compare(monkeypatch):
    """packaging comes with the tests' tools, not necessarily with a box's
    environment: the installer must not fail to import or compare without it."""
    monkeypatch.setitem(sys.modules, "packaging.version", None)     # import fails
    key = updater.version_key
    assert key("10.0") > key("9.9") and key("2.0") == key("2") == key("2.0.0")
    assert key("2.0rc1") is None and key("legacy") is None


def test_the_store_is_untouched_by_a_refusal(tmp_path, keys, make_bundle):
    lay, system, inst = _quick(tmp_path, keys, "2.0")
    before = _games(lay)
    inst.install(make_bundle("1.5"))
    assert _games(lay) == before and not lay.backups.exists()
