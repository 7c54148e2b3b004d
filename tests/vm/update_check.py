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
import threading
import time
from pathlib import Path

import vmlib
from companion.limits import MAX_GAME_LINES

FINAL = ("done", "failed")
WAIT_S = 1800      # one update in the emulated guest (its environment built from 30 wheels), generous
COMPANION = "/opt/companion/current/venv/bin/companion"
# The owner's password for the run (10+ characters, not only digits).
OWNER_PASSWORD = "vm owner password 1"
# A phone's pace: an action every PAUSE_S at most (a game holds MAX_GAME_LINES).
PAUSE_S = 0.2
# The sick version dies this long after each READY=1 (the health check wants 15 s up).
SICK_AFTER_S = 6
# The moments of an update a cut is aimed at, in order; cut i aims at PHASES[i % 7].
PHASES = ("upload", "verify", "build", "back-up", "switch", "health check", "after")


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

    def make(self, version: str, *, bad: bool = False, sick: bool = False, key: Path | None = None) -> Path:
        """A bundle of ``version`` (of the failing source with ``bad``, of one
        that serves and then fails its health check with ``sick``), signed
        with the run's release key or ``key``."""
        key = key or self.key
        kind = "-bad" if bad else "-sick" if sick else ""
        path = self.out / f"{version}{kind}{'' if key == self.key else '-' + key.stem}.bundle"
        source = self.bad_source if bad else self.sick_source() if sick else self.source
        if not path.exists():
            subprocess.run([*self.companion, "bundle", str(path), "--key", str(key), "--version", version,
                            "--machine", self.machine, "--wheels", str(self.wheels), "--source", str(source)],
                           check=True, capture_output=True)
        return path

    def sick_source(self) -> Path:
        """The source of a version that passes its self-check, starts, serves
        the table (acknowledging its actions), then dies SICK_AFTER_S after
        each READY=1: it never stays up the health check's SETTLE_S, so the
        installer rolls it back after it acknowledged actions."""
        sick = self.out / "sick-source"
        if not sick.exists():
            shutil.copytree(self.source, sick, symlinks=True)
            runner = sick / "appliance/runner.py"
            text = runner.read_text()
            ready = 'sdnotify.notify("READY=1")'
            if text.count(ready) != 1:
                raise RuntimeError(f"appliance/runner.py no longer says {ready} once: the sick bundle needs it")
            runner.write_text(text.replace(ready, ready + f"; __import__('threading').Timer({SICK_AFTER_S}, "
                                           "__import__('os')._exit, (3,)).start()  # tests/vm: a sick version"))
        return sick


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




# -- a phone posting actions all through an update ------------------------------------------------

class Actions:
    """A phone at the table posting ``add`` actions, one after the other,
    all through an update: each answer counted.  200 is acknowledged (it
    must be in the store); no answer at all (the box went down under it)
    is unknown (it may be); a refused connection was never sent; any other
    answer is a refusal, recorded, and fails the run (the box refuses no
    good action, updating or not).  ``watch``: each action is framed by two
    ``GET /api/update``, whose ``version`` (the current link) says which
    version acknowledged it when both agree."""

    def __init__(self, vm, rng, watch: bool = False):
        self.vm, self.rng, self.watch = vm, rng, watch
        self.sent: list[dict] = []
        self.refused: list[str] = []
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.n = 0

    def start(self) -> "Actions":
        self.thread = threading.Thread(target=self._post, daemon=True, name="update-actions")
        self.thread.start()
        return self

    def stop(self) -> "Actions":
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(120)
        return self

    def _version(self) -> str | None:
        found = status(self.vm)
        return found and found.get("version")

    def _post(self) -> None:
        vm = self.vm
        while not self.stop_event.is_set():
            self.n += 1
            action = {"type": "add", "seat": self.n % 3, "points": self.rng.randint(-5, 20)}
            before = self._version() if self.watch else None
            try:
                code, body = vm.http("POST", "/api/actions", action, {"X-Table-Pin": vm.pin}, timeout=30)
            except ConnectionRefusedError:
                self.stop_event.wait(0.3)           # the box is not up: nothing was sent
                continue
            except (OSError, http.client.HTTPException):
                self.sent.append({"line": json.dumps(action), "outcome": "unknown"})
                self.stop_event.wait(0.3)
                continue
            if code == 200:
                after = self._version() if self.watch else None
                self.sent.append({"line": json.dumps(action), "outcome": "acked", "by": before if before == after
                                  else None})
            else:
                self.refused.append(f"{code} {body[:160]!r}")
                self.stop_event.wait(0.5)
            self.stop_event.wait(PAUSE_S)

    @property
    def acked(self) -> list[str]:
        return [s["line"] for s in self.sent if s["outcome"] == "acked"]

    def entries(self) -> list[tuple[str, bool]]:
        return [(s["line"], s["outcome"] == "acked") for s in self.sent]


