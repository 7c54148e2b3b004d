"""Updates on a fake root: signed bundles, releases side by side, rollback, cuts.

The system (systemd, the service's user, pip) is a fake: its "environment"
for a release is a script that runs the release's own source with this
Python, so the self-check that decides is the bundled version's real one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from appliance import bundle as bundles
from appliance import updates
from companion import durable
from appliance.root import updater
from companion.errors import StoreError
from companion.store import Store
from appliance.root.updater import Installer
from appliance.updates import Layout

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("companion", "appliance", "hardware", "web", "hub")


def _release_tree(dest: Path, version: str, broken_selfcheck: bool = False) -> Path:
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    (dest / "RELEASE").write_text(version)
    if broken_selfcheck:       # a version whose samples no longer replay
        sample = next((dest / "companion/samples").glob("scoreboard*.expect.json"))
        want = json.loads(sample.read_text())
        want["state"]["game"] = "not-this-game"
        sample.write_text(json.dumps(want))
    return dest


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    good = folder / "release.pem"
    other = folder / "other.pem"
    return {"good": (good, bundles.new_key(good)), "other": (other, bundles.new_key(other))}


@pytest.fixture(scope="module")
def make_bundle(tmp_path_factory, keys):
    made = {}

    def make(version, key="good", broken=False):
        if (version, key, broken) in made:
            return made[(version, key, broken)]
        work = tmp_path_factory.mktemp(f"b-{version}")
        tree = _release_tree(work / "release", version, broken)
        wheels = work / "wheels"
        wheels.mkdir()
        (wheels / "fake-1.0-py3-none-any.whl").write_bytes(b"not really a wheel")
        manifest = bundles.Manifest(version, f"{sys.version_info.major}.{sys.version_info.minor}", "x86_64",
                                    ("fake-1.0-py3-none-any.whl",))
        out = work / f"companion-{version}.bundle"
        bundles.write_bundle(out, manifest, tree, wheels, bundles.load_private(keys[key][0]))
        made[(version, key, broken)] = out
        return out
    return make


class FakeSystem:
    """systemd and pip, played by this Python.  ``health`` says how the new version fares once started."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.running = False
        self.health = lambda release: None
        self.log = []
        self.cut_at = None           # raise Cut when this step is reached

    def _step(self, name):
        self.log.append(name)
        self.said = getattr(self, "said", []) + [(durable.read_json(self.layout.status) or {}).get("state")]
        if self.cut_at == name:
            raise Cut(name)

    def build_env(self, release: Path, wheels: Path, running: Path | None = None) -> None:
        self._step("build")
        self.carried_from = running
        assert (wheels / "fake-1.0-py3-none-any.whl").exists()
        bin_ = release / "venv" / "bin"
        bin_.mkdir(parents=True)
        script = bin_ / "companion"
        script.write_text(f"#!/bin/sh\nPYTHONPATH={release / 'src'} exec {sys.executable} -m appliance.cli \"$@\"\n")
        script.chmod(0o755)

    def stop(self):
        self._step("stop")
        self.running = False

    def start(self):
        self._step("start")
        self.running = True

    def restarts(self):
        return 0

    def self_check(self, release: Path):
        self._step("self-check")
        done = subprocess.run([str(release / "venv/bin/companion"), "self-check", "--data", str(self.layout.data)],
                              capture_output=True, text=True, cwd="/")
        return None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]

    def wait_healthy(self, since):
        self._step("wait")
        return self.health(updater.release_of(self.layout.current))


class Cut(BaseException):
    """A power cut: nothing in the installer may catch it (it catches
    ``Exception`` to put the box back on its feet after an error)."""


def _box(tmp_path, keys, first="1.0") -> tuple[Layout, FakeSystem, Installer]:
    """A box installed as install.sh leaves it: release ``first`` current, a store with a game."""
    lay = Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root",
                 keys=tmp_path / "etc/release-keys")
    lay.keys.parent.mkdir(parents=True)
    lay.keys.write_text(f"# release keys\n{keys['good'][1]} test\n")
    rel = lay.releases / first
    _release_tree(rel / "src", first)
    (rel / "venv").mkdir()
    durable.switch_link(lay.current, f"releases/{first}")
    store = Store(lay.data)
    from companion.session import TableSession
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Éloïse", "Marc-Antoine"]})
    session.submit({"type": "add", "seat": 1, "points": 3})
    store.close()
    system = FakeSystem(lay)
    return lay, system, Installer(lay, system, machine="x86_64")


def _games(lay):
    store = Store(lay.data)
    try:
        return [(g.game, g.actions) for g in store.games()]
    finally:
        store.close()


