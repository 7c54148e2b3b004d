"""``appliance-vm --update``: signed updates with rollback on the installed box.

Right after install the box gets its owner as root makes one (``companion
owner``, the password on stdin): updates are the owner's, and a phone sends
``X-Owner-Password``; the table PIN alone is refused (401).  On the host,
with a throw-away release key made for the run, bundles (``companion bundle``
from the run's wheelhouse) are made as they are needed (:class:`Bundler`),
each with a version newer than any before it, since a box only goes forward:
one whose version fails its self-check (a packaged sample no longer
replays), one signed by another key, one cut in half, and good ones.  In the
guest the key goes into /etc/companion/release-keys as install.sh would list
it.  Each bundle is sent as a phone sends it (``POST /api/update``) and
followed on ``GET /api/update``; the box must end on the right version,
serving, with every acknowledged action.  Then the power is cut N times
(``--update-cuts``) at a random moment of an update: after each the box must
serve by itself on exactly one of the two versions with every acknowledged
action.  The whole good update comes last, after the cuts: it is both the
measured update and the proof that an update still works after them.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import vmlib

FINAL = ("done", "failed")
WAIT_S = 1800      # one update in the emulated guest (its environment built from 30 wheels), generous
COMPANION = "/opt/companion/current/venv/bin/companion"
# The owner's password for the run (10+ characters, not only digits).
OWNER_PASSWORD = "vm owner password 1"


def release_base() -> int:
    """The major version of the run's bundles: above the repository's own,
    which install.sh installs, so that every bundle is an update forward."""
    text = (vmlib.REPO / "companion/__init__.py").read_text()
    release = vmlib.REPO / "RELEASE"
    if release.exists():
        text += f'\n__version__ = "{release.read_text().strip()}"'
    majors = [int(m) for m in re.findall(r'^__version__ = "(\d+)', text, re.M)]
    return max([9] + [m + 1 for m in majors])


class Bundler:
    """The run's release keys, its two source trees (the repository's files
    as git lists them, and a copy whose packaged sample no longer replays)
    and the bundles made from them on the host.  update_check makes it
    (``run.bundler``); trust_check makes more bundles with the same key.

    A box installs only versions newer than any it ran, so :meth:`newer`
    hands out ``B.1.0``, ``B.2.0``... each once; ``B.0.0``, below all of
    them, is never handed out (trust_check sends it as an older version)."""

    def __init__(self, workdir: Path, arch: str, say):
        self.machine = {"amd64": "x86_64", "arm64": "aarch64"}[arch]
        self.out = workdir / "bundles"
        self.out.mkdir(exist_ok=True)
        # The repository's own environment (the README's test command makes it)
        # has what `companion bundle` needs (cryptography); else this Python.
        venv = vmlib.REPO / ".venv/bin/python"
        self.companion = [str(venv) if venv.exists() else sys.executable, "-m", "appliance.cli"]
        self.key, self.other = self.out / "release.pem", self.out / "other.pem"
        self.public = self.new_key(self.key)
        self.new_key(self.other)
        self.wheels = vmlib.wheelhouse(arch)
        self.source = self.out / "source"
        if not self.source.exists():
            for name in vmlib.git_files():
                dest = self.source / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(vmlib.REPO / name, dest, follow_symlinks=False)
        self.bad_source = self.out / "bad-source"
        if not self.bad_source.exists():
            shutil.copytree(self.source, self.bad_source, symlinks=True)
            sample = next((self.bad_source / "companion/samples").glob("scoreboard*.expect.json"))
            want = json.loads(sample.read_text())
            want["state"]["scores"] = [12345]
            sample.write_text(json.dumps(want))
        self.base = release_base()
        self.count = 0
        say("vm: --update: bundles are built on the host as they are needed")

    def new_key(self, path: Path) -> str:
        """A new private release key in ``path``; its public line."""
        path.unlink(missing_ok=True)
        return subprocess.run([*self.companion, "bundle", "--new-key", str(path)], check=True,
                              capture_output=True, text=True).stdout.strip()

    def newer(self) -> str:
        self.count += 1
        return f"{self.base}.{self.count}.0"

    def make(self, version: str, *, bad: bool = False, key: Path | None = None) -> Path:
        """A bundle of ``version`` (of the failing source with ``bad``), signed
        with the run's release key or ``key``."""
        key = key or self.key
        path = self.out / f"{version}{'-bad' if bad else ''}{'' if key == self.key else '-' + key.stem}.bundle"
        if not path.exists():
            subprocess.run([*self.companion, "bundle", str(path), "--key", str(key), "--version", version,
                            "--machine", self.machine, "--wheels", str(self.wheels),
                            "--source", str(self.bad_source if bad else self.source)],
                           check=True, capture_output=True)
        return path