# -- a cut aimed at a moment of an update ----------------------------------------------------------

# Run in the guest (its python3, stdlib only): waits, watching root's
# folder, the service's inbox and the release links (inotify), until the
# update reaches the aimed step; waits ``delay`` more; freezes the unit that
# runs it (cgroup.freeze: the step goes no further) and says where the
# update is.  The harness then cuts.
TRAP = r"""
import ctypes, json, os, select, sys, time
spec = json.loads(sys.argv[1])
paths = dict({"root": "/var/lib/companion-update", "inbox": "/var/lib/companion/update", "opt": "/opt/companion",
              "cgroup": "/sys/fs/cgroup/system.slice", "armed": "/run/companion-vm-trap.armed"},
             **spec.get("paths", {}))
ROOT, INBOX, OPT = paths["root"], paths["inbox"], paths["opt"]
STEPS = {"prepared": "back-up", "backed-up": "back-up", "checking": "back-up", "switching": "switch",
         "switched": "health check", "rolling-back": "rolling back"}

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def link(name):
    try:
        return os.path.basename(os.readlink(OPT + "/" + name))
    except OSError:
        return None

first = (load(ROOT + "/status.json") or {}).get("request")

def where():
    marker = load(ROOT + "/pending.json") or {}
    state = load(ROOT + "/status.json") or {}
    mine = state.get("request") not in (None, first)
    if marker.get("phase"):
        return STEPS.get(marker["phase"], marker["phase"]), marker["phase"]
    if mine and state.get("state") in ("done", "failed"):
        return "after", state["state"]
    if mine and state.get("state") in ("verifying", "installing"):
        return ("verify" if state["state"] == "verifying" else "build"), state["state"]
    if os.path.exists(INBOX + "/request"):
        return "verify", "asked"
    return "upload", "receiving" if receiving() else "sending"

def receiving():    # the service's one durable write of the bundle: .incoming.bundle.<random>.tmp
    try:
        return any(n.startswith(".incoming.bundle.") and n.endswith(".tmp") for n in os.listdir(INBOX))
    except OSError:
        return False

ORDER = ["sending", "receiving", "asked", "verifying", "installing", "prepared", "backed-up", "checking",
         "switching", "switched", "rolling-back", "done"]
TARGET = {"upload": "receiving", "verify": "verifying", "build": "installing", "switch": "switching",
          "health check": "switched", "after": "done"}

def position():
    step = where()[1]
    return ORDER.index("done" if step == "failed" else step) if step in ORDER or step == "failed" else -1

def reached():      # "yes" at the aimed step, "passed" once beyond it (the trap then gives up), else None
    if spec.get("variant") == "between the links":
        target = ORDER.index("switching")
        if position() == target and link("previous") == spec["here"]:
            return "yes"
    else:
        target = ORDER.index(spec.get("variant") or TARGET[spec["aim"]])
        if position() == target:
            return "yes"
    return "passed" if position() > target else None

libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
for folder in (ROOT, INBOX, OPT):
    os.makedirs(folder, exist_ok=True)
    libc.inotify_add_watch(fd, folder.encode(), 0x100 | 0x80 | 0x8 | 0x200)   # CREATE MOVED_TO CLOSE_WRITE DELETE
open(paths["armed"], "w").close()
end = time.monotonic() + spec["timeout"]
while reached() is None and time.monotonic() < end:
    select.select([fd], [], [], 0.25)
    try:
        os.read(fd, 65536)
    except BlockingIOError:
        pass
hit = reached() == "yes"
time.sleep(spec.get("delay", 0))
frozen = None
if spec.get("freeze"):
    path = "%s/%s/cgroup.freeze" % (paths["cgroup"], spec["freeze"])
    if os.path.exists(path):
        with open(path, "w") as f:
            f.write("1")
        frozen = spec["freeze"]
phase, step = where()
os.unlink(paths["armed"])
print(json.dumps({"reached": hit, "phase": phase, "step": step, "frozen": frozen,
                  "current": link("current"), "previous": link("previous")}))
"""

UPDATE_UNIT, SERVICE = "companion-update.service", "companion.service"