def test_a_signed_bundle_installs_beside_and_switches(tmp_path, keys, make_bundle):
    lay, system, inst = _box(tmp_path, keys)
    before = _games(lay)
    result = inst.install(make_bundle("2.0"))
    assert result["state"] == "done", result
    assert updater.release_of(lay.current) == "2.0"
    assert updater.release_of(lay.previous) == "1.0"
    assert (lay.releases / "1.0").is_dir() and (lay.releases / "2.0/venv/bin/companion").exists()
    assert system.carried_from == lay.releases / "1.0"  # what it may carry over: the running release's
    assert not lay.marker.exists() and not lay.work.exists()
    assert system.log.index("stop") < system.log.index("self-check") < system.log.index("start")
    # What the page said at each step: building the environment (minutes on
    # a Pi) is installing, not still checking the file.
    assert system.said[system.log.index("build")] == "installing"
    assert system.said[system.log.index("self-check")] == "checking"
    assert _games(lay) == before
    assert updates.status_text(result) == "Updated to 2.0 (was 1.0)."


@pytest.mark.parametrize("how", ["other key", "truncated", "flipped byte", "not a bundle"])
def test_a_bad_bundle_leaves_the_box_as_it_was(tmp_path, keys, make_bundle, how):
    lay, system, inst = _box(tmp_path, keys)
    good = make_bundle("2.0")
    bad = tmp_path / "bad.bundle"
    if how == "other key":
        shutil.copy(make_bundle("2.0", key="other"), bad)
    elif how == "truncated":
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif how == "flipped byte":
        data = bytearray(good.read_bytes())
        data[1000] ^= 1
        bad.write_bytes(bytes(data))
    else:
        bad.write_bytes(b"hello\n")
    before = _games(lay)
    result = inst.install(bad)
    assert result["state"] == "failed"
    assert updater.release_of(lay.current) == "1.0"
    assert sorted(p.name for p in lay.releases.iterdir()) == ["1.0"]
    assert "stop" not in system.log          # the box kept serving
    assert _games(lay) == before
    text = updates.status_text(result)
    assert text.startswith("Update refused: still on 1.0: ")
    want = {"other key": "not signed by a release key", "truncated": "cut short",
            "flipped byte": "not signed by a release key", "not a bundle": "cut short"}[how]
    assert want in text


def test_a_version_failing_its_self_check_is_not_switched_to(tmp_path, keys, make_bundle):
    lay, system, inst = _box(tmp_path, keys)
    before = _games(lay)
    result = inst.install(make_bundle("2.1", broken=True))
    assert result["state"] == "failed", result
    assert updater.release_of(lay.current) == "1.0"
    assert not (lay.releases / "2.1").exists()
    assert system.running
    assert _games(lay) == before
    text = updates.status_text(result)
    assert text.startswith("Update to 2.1 failed: back on 1.0: its self-check failed")
    assert "scoreboard" in text


def test_a_version_that_does_not_stay_up_is_rolled_back_with_its_store(tmp_path, keys, make_bundle):
    lay, system, inst = _box(tmp_path, keys)
    before = _games(lay)

    def crashes(release):
        # The new version wrote to the store in its own newer format before crashing.
        db = sqlite3.connect(lay.data / "companion.db")
        db.execute("PRAGMA user_version=99")
        db.commit()
        db.close()
        return "it crashed 3 times"
    system.health = crashes
    result = inst.install(make_bundle("2.0"))
    assert result["state"] == "failed"
    assert updater.release_of(lay.current) == "1.0"
    assert system.running
    assert _games(lay) == before            # the pre-update store, readable by 1.0 again
    assert updates.status_text(result) == ("Update to 2.0 failed: back on 1.0: "
                                           "the new version did not stay up: it crashed 3 times")
    # and a later update works
    system.health = lambda release: None
    assert inst.install(make_bundle("2.0"))["state"] == "done"
    assert updater.release_of(lay.current) == "2.0"


def test_an_older_companion_refuses_a_newer_store_untouched(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "companion.db")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    before = (tmp_path / "companion.db").read_bytes()
    with pytest.raises(StoreError, match="newer companion"):
        Store(tmp_path)
    assert (tmp_path / "companion.db").read_bytes() == before
    assert not list(tmp_path.glob("*.damaged-*"))


def test_a_format_no_companion_writes_is_a_scribbled_header_and_the_store_is_recovered(tmp_path):
    """Four scribbled bytes at offset 60 (``user_version``) must not keep the
    box from starting: no companion stamps 16777217, so it is damage."""
    store = Store(tmp_path)
    first = '{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]}'
    gid = store.create_game("scoreboard", ["Ann", "Ben"], first)
    store.close()
    path = tmp_path / "companion.db"
    data = bytearray(path.read_bytes())
    data[60:64] = (16777217).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    store = Store(tmp_path)                       # opens, does not raise
    try:
        assert store.lines(gid) == [first]
        assert store.warnings and "damaged" in store.warnings[0][0]
        assert list(tmp_path.glob("*.damaged-*"))
    finally:
        store.close()


