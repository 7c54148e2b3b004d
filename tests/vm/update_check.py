"""``appliance-vm --update``: signed updates with rollback on the installed box.

On the host, with a throw-away release key made for the run: two good
bundles (versions A and B, to go back and forth), one whose version fails
its self-check (a packaged sample no longer replays), one signed by another
key and one cut in half.  In the guest the key goes into
/etc/companion/release-keys as install.sh would list it.  Each bundle is
sent as a phone sends it (``POST /api/update`` with the PIN) and followed
on ``GET /api/update``; the box must end on the right version, serving,
with every acknowledged action.  Then the power is cut N times
(``--update-cuts``) at a random moment of an update: after each the box must
serve by itself on exactly one of the two versions with every acknowledged
action.  The whole good update comes last, after the cuts: it is both the
measured update and the proof that an update still works after them.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import vmlib

VERSIONS = ("9.0.1", "9.0.2")
BAD = "9.1.0-bad"
FINAL = ("done", "failed")
WAIT_S = 1800      # one update in the emulated guest (its environment built from 30 wheels), generous


def make_bundles(workdir: Path, arch: str, say) -> dict:
    """The run's bundles and its public key line, built on the host."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}[arch]
    out = workdir / "bundles"
    out.mkdir()
    # The repository's own environment (the README's test command makes it)
    # has what `companion bundle` needs (cryptography); else this Python.
    venv = vmlib.REPO / ".venv/bin/python"
    companion = [str(venv) if venv.exists() else sys.executable, "-m", "appliance.cli"]
    key, other = out / "release.pem", out / "other.pem"
    public = subprocess.run([*companion, "bundle", "--new-key", str(key)], check=True,
                            capture_output=True, text=True).stdout.strip()
    subprocess.run([*companion, "bundle", "--new-key", str(other)], check=True, capture_output=True)
    wheels = vmlib.wheelhouse(arch)
    source = out / "source"
    for name in vmlib.git_files():
        dest = source / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(vmlib.REPO / name, dest, follow_symlinks=False)
    bad_source = out / "bad-source"
    shutil.copytree(source, bad_source)
    sample = next((bad_source / "companion/samples").glob("scoreboard*.expect.json"))
    want = json.loads(sample.read_text())
    want["state"]["scores"] = [12345]
    sample.write_text(json.dumps(want))

    def bundle(name, version, src, with_key):
        path = out / name
        subprocess.run([*companion, "bundle", str(path), "--key", str(with_key), "--version", version,
                        "--machine", machine, "--wheels", str(wheels), "--source", str(src)],
                       check=True, capture_output=True)
        return path
    say("vm: --update: building the bundles on the host")
    made = {"key": public,
            VERSIONS[0]: bundle("a.bundle", VERSIONS[0], source, key),
            VERSIONS[1]: bundle("b.bundle", VERSIONS[1], source, key),
            "bad": bundle("bad.bundle", BAD, bad_source, key),
            "other-key": bundle("other.bundle", "9.2.0", source, other)}
    truncated = out / "truncated.bundle"
    data = made[VERSIONS[0]].read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    made["truncated"] = truncated
    return made


def post_bundle(vm, path: Path, timeout: float = 600) -> tuple[int, dict]:
    status, body = vm.http("POST", "/api/update", path.read_bytes(),
                           {"X-Table-Pin": vm.pin, "Content-Type": "application/octet-stream"}, timeout=timeout)
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

    bundles = make_bundles(run.workdir, run.arch, say)
    if not vm.running:           # after the power cuts the guest is up and serving already
        run.boot(link=True)
        run.guest_serving()
    vm.wait_http()
    vm.must(f"echo '{bundles['key']} appliance-vm' >> /etc/companion/release-keys")
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
    # Refused bundles: the box stays on its version, serving, and says why.
    for name, words in (("other-key", "not signed"), ("truncated", "cut short")):
        final, _ = update(bundles[name])
        result["refused"][name] = final and final["text"]
        if not final or final["state"] != "failed" or words not in final["text"] or current(vm) != first:
            fail(f"the {name} bundle was not refused as it should: {final}")
        act(1)
    final, seconds = update(bundles["bad"])
    result["bad_rolled_back_s"] = round(seconds, 1)
    result["refused"]["self-check"] = final and final["text"]
    if not final or final["state"] != "failed" or "self-check" not in final["text"] or current(vm) != first:
        fail(f"the bundle failing its self-check was not rolled back: {final}")
    act(1)
    say(f"vm: --update: self-check failure rolled back in {result['bad_rolled_back_s']} s, "
        f"refusals: {result['refused']}")

    def next_version(here: str) -> str:
        return VERSIONS[1] if here == VERSIONS[0] else VERSIONS[0]

    # Cuts at random moments of an update: anywhere from the upload to a
    # little past the time a whole update took (the rolled-back one builds,
    # switches and checks as a good one does), so some fall in the build,
    # some after the switch, in the new version's start and self-check.
    span = max(5.0, 1.1 * (result["bad_rolled_back_s"] or 60.0))
    for i in range(cuts):
        here = current(vm)
        target = next_version(here)
        act(1)
        code, answer = post_bundle(vm, bundles[target])
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
    target = next_version(here)
    final, seconds = update(bundles[target])
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
