"""The root worker's command: whose code finishes an update, and which requests it serves.

After the switch ``current`` is the new release, and the units run
``current``'s command: after a power cut during the health check the check
and the rollback would run from the new code alone.  So the worker hands a
pending update to the release it came from (``execv``, an exec function
injected here).  The worker also serves the release keys' requests
(appliance/root/keys.py, stubbed here) and going back.
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import pytest

from companion import durable
from appliance.root import updater
from appliance.root.updater import Installer
from test_update import _box, keys  # noqa: F401 (fixtures)
from test_update_faults import QuickSystem, _plain_release

REPO = Path(__file__).resolve().parents[2]


class Execd(BaseException):
    """The process image replaced: nothing after it runs."""


def _pending_from_1_0(tmp_path, keys):
    """A cut during the health check: 2.0 current (and running the units), 1.0 the release it came from."""
    lay, _system, _inst = _box(tmp_path, keys)
    _plain_release(lay, "2.0")
    durable.switch_link(lay.previous, "releases/1.0")
    durable.switch_link(lay.current, "releases/2.0")
    durable.write_json(lay.marker, {"from": "1.0", "to": "2.0", "phase": updater.SWITCHED, "previous": None})
    program = lay.releases / "1.0/venv/bin/companion"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    system = QuickSystem(lay)
    return lay, system, Installer(lay, system, machine="x86_64", owner_dir=tmp_path / "owner"), program


def _keys_stub(monkeypatch, calls):
    module = types.ModuleType("appliance.root.keys")
    module.serve_request = lambda layout, owner_dir: calls.append((layout, owner_dir))
    monkeypatch.setitem(sys.modules, "appliance.root.keys", module)


ARGV = ["update", "--worker", "--data", "/var/lib/companion"]


@pytest.mark.parametrize("job", ["worker", "recover"])
def test_a_pending_update_is_finished_by_the_code_it_came_from(tmp_path, keys, job):
    lay, system, inst, program = _pending_from_1_0(tmp_path, keys)
    execs, environ = [], {}

    def execv(path, argv):
        execs.append((path, argv, dict(environ)))
        raise Execd()
    args = argparse.Namespace(worker=job == "worker", recover=job == "recover", file=None)
    with pytest.raises(Execd):
        updater.command(lay, args, installer=inst, execv=execv, environ=environ, argv=ARGV)
    assert execs == [(str(program), [str(program), *ARGV], {updater.FROM_ENV: "1.0"})]
    assert system.log == [] and lay.marker.exists()      # nothing done by this (the new) code


def test_handed_over_once_and_never_to_itself(tmp_path, keys, monkeypatch):
    lay, system, inst, program = _pending_from_1_0(tmp_path, keys)

    def execv(path, argv):
        raise AssertionError("handed over again")
    args = argparse.Namespace(worker=False, recover=True, file=None)
    # The process started by the hand-over: it finishes the job.
    assert updater.command(lay, args, installer=inst, execv=execv, environ={updater.FROM_ENV: "1.0"}) == 0
    # A process already running from the release the update came from.
    venv = lay.releases / "1.0/venv"
    (venv / "bin/companion").unlink()
    (venv / "bin").rmdir()
    venv.rmdir()
    venv.symlink_to(sys.prefix)
    assert (venv / "bin/companion").exists() or pytest.skip("this environment has no companion command")
    assert updater.command(lay, args, installer=inst, execv=execv, environ={}) == 0


def test_no_pending_update_no_hand_over(tmp_path, keys, monkeypatch):
    lay, system, inst, program = _pending_from_1_0(tmp_path, keys)
    lay.marker.unlink()

    def execv(path, argv):
        raise AssertionError("handed over")
    _keys_stub(monkeypatch, [])
    args = argparse.Namespace(worker=True, recover=False, file=None)
    assert updater.command(lay, args, installer=inst, execv=execv, environ={}) == 0


def test_the_worker_serves_the_release_keys_requests(tmp_path, keys, monkeypatch):
    lay, _system, _inst = _box(tmp_path, keys)
    inst = Installer(lay, QuickSystem(lay), machine="x86_64", owner_dir=tmp_path / "owner")
    calls = []
    _keys_stub(monkeypatch, calls)
    args = argparse.Namespace(worker=True, recover=False, file=None)
    assert updater.command(lay, args, installer=inst, execv=None, environ={}) == 0
    assert calls == [(lay, tmp_path / "owner")]


def test_the_path_unit_starts_the_worker_for_every_request():
    unit = (REPO / "systemd/companion-update.path").read_text()
    watched = {line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("PathExists=")}
    assert watched == {f"/var/lib/companion/update/{name}" for name in ("request", "back-request", "keys-request")}