STEPS = ["build", "stop", "self-check", "start", "wait"]


@pytest.mark.parametrize("cut_at", STEPS)
def test_a_cut_at_any_step_comes_back_on_one_version_and_a_later_update_works(tmp_path, keys, make_bundle, cut_at):
    lay, system, inst = _box(tmp_path, keys)
    before = _games(lay)
    system.cut_at = cut_at
    with pytest.raises(Cut):
        inst.install(make_bundle("2.0"))
    # The boot: the root check before the service, then the worker once it runs.
    system.cut_at = None
    system.running = False
    reboot = Installer(lay, system, machine="x86_64")
    reboot.recover()
    system.start()
    reboot.resume()
    on = updater.release_of(lay.current)
    assert on in ("1.0", "2.0")
    assert (lay.releases / on / "src/RELEASE").read_text() == on
    assert not lay.marker.exists()
    assert system.running
    assert _games(lay) == before
    if on == "1.0":
        text = updates.status_text(durable.read_json(lay.status))
        assert text.startswith(("Update to 2.0 failed: back on 1.0: ", "Update refused: still on 1.0: ")), text
        assert "cut short" in text
    assert inst.install(make_bundle("3.0"))["state"] == "done"
    assert updater.release_of(lay.current) == "3.0"
    assert _games(lay) == before


def test_switching_a_link_is_one_rename(tmp_path):
    (tmp_path / "releases/a").mkdir(parents=True)
    (tmp_path / "releases/b").mkdir()
    link = tmp_path / "current"
    durable.switch_link(link, "releases/a")
    durable.switch_link(link, "releases/b")
    assert os.readlink(link) == "releases/b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "releases"]


def test_the_key_list_ignores_lines_that_are_not_keys(tmp_path, keys):
    listing = tmp_path / "keys"
    listing.write_text(f"# comment\nssh-rsa AAAA\ned25519 !!!\n{keys['good'][1]}\n")
    assert len(bundles.read_keys(listing)) == 1
    assert bundles.read_keys(tmp_path / "missing") == []


def test_the_service_side_only_drops_the_bundle_and_asks(tmp_path, keys, make_bundle):
    lay = Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root", keys=tmp_path / "k")
    updates.request_update(lay, make_bundle("2.0"), "abc")
    assert lay.incoming.read_bytes() == make_bundle("2.0").read_bytes()
    assert updater.take_request(lay) == "abc"
    lay.prefix.mkdir()
    Installer(lay, FakeSystem(lay), machine="x86_64").install(lay.incoming, "abc")   # no release: refused
    assert updater.take_request(lay) is None
    assert durable.read_json(lay.status)["request"] == "abc"


def test_an_update_asked_for_is_on_the_card_before_the_phone_is_told(tmp_path, make_bundle, monkeypatch):
    """The bundle and the request are flushed before each rename and the
    inbox after each: a power cut after the 202 cannot lose the request."""
    lay = Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root", keys=tmp_path / "k")
    bundle = make_bundle("2.0")
    events = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd):
        target = os.readlink(f"/proc/self/fd/{fd}")
        events.append(("flushed", re.sub(r"[0-9a-f]{12}", "*", Path(target).name),
                       os.path.getsize(target) if os.path.isfile(target) else None))
        real_fsync(fd)

    def rename(src, dst, **kw):
        events.append(("renamed", re.sub(r"[0-9a-f]{12}", "*", Path(src).name), Path(dst).name))
        real_rename(src, dst, **kw)
    monkeypatch.setattr(durable.os, "fsync", fsync)
    monkeypatch.setattr(durable.os, "rename", rename)
    updates.request_update(lay, bundle, "abc")
    size = bundle.stat().st_size
    assert events == [("flushed", ".incoming.bundle.*.tmp", size),
                      ("renamed", ".incoming.bundle.*.tmp", lay.incoming.name),
                      ("flushed", lay.inbox.name, None),
                      ("flushed", ".request.*.tmp", 3),
                      ("renamed", ".request.*.tmp", lay.request.name),
                      ("flushed", lay.inbox.name, None)]


def test_an_environment_that_cannot_be_built_leaves_the_box_as_it_was(tmp_path, keys, make_bundle):
    lay, system, inst = _box(tmp_path, keys)

    def no_room(release, wheels, running=None):
        (release / "venv").mkdir()
        raise OSError(28, "No space left on device")
    system.build_env = no_room
    result = inst.install(make_bundle("2.0"))
    assert result["state"] == "failed"
    assert "No space left on device" in updates.status_text(result)
    assert sorted(p.name for p in lay.releases.iterdir()) == ["1.0"]
    assert updater.release_of(lay.current) == "1.0" and "stop" not in system.log