def make_owner(vm, password: str = OWNER_PASSWORD) -> None:
    """The box's owner, as root makes one on a box installed by hand: root's
    own record and the service's copy of the hash; ``vm.owner_password``."""
    res = vm.sh(f"{COMPANION} owner --data /var/lib/companion", input=password + "\n", timeout=600)
    if not res.ok:
        raise vmlib.GuestError(f"companion owner failed: {res}")
    vm.must("test -s /var/lib/companion-owner/owner.json && test -s /var/lib/companion/owner.json")
    vm.owner_password = password


def owner(vm, **headers) -> dict:
    """The headers of a request that only the box's owner may make."""
    return {"X-Owner-Password": vm.owner_password, **headers}


def post_bundle(vm, path: Path, timeout: float = 600) -> tuple[int, dict]:
    status, body = vm.http("POST", "/api/update", path.read_bytes(),
                           owner(vm, **{"Content-Type": "application/octet-stream"}), timeout=timeout)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, {"raw": body[:200].decode("utf-8", "replace")}


def status(vm) -> dict | None:
    try:
        code, body = vm.http("GET", "/api/update", timeout=10)
    except (OSError, http.client.HTTPException):
        return None          # the box restarts during an update
    return json.loads(body) if code == 200 else None


def guest_view(vm, lines: int = 8) -> str:
    """What the guest says of its installer: the unit, its journal, its processes."""
    res = vm.sh("systemctl is-active companion-update.service; "
                f"journalctl -b -u companion-update.service -o cat --no-pager | tail -{lines}; "
                "ps -eo etimes,pcpu,args --sort=-pcpu | head -6", timeout=60)
    return (res.stdout + res.stderr).strip()


def wait_final(vm, timeout: float = WAIT_S, say=None) -> dict:
    start = time.monotonic()
    end, told = start + timeout, start
    last = None
    while time.monotonic() < end:
        found = status(vm)
        if found and found["state"] in FINAL:
            return found
        last = found or last
        if say and time.monotonic() - told > 120:      # a long update: say what the guest is doing
            told = time.monotonic()
            say(f"vm: --update: {time.monotonic() - start:.0f} s, {last and last['state']}; the guest:\n"
                + guest_view(vm, 4))
        time.sleep(2)
    raise vmlib.GuestError(f"no update result within {timeout:.0f} s (last: {last}); the guest:\n"
                           + guest_view(vm, 40))


def current(vm) -> str:
    return vm.must("basename \"$(readlink /opt/companion/current)\"").strip()