def trap_spec(aim: str, here: str, rng) -> dict:
    """Where in ``aim`` the cut falls: a variant of the step and a delay into it."""
    spec = {"aim": aim, "here": here, "timeout": WAIT_S, "freeze": UPDATE_UNIT, "delay": 0.0}
    # The delays stay well inside each step's length in the emulated guest
    # (verify and the self-check take seconds, the build tens of seconds, the
    # health check 20 s or more): the cut must land in the step it aims at.
    if aim == "upload":            # the service writing the bundle it received into its inbox
        spec.update(freeze=SERVICE, delay=rng.uniform(0.0, 0.1))
    elif aim == "verify":
        spec["delay"] = rng.uniform(0.0, 0.3)
    elif aim == "build":
        spec["delay"] = rng.uniform(0.0, 5.0)
    elif aim == "back-up":
        spec["variant"] = rng.choice(["prepared", "backed-up", "checking"])    # stopped, copied, self-check
        spec["delay"] = rng.uniform(0.0, 0.5) if spec["variant"] == "checking" else 0.0
    elif aim == "switch":
        spec["variant"] = rng.choice(["switching", "between the links"])
    elif aim == "health check":
        spec["delay"] = rng.uniform(0.0, 8.0)
    elif aim == "after":
        spec.update(freeze=None, delay=rng.uniform(0.0, 3.0))
    return spec


class Trap:
    """TRAP run in the guest on a thread of its own (the agent runs each
    request on its own thread): ``armed()`` once it watches, ``result()``."""

    def __init__(self, vm, spec: dict):
        self.vm, self.spec, self.out = vm, spec, None
        self.thread = threading.Thread(target=self._run, daemon=True, name="update-trap")
        self.thread.start()
        end = time.monotonic() + 120
        while time.monotonic() < end and not vm.sh("test -e /run/companion-vm-trap.armed").ok:
            if not self.thread.is_alive():
                break
            time.sleep(0.2)

    def _run(self) -> None:
        try:
            res = self.vm.run(["python3", "-c", TRAP, json.dumps(self.spec)], timeout=self.spec["timeout"] + 60)
            self.out = json.loads(res.stdout) if res.ok else {"error": str(res)}
        except (vmlib.GuestError, ValueError) as exc:
            self.out = {"error": f"{type(exc).__name__}: {exc}"}

    def result(self) -> dict:
        self.thread.join(self.spec["timeout"] + 120)
        return self.out or {"error": "no answer from the trap"}


# -- after each update: the box as a whole ---------------------------------------------------------

def post_quietly(vm, path: Path) -> None:
    """The upload of a cut update: the power may go under it."""
    try:
        post_bundle(vm, path)
    except (OSError, http.client.HTTPException):
        pass


def settled(vm, say=None, timeout: float = WAIT_S) -> dict:
    """Wait until nothing of an update is under way: no request in the inbox,
    the root worker not running, no pending.json, the status final (or
    none); the status then."""
    end, told = time.monotonic() + timeout, time.monotonic()
    # A oneshot unit is "activating" while it runs; a queued one has a job.
    probe = ("test ! -e /var/lib/companion/update/request && test ! -e /var/lib/companion-update/pending.json"
             " && ! systemctl list-jobs --no-legend | grep -q companion-update"
             " && for u in companion-update.service companion-update-boot.service; do"
             " [ \"$(systemctl show -p ActiveState --value $u)\" != activating ] || exit 1; done")
    while time.monotonic() < end:
        if vm.sh(probe, timeout=60).ok:
            found = status(vm)          # None while the service restarts: not settled yet
            if found is not None and found.get("state") in FINAL + ("none",):
                return found
        if say and time.monotonic() - told > 120:
            told = time.monotonic()
            say("vm: --update: waiting for the update to settle; the guest:\n" + guest_view(vm, 4))
        time.sleep(2)
    raise vmlib.GuestError(f"the update did not settle within {timeout:.0f} s; the guest:\n" + guest_view(vm, 40))


def running_release(vm) -> list[str]:
    """The releases the companion's running process has its code from
    (the files it mapped: /proc/PID/maps names them by their real path)."""
    pid = vm.must("systemctl show companion -p MainPID --value").strip()
    out = vm.sh(f"grep -o '/opt/companion/releases/[^/]*/' /proc/{pid}/maps | sort -u").stdout
    return sorted({line.strip().split("/")[4] for line in out.splitlines() if line.strip()})


def check_box(run, here: str, target: str, previous: str | None, expect: tuple[str, ...]) -> tuple[str, list[str]]:
    """After an update (cut or not): the version the links name and the one
    the process runs, the previous link, nothing unfinished left; the
    version it is on and what does not hold."""
    vm, problems = run.vm, []
    on, prev = current(vm), vm.must("basename \"$(readlink /opt/companion/previous)\" 2>/dev/null || true").strip()
    if on not in expect:
        problems.append(f"on {on!r}, not {' or '.join(expect)}")
    code = running_release(vm)
    if code != [on]:
        problems.append(f"the running process's code is from {code}, the current link names {on!r}")
    want_prev = here if on == target else previous
    # A rollback on a box that had no previous version leaves previous naming
    # the version it is back on (the installer does not remove the link it
    # made): harmless (going back is refused: "no previous version"), allowed.
    if (prev or None) != want_prev and not (on == here and previous is None and prev == here):
        problems.append(f"previous is {prev!r}, not {want_prev!r} (current {on!r})")
    left = vm.sh("ls -d /opt/companion/releases/*/.unfinished /var/lib/companion-update/work "
                 "/var/lib/companion-update/pending.json 2>/dev/null").stdout.split()
    if left:
        problems.append(f"unfinished: {left}")
    for name in {on, prev} - {"", None}:
        if not vm.sh(f"test -x /opt/companion/releases/{name}/venv/bin/companion").ok:
            problems.append(f"the release {name} the links name is not whole")
    return on, problems