def check(run, cuts: int, say) -> dict:
    vm = run.vm
    result = {"ok": True, "good_s": None, "bad_rolled_back_s": None, "cuts_during_update": 0, "lost": 0,
              "versions_seen": [], "refused": {}}

    def fail(what):
        result["ok"] = False
        run.fail(f"--update: {what}")

    bundler = run.bundler = Bundler(run.workdir, run.arch, say)
    if not vm.running:           # after the power cuts the guest is up and serving already
        run.boot(link=True)
        run.guest_serving()
    vm.wait_http()
    vm.must(f"echo '{bundler.public} appliance-vm' >> /etc/companion/release-keys")
    make_owner(vm)
    # The table PIN is for the game: an update with it alone is refused
    # before the body is read, whatever the body is.
    code, body = vm.http("POST", "/api/update", b"not a bundle",
                         {"X-Table-Pin": vm.pin, "Content-Type": "application/octet-stream"}, timeout=60)
    result["refused"]["pin-alone"] = code
    if code != 401:
        fail(f"an update sent with the table PIN alone answered {code} {body[:200]!r}, not 401")
        if code == 202:
            wait_final(vm, say=say)      # let the worker be done with it before the real ones
    code, body = vm.http("POST", "/api/actions", {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
                         {"X-Table-Pin": vm.pin}, timeout=60)
    acked = []

    def act(n=3):
        for i in range(n):
            action = {"type": "add", "seat": i % 2, "points": i + 1}
            code, _ = vm.http("POST", "/api/actions", action, {"X-Table-Pin": vm.pin}, timeout=60)
            if code == 200:
                acked.append(action)

    def lost() -> int:
        lines = [json.loads(line) for line in run.read_store()["lines"]]
        adds = [a for a in lines if a.get("type") == "add"]
        missing = len(acked) - sum(1 for a, b in zip(adds, acked) if a == b)
        return max(0, missing)

    def update(path):
        t = time.monotonic()
        code, answer = post_bundle(vm, path)
        if code != 202:
            fail(f"POST /api/update answered {code} {answer}")
            return None, 0.0
        final = wait_final(vm, say=say)
        vm.wait_http()
        return final, time.monotonic() - t

    first = current(vm)
    seen = {first}
    act()
    # Every bundle carries a version newer than any before it: what is
    # refused below must be refused for what it is, not for going backwards.
    other_key = bundler.make(bundler.newer(), key=bundler.other)
    bad = bundler.make(bundler.newer(), bad=True)
    truncated = bundler.out / "truncated.bundle"
    data = bad.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    # Refused bundles: the box stays on its version, serving, and says why.
    for name, path, words in (("other-key", other_key, "not signed"), ("truncated", truncated, "cut short")):
        final, _ = update(path)
        result["refused"][name] = final and final["text"]
        if not final or final["state"] != "failed" or words not in final["text"] or current(vm) != first:
            fail(f"the {name} bundle was not refused as it should: {final}")
        act(1)
    final, seconds = update(bad)
    result["bad_rolled_back_s"] = round(seconds, 1)
    result["refused"]["self-check"] = final and final["text"]
    if not final or final["state"] != "failed" or "self-check" not in final["text"] or current(vm) != first:
        fail(f"the bundle failing its self-check was not rolled back: {final}")
    act(1)
    say(f"vm: --update: self-check failure rolled back in {result['bad_rolled_back_s']} s, "
        f"refusals: {result['refused']}")

    # Cuts at random moments of an update: anywhere from the upload to a
    # little past the time a whole update took (the rolled-back one builds,
    # switches and checks as a good one does), so some fall in the build,
    # some after the switch, in the new version's start and self-check.
    span = max(5.0, 1.1 * (result["bad_rolled_back_s"] or 60.0))
    for i in range(cuts):
        here = current(vm)
        target = bundler.newer()
        path = bundler.make(target)      # built before the upload, not inside the cut's span
        act(1)
        code, answer = post_bundle(vm, path)
        if code != 202:
            fail(f"cut {i + 1}: POST /api/update answered {code} {answer}")
            break
        time.sleep(run.rng.uniform(0.0, span))
        vm.cut()
        result["cuts_during_update"] += 1
        run.boot(link=True)
        run.guest_serving()
        vm.wait_http()
        final = wait_final(vm, say=say)        # the worker finishes or reverts what was pending
        vm.wait_http()
        on = current(vm)
        seen.add(on)
        missing = lost()
        result["lost"] += missing
        active = vm.sh("systemctl is-active companion").stdout.strip()
        say(f"vm: --update: cut {i + 1}/{cuts} during the update {here} -> {target}: back on {on} "
            f"({final['state']}: {final['text'][:90]}), {missing} acknowledged actions lost")
        if on not in (here, target) or active != "active" or missing:
            fail(f"cut {i + 1}: on {on!r} ({active}), {missing} lost")
    # The whole good update, after the cuts: measured, and it must work.
    here = current(vm)
    target = bundler.newer()
    final, seconds = update(bundler.make(target))
    result["good_s"] = round(seconds, 1)
    if not final or final["state"] != "done" or current(vm) != target:
        fail(f"the good bundle was not installed{' after the cuts' if cuts else ''}: {final}, on {current(vm)}")
    act(1)
    seen.add(current(vm))
    # What both releases have of the same wheels is one file on the card,
    # linked (appliance/envreuse.py), not installed again: pip's thousand
    # files the plainest case, since install.sh puts the lock's pip in and
    # every bundle carries it.  A bundle whose pip differs from the box's
    # would install it afresh at every update, a minute of a Pi's.
    inode = "stat -c %i /opt/companion/releases/{}/venv/lib/python3*/site-packages/pip/__init__.py"
    pips = {vm.sh(inode.format(r)).stdout.strip() for r in (here, current(vm))}
    result["carried_over"] = len(pips) == 1 and "" not in pips
    if not result["carried_over"]:
        fail(f"the update from {here} installed pip afresh instead of linking the running release's ({pips})")
    say(f"vm: --update: {here} -> {target} in {result['good_s']} s")
    result["versions_seen"] = sorted(seen)
    result["lost"] = max(result["lost"], lost())
    if result["lost"]:
        fail(f"{result['lost']} acknowledged actions lost")
    return result