def check(run, cuts: int, say) -> dict:
    vm = run.vm
    result = {"ok": True, "good_s": None, "bad_rolled_back_s": None, "cuts_during_update": 0, "lost": 0,
              "versions_seen": [], "refused": {}, "acked_during_update": 0, "phases_cut": [],
              "rollback_after_acks": {"acked": 0, "lost": None}}
    phases_cut: list[str] = []

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
    known = run.new_game()

    def room() -> None:
        nonlocal known
        if len(known) > MAX_GAME_LINES - 2000:        # a game holds at most this many lines
            known = run.new_game()

    def verify(client: Actions, here: str, target: str, previous: str | None, expect: tuple[str, ...],
               when: str, entries: list | None = None) -> str:
        """The box after an update: the links, the running code, nothing left
        unfinished, the store (every acknowledged action, nothing else), the
        served scores, no damaged file or notice, no restart."""
        nonlocal known
        entries = client.entries() if entries is None else entries
        result["acked_during_update"] += sum(1 for _, must in entries if must)
        for refusal in client.refused:
            fail(f"{when}: an action was refused during the update: {refusal}")
        on, problems = check_box(run, here, target, previous, expect)
        for problem in problems:
            fail(f"{when}: {problem}")
        lines, lost = run.check_after_cut(known, None, None, entries=entries, when=f"--update: {when}", count=False)
        result["lost"] += lost
        known = lines
        return on

    def update(path, target: str, here: str, expect: tuple[str, ...], when: str, watch: bool = False):
        """One update with a phone posting all through it; its final status,
        seconds, the version it ended on and the phone."""
        previous = vm.sh("basename \"$(readlink /opt/companion/previous)\"").stdout.strip() or None
        room()
        client = Actions(vm, run.rng, watch=watch).start()
        t = time.monotonic()
        code, answer = post_bundle(vm, path)
        if code != 202:
            client.stop()
            fail(f"{when}: POST /api/update answered {code} {answer}")
            return None, 0.0, here, client
        final = settled(vm, say)
        seconds = time.monotonic() - t
        vm.wait_http()
        time.sleep(2)                   # a few more actions on the version it ended on
        client.stop()
        on = verify(client, here, target, previous, expect, when)
        return final, seconds, on, client

    first = current(vm)
    seen = {first}
    # Every bundle carries a version newer than any before it: what is
    # refused below must be refused for what it is, not for going backwards.
    other_key = bundler.make(bundler.newer(), key=bundler.other)
    bad = bundler.make(bundler.newer(), bad=True)
    truncated = bundler.out / "truncated.bundle"
    data = bad.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    # Refused bundles: the box stays on its version, serving, and says why.
    for name, path, words in (("other-key", other_key, "not signed"), ("truncated", truncated, "cut short")):
        final, _, on, _ = update(path, None, first, (first,), f"the {name} bundle")
        result["refused"][name] = final and final.get("text")
        if not final or final.get("state") != "failed" or words not in (final.get("text") or "") or on != first:
            fail(f"the {name} bundle was not refused as it should: {final}")
    final, seconds, on, _ = update(bad, None, first, (first,), "the bundle failing its self-check")
    result["bad_rolled_back_s"] = round(seconds, 1)
    result["refused"]["self-check"] = final and final.get("text")
    if not final or final.get("state") != "failed" or "self-check" not in (final.get("text") or "") or on != first:
        fail(f"the bundle failing its self-check was not rolled back: {final}")
    say(f"vm: --update: self-check failure rolled back in {result['bad_rolled_back_s']} s, "
        f"refusals: {result['refused']}")

    # A version that serves, acknowledges actions, then fails its health
    # check: after the rollback every action it acknowledged is in the store.
    sick_version = bundler.newer()
    sick = bundler.make(sick_version, sick=True)
    lost_before = result["lost"]
    final, seconds, on, client = update(sick, sick_version, first, (first,), "the version failing its health check",
                                        watch=True)
    by_sick = sum(1 for s in client.sent if s["outcome"] == "acked" and s.get("by") == sick_version)
    result["rollback_after_acks"] = {"acked": by_sick, "lost": result["lost"] - lost_before}
    say(f"vm: --update: {sick_version} served, acknowledged {by_sick} actions, failed its health check "
        f"({final and final.get('text')}) in {seconds:.0f} s; after the rollback to {on}: "
        f"{result['rollback_after_acks']['lost']} acknowledged actions lost")
    if not final or final.get("state") != "failed" or "did not stay up" not in (final.get("text") or ""):
        fail(f"the version failing its health check was not rolled back as such: {final}")
    if not by_sick:
        fail("the version failing its health check acknowledged no action before it was rolled back: "
             "nothing was tested")

    # Cuts aimed at each moment of an update in turn (PHASES), with a phone
    # posting all through; after each, the box checked on the host before
    # it boots, then as a whole once the update is over.
    for i in range(cuts):
        aim = PHASES[i % len(PHASES)]
        here = current(vm)
        previous = vm.sh("basename \"$(readlink /opt/companion/previous)\"").stdout.strip() or None
        target = bundler.newer()
        path = bundler.make(target)      # built before the upload, not inside the cut's moment
        room()
        trap = Trap(vm, trap_spec(aim, here, run.rng))
        client = Actions(vm, run.rng).start()
        poster = threading.Thread(target=post_quietly, args=(vm, path), daemon=True)
        poster.start()
        where = trap.result()
        cut = run.aimed_cut(("burst", 1), client.stop_event, wait=5)
        client.stop()
        poster.join(60)
        result["cuts_during_update"] += 1
        phase = where.get("phase", "?")
        if phase not in phases_cut:
            phases_cut.append(phase)
        when = f"cut {i + 1} (aimed at {aim}, in {phase}: {where.get('step')})"
        if "error" in where or not where.get("reached"):
            say(f"vm: --update: {when}: the trap said {where}")
        before_boot = client.entries()
        run.host_checks.check(vm.disk, run.workdir, known, before_boot, f"--update: {when}")
        run.boot(link=True)
        after = Actions(vm, run.rng).start()     # the update goes on at boot: the phone too
        final = settled(vm, say)
        vm.wait_http()
        time.sleep(2)
        after.stop()
        expect = {"upload": (here,), "verify": (here,), "build": (here,), "back-up": (here,),
                  "after": (target,)}.get(phase, (here, target))
        if where.get("step") == "asked":
            # The bundle and its request were in the inbox, root had not
            # begun: kept on the card, the update goes on at boot (the
            # phone was told 202 once both were kept); else never asked.
            expect = (here, target)
        client.refused += after.refused
        on = verify(client, here, target, previous, expect, when, entries=before_boot + after.entries())
        seen.add(on)
        say(f"vm: --update: {when}: {len(client.acked)} + {len(after.acked)} acknowledged, back on {on} "
            f"({final.get('state')}: {(final.get('text') or '')[:90]}); card: {cut}")
    result["phases_cut"] = [p for p in PHASES if p in phases_cut] + [p for p in phases_cut if p not in PHASES]
    missed = [p for p in PHASES[:cuts] if p not in phases_cut]
    if missed:
        fail(f"the cuts aimed at {missed} did not land there (cut in {phases_cut})")

    # The whole good update, after the cuts: measured, and it must work.
    here = current(vm)
    target = bundler.newer()
    final, seconds, on, _ = update(bundler.make(target), target, here, (target,), "the good update")
    result["good_s"] = round(seconds, 1)
    if not final or final.get("state") != "done" or on != target:
        fail(f"the good bundle was not installed{' after the cuts' if cuts else ''}: {final}, on {on}")
    seen.add(on)
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
    say(f"vm: --update: {here} -> {target} in {result['good_s']} s; {result['acked_during_update']} actions "
        f"acknowledged during updates, {result['lost']} lost; phases cut: {result['phases_cut']}")
    result["versions_seen"] = sorted(seen)
    if result["lost"]:
        fail(f"{result['lost']} acknowledged actions lost")
    return result
