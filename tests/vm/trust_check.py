"""``appliance-vm --update``, last: what the service's own user can make root do.

The companion's service runs as the user ``companion``, which owns its data
folder (/var/lib/companion).  Root reads requests there and writes answers
back (companion-setup, companion-update, companion-wifi), so a service taken
over by someone must not be a way to root.  Three checks, on the installed
box that update_check and backup_check leave serving:

1. **Planted** (``service_user_got_root``, ``files_outside_changed``): root
   first makes sentinel files outside (in /etc and /root) and records them
   with the files a way to root would change (passwd, shadow, the release
   keys, root's authorized_keys and sshd drop-ins, root's owner record,
   /opt/companion's links, enabled units).  Then, as ``companion``, every
   name root reads or writes in the folder (and the temporary names its
   writers use beside them) becomes a symbolic link to a sentinel (a hard
   link is tried where the kernel allows one); the owner updates the box
   once beside them (a bundle whose self-check fails: the rollback puts the
   store back in that folder); then the user writes what it wants root to
   do, with a password it knows and an owner hash of that password of its
   own making: set-up "not done", a set-up request for its SSH key, a
   removal of root's key, a reset then its key again, an update of a
   bundle that is a link to a root file, a release key and a "go back",
   then its ``update`` folder a link to a root folder.  Each request's unit
   runs (its path unit, else root starts it), and companion-wifi.service
   is restarted (it runs at boot).  Last, root runs ``companion owner``
   while the service's ``owner.json`` is a link.  Then: no planted key, no
   sshd turned on, no recorded file changed in content or owner, no
   sentinel's content copied where the service reads.  Where the VM has no
   sshd, a stand-in (a unit that sleeps) is installed for the check, so
   that the root side goes the whole way to SSH, as on a Pi with sshd.
2. **Downgrade** (``downgrade_refused``): a good bundle signed by the run's
   release key, whose version is older than the running one, sent by the
   owner: refused ("not newer"), the box on its version, serving.
3. **Full card** (``full_card_back_serving``): a tiny full file system
   over /var/lib/companion-update/backups, where root copies the store
   right after stopping the service; a newer good bundle sent by the owner
   must end "failed" with the service active and answering, on the same
   version.

``"trust": {"service_user_got_root": false, "files_outside_changed": 0,
"downgrade_refused": true, "full_card_back_serving": true, ...}`` in the
summary; each one that does not hold fails the run.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import secrets
import struct
import time

import update_check
import vmlib

DATA = "/var/lib/companion"
UPDATE_ROOT = "/var/lib/companion-update"
OWNER_ROOT = "/var/lib/companion-owner"
BACKUPS = UPDATE_ROOT + "/backups"
ASIDE = "/root/companion-trust-aside"      # root's: what the service had at the names planted over
SSH_DROPIN = "/etc/ssh/sshd_config.d/companion-setup.conf"
SETUP_UNIT, UPDATE_UNIT, WIFI_UNIT = "companion-setup.service", "companion-update.service", "companion-wifi.service"
SETUP_REQUEST, UPDATE_REQUEST = f"{DATA}/setup-system.json", f"{DATA}/update/request"
ATTACKER_PASSWORD = "the service knows this 1"

# How long a path unit is given to start its service after a request is
# written, before root starts it by hand (not a check: a request must reach
# root one way or the other), and ceilings for a unit to be done.
TRIGGER_S = 90
SETUP_S = 600
WIFI_S = 120
SERVING_S = 600

# Names root reads or writes in the service's folder (appliance/setup.py,
# appliance/wifi.py), and the temporary names its writers have used beside
# them: name.tmp (appliance/wifi.py), .name.tmp (appliance/durable.py),
# .companion.db.restore (the updater's rollback).  Each becomes a link to a
# sentinel of its own, so a changed sentinel names the way in.
ROOT_NAMES = ("setup-join.json", "wifi-password", "wifi.json", "setup-status.json", "wifi-networks.json",
              "setup-system-status.json")
WRITTEN = ("wifi-password", "wifi.json", "setup-status.json", "wifi-networks.json", "setup-system-status.json",
           "setup.json", "owner.json", "companion.toml")
TMP_NAMES = tuple(n for name in WRITTEN for n in (f"{name}.tmp", f".{name}.tmp")) + \
    (".companion.db.restore", ".companion.db-wal.restore", ".companion.db-shm.restore")
HARD = "setup-system-status.json.tmp"       # a hard link is tried there first
# What the service's user writes itself, at names root reads (moved aside
# first, and put back after).
OWN_NAMES = ("setup.json", "companion.toml", "owner.json", "setup-system.json", "update", "backups")
SENTINEL_DIRS = {"update": "/etc/companion-sentinel-dir-update", "backups": "/etc/companion-sentinel-dir-backups"}
# In the root folder the ``update`` link points to: what the service would
# have written in its own, so that root finds a request there.
UPDATE_DIR_FILES = ("request", "incoming.bundle", "keys-request", "back-request")

# What a way to root changes.  Sentinels are globbed (/etc/companion-sentinel-*
# and the files in the sentinel folders); the rest are named.  A folder is
# compared by its owner and mode; a sentinel folder by its entries too.
SYSTEM_PATHS = ["/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/sudoers", "/etc/hostname",
                "/etc/hosts", "/etc/localtime", "/etc/timezone", "/etc/companion", "/etc/companion/release-keys",
                "/etc/default/companion", "/root", "/root/.ssh", "/root/.ssh/authorized_keys", SSH_DROPIN,
                OWNER_ROOT, "/opt/companion/current", "/opt/companion/previous"]
SYSTEM_GLOBS = ["/root/companion-sentinel-*", "/etc/companion-sentinel-*", "/etc/companion-sentinel-dir-*/*",
                "/root/.ssh/*", "/etc/ssh/sshd_config.d/*", OWNER_ROOT + "/*", "/etc/sudoers.d/*",
                "/etc/systemd/system/multi-user.target.wants/*", "/etc/systemd/system/sockets.target.wants/*"]
# Root's own set-up record: it may say "closed" where it said nothing; only
# an opening (set-up open for root again) is a change that counts.
OPENS_ONLY = OWNER_ROOT + "/setup.json"

ATTACKER_TOML = 'wifi = "own"\nwifi_ssid = "attacker"\nwifi_password = "attacker-wifi-1"\nname = "attacker"\n'


def sentinel(name: str) -> str:
    """The root file a planted name links to: in /root for what set-up and
    the owner command write (units without ProtectHome=), else in /etc
    (companion-wifi and companion-update see no /root at all)."""
    slug = ("dot-" if name.startswith(".") else "") + re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    home = re.search(r"setup-system|owner|setup\.json", name)
    return f"{'/root' if home else '/etc'}/companion-sentinel-{slug}"


def bait(path: str, marker: str) -> str:
    """A sentinel's content: the marker, in the fields root would copy from
    the file it expects at that name (a request's id, a network's name, a
    status), so that a root that read it through a link would carry the
    marker into what it writes back."""
    name = path.rsplit("/", 1)[-1]
    if "wifi-password" in name:
        return f"sentinel{marker}\n"            # a valid Wi-Fi password: root would use it
    if name.endswith("-json") or name.endswith("-request"):
        return json.dumps({"marker": marker, "request": marker, "ssid": marker, "password": f"pw{marker}",
                           "state": "joined", "mode": "own", "owner_password": f"pw{marker}"}) + "\n"
    return f"companion trust sentinel {path} {marker}\n"


def attacker_ssh_key() -> str:
    """An ed25519 public key line that passes the set-up's check (its blob
    names its own type); nobody has its private half."""
    kind = b"ssh-ed25519"
    blob = struct.pack(">I", len(kind)) + kind + struct.pack(">I", 32) + secrets.token_bytes(32)
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} trust-check-attacker"


def key_blob(line: str) -> str:
    """The base64 part of a key line (what a copy of it must contain)."""
    return line.split()[1]


def older_than(running: str, base: int) -> str:
    """A version below ``running``: just below the run's bundles when the box
    runs one of them, else one below any release."""
    return f"{base}.0.0" if running.startswith(f"{base}.") and running != f"{base}.0.0" else "0.0.1"


def compare(before: dict, after: dict, *, skip: tuple = ()) -> dict:
    """The recorded paths that differ: ``{path: what}``."""
    out = {}
    for path in sorted(set(before) | set(after)):
        if any(path == s or path.startswith(s.rstrip("/") + "/") for s in skip):
            continue
        a, b = before.get(path), after.get(path)
        if path == OPENS_ONLY:
            if _opens(b) and not _opens(a):
                out[path] = "set-up opened for root"
            continue
        if a == b:
            continue
        if a is None:
            out[path] = "appeared"
        elif b is None:
            out[path] = "removed"
        else:
            out[path] = ", ".join(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
    return out


def _opens(rec) -> bool:
    return bool(rec) and isinstance(rec.get("json"), dict) and rec["json"].get("open") is True


def chowned(before: dict, after: dict, uid: int, gid: int) -> list[str]:
    """Recorded paths that became the service user's (or group's)."""
    def theirs(rec):
        return bool(rec) and (rec.get("uid") == uid or rec.get("gid") == gid)
    return sorted(p for p in after if theirs(after[p]) and not theirs(before.get(p)))


# -- what runs in the guest ----------------------------------------------------------------------
# Each reads its JSON spec on stdin and prints one JSON object.

RECORD = r'''
import glob, hashlib, json, os, stat, sys
spec = json.load(sys.stdin)
paths = list(spec["paths"])
for pattern in spec["globs"]:
    paths += sorted(glob.glob(pattern))
out = {}
for path in dict.fromkeys(paths):
    try:
        st = os.lstat(path)
    except OSError:
        out[path] = None
        continue
    rec = {"uid": st.st_uid, "gid": st.st_gid, "mode": stat.S_IMODE(st.st_mode)}
    if stat.S_ISLNK(st.st_mode):
        rec["link"] = os.readlink(path)
    elif stat.S_ISDIR(st.st_mode):
        if path in spec["entries"]:
            rec["entries"] = sorted(os.listdir(path))
    elif stat.S_ISREG(st.st_mode):
        with open(path, "rb") as fh:
            raw = fh.read()
        rec["sha256"] = hashlib.sha256(raw).hexdigest()
        if path in spec["json"]:
            try:
                rec["json"] = json.loads(raw)
            except ValueError:
                pass
    else:
        rec["type"] = stat.S_IFMT(st.st_mode)
    out[path] = rec
print(json.dumps(out))
'''

# As the service's user: files, links, a hard link, a rename, in its folder.
PLANT = r'''
import base64, hashlib, json, os, secrets, sys
spec = json.load(sys.stdin)
data = spec["data"]
report = {"planted": [], "failed": {}}
hashed = None
for item in spec["items"]:
    kind, name, arg = item
    path = os.path.join(data, name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if kind == "move":
            os.rename(path, os.path.join(data, arg))
        else:
            if os.path.islink(path) or os.path.isfile(path):
                os.unlink(path)
            if kind == "file":
                if "{HASH}" in arg and hashed is None:
                    salt = secrets.token_bytes(16)
                    digest = hashlib.scrypt(spec["password"].encode(), salt=salt, n=16384, r=8, p=1,
                                            maxmem=64 << 20, dklen=32)
                    hashed = "scrypt$16384$8$1$%s$%s" % (base64.b64encode(salt).decode(),
                                                          base64.b64encode(digest).decode())
                with open(path, "w") as fh:
                    fh.write(arg.replace("{HASH}", hashed or ""))
            elif kind == "link":
                os.symlink(arg, path)
            elif kind == "hard":
                try:
                    os.link(arg, path)
                    report["hard_link"] = "made"
                except OSError as exc:
                    report["hard_link"] = "refused: %s" % exc.strerror
                    os.symlink(arg, path)
        report["planted"].append(name)
    except OSError as exc:
        report["failed"][name] = "%s: %s" % (type(exc).__name__, exc.strerror)
print(json.dumps(report))
'''

# As root: the sentinels (0600, root's; folders 0700), each with the marker.
SENTINELS = r'''
import json, os, shutil, sys
spec = json.load(sys.stdin)
for path in spec["dirs"]:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path, 0o700)
for path, text in spec["files"].items():
    if os.path.lexists(path) and not os.path.isdir(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
print(json.dumps(sorted(spec["files"])))
'''

# As root: names moved aside before they are planted over, or put back.
ASIDE_SCRIPT = r'''
import json, os, shutil, sys
spec = json.load(sys.stdin)
data, aside = spec["data"], spec["aside"]
os.makedirs(aside, 0o700, exist_ok=True)
done = {"moved": [], "removed": [], "restored": [], "errors": {}}
def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    else:
        return False
    return True
for name in spec.get("move", ()):
    src, dst = os.path.join(data, name), os.path.join(aside, name)
    if os.path.lexists(src) and not os.path.lexists(dst):
        os.rename(src, dst)
        done["moved"].append(name)
for name in spec.get("remove", ()):
    try:
        if remove(os.path.join(data, name)):
            done["removed"].append(name)
    except OSError as exc:
        done["errors"][name] = str(exc)
for name in spec.get("restore", ()):
    src, dst = os.path.join(aside, name), os.path.join(data, name)
    if os.path.lexists(src):
        try:
            if os.path.lexists(dst):
                remove(dst)
            os.rename(src, dst)
            done["restored"].append(name)
        except OSError as exc:
            done["errors"][name] = str(exc)
if spec.get("restore") is not None and not os.listdir(aside):
    os.rmdir(aside)
print(json.dumps(done))
'''

# As root, after: the planted key, the attacker's release key, root's owner
# record taking the attacker's password, a sentinel's content where the
# service reads (its folder, root's update status), links in the folder.
EVIDENCE = r'''
import base64, glob, hashlib, json, os, stat, sys
spec = json.load(sys.stdin)
def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""
keys = b"".join(read(p) for p in glob.glob("/root/.ssh/*") if os.path.isfile(p))
out = {"key_planted": spec["ssh_blob"].encode() in keys,
       "release_key_added": spec["release_blob"].encode() in read("/etc/companion/release-keys")}
def verifies(password, hashed):
    try:
        kind, n, r, p, salt, digest = hashed.split("$")
        mine = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                              maxmem=64 << 20, dklen=32)
    except (AttributeError, ValueError, MemoryError):
        return False
    return kind == "scrypt" and mine == base64.b64decode(digest)
try:
    record = json.loads(read(spec["owner_root"] + "/owner.json"))
except ValueError:
    record = None
out["root_takes_attacker_password"] = isinstance(record, dict) and verifies(spec["password"], record.get("hash"))
leaked, links = [], []
def look(path):
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        links.append(path)
    elif stat.S_ISREG(st.st_mode) and spec["marker"].encode() in read(path):
        leaked.append(path)
for folder, dirs, files in os.walk(spec["data"]):
    for name in files + dirs:
        look(os.path.join(folder, name))
for path in spec["also"]:
    look(path)
out["leaked"], out["links"] = sorted(leaked), sorted(links)
print(json.dumps(out))
'''


def guest_json(vm, argv: list[str], spec: dict, timeout: float = 300) -> dict:
    res = vm.run(argv, input=json.dumps(spec), timeout=timeout)
    if not res.ok:
        raise vmlib.GuestError(f"{argv[:4]}: {res}")
    return json.loads(res.stdout)


def as_root(vm, script: str, spec: dict, timeout: float = 300) -> dict:
    return guest_json(vm, ["python3", "-c", script], spec, timeout)


def as_service(vm, script: str, spec: dict, timeout: float = 300) -> dict:
    return guest_json(vm, ["runuser", "-u", "companion", "--", "python3", "-c", script], spec, timeout)


def record(vm, sentinel_dirs) -> dict:
    return as_root(vm, RECORD, {"paths": SYSTEM_PATHS, "globs": SYSTEM_GLOBS, "entries": list(sentinel_dirs),
                                "json": [OPENS_ONLY]})


def plant(vm, items: list, say=None) -> dict:
    report = as_service(vm, PLANT, {"data": DATA, "password": ATTACKER_PASSWORD, "items": items}, timeout=600)
    if report["failed"] and say:
        say(f"vm: trust: the service's user could not plant {report['failed']}")
    return report


# -- systemd ---------------------------------------------------------------------------------------

def unit(vm, name: str) -> dict:
    out = vm.sh(f"systemctl show {name} -p ActiveState -p LoadState -p InactiveExitTimestampMonotonic",
                timeout=60).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def started_since(vm, name: str, before: str) -> bool:
    return unit(vm, name).get("InactiveExitTimestampMonotonic", "0") not in ("", "0", before)


def wait_idle(vm, name: str, ceiling: float) -> str:
    end = time.monotonic() + ceiling
    while True:
        state = unit(vm, name).get("ActiveState", "")
        if state in ("inactive", "failed") or time.monotonic() > end:
            return state
        time.sleep(1)


def start_by_root(vm, name: str, ceiling: float, verb: str = "start") -> None:
    """Root starts the unit, as the boot does, and waits until it is done."""
    before = unit(vm, name).get("InactiveExitTimestampMonotonic", "0")
    vm.sh(f"systemctl reset-failed {name}; systemctl {verb} --no-block {name}", timeout=60)
    end = time.monotonic() + TRIGGER_S
    while not started_since(vm, name, before) and time.monotonic() < end:
        time.sleep(1)
    wait_idle(vm, name, ceiling)


def run_root_unit(vm, name: str, before: str, ceiling: float, request: str) -> str:
    """The root unit has run since ``before`` on the request just written
    and is done; how it came to run.  Its path unit starts it; if it does
    not (a path unit at its start limit after requests root refused to
    take: not what is checked here), or the request is still there after
    the run (written while a run triggered by an earlier write was already
    reading), root starts it, as it would at boot."""
    end = time.monotonic() + TRIGGER_S
    how = "path unit"
    while not started_since(vm, name, before):
        if time.monotonic() > end:
            start_by_root(vm, name, ceiling)
            return "started by root"
        time.sleep(1)
    wait_idle(vm, name, ceiling)
    if vm.sh(f"test -e {request}", timeout=60).ok:
        start_by_root(vm, name, ceiling)
        how += ", then by root (the request was still there)"
    return how


def marks(vm, *names: str) -> list[str]:
    """Each unit's last start, once it is done: moving or writing a file
    its path unit watches may have started it already, and a request
    written while that run reads the folder could go unseen by it."""
    out = []
    for name in names:
        wait_idle(vm, name, update_check.WAIT_S if name == UPDATE_UNIT else SETUP_S)
        out.append(unit(vm, name).get("InactiveExitTimestampMonotonic", "0"))
    return out


def root_status(vm) -> dict:
    """Root's own record of the last update (and its pending marker, if any)."""
    out = {}
    for key, path in (("status", f"{UPDATE_ROOT}/status.json"), ("pending", f"{UPDATE_ROOT}/pending.json")):
        res = vm.sh(f"cat {path}", timeout=60)
        try:
            out[key] = json.loads(res.stdout) if res.ok else None
        except ValueError:
            out[key] = {"raw": res.stdout[:300]}
    return out


def _root_text(status: dict | None) -> str:
    if not status:
        return ""
    reason = str(status.get("reason") or "")
    try:
        reason = reason.format(**(status.get("params") or {}))
    except (KeyError, IndexError, ValueError):
        pass
    return f"{status.get('state')}: {reason}"


def wait_update(vm, worker_before: str, say, ceiling: float = update_check.WAIT_S) -> dict:
    """The result of the update just asked for: ``GET /api/update`` once it
    is final; or, when the root worker has run and ended with the service
    not answering or the result not final, root's own record of it (nothing
    else will change it then), with ``"worker_ended"`` (the unit's state then)."""
    end = time.monotonic() + ceiling
    ended, last, seen = 0, None, []
    while time.monotonic() < end:
        # Root's own record at each look: the states it went through (the
        # page shows none while the service is stopped).
        state = (root_status(vm).get("status") or {}).get("state")
        if state and (not seen or seen[-1] != state):
            seen.append(state)
        found = update_check.status(vm)
        if found and found["state"] in update_check.FINAL:
            return dict(found, states_seen=seen)
        last = found or last
        worker = unit(vm, UPDATE_UNIT)
        if worker.get("InactiveExitTimestampMonotonic", "0") not in ("", "0", worker_before) \
                and worker.get("ActiveState") in ("inactive", "failed"):
            ended += 1
            if ended >= 3:      # three looks a few seconds apart: ended, not between two runs
                root = root_status(vm)
                status = root.get("status") or {}
                return {"state": status.get("state") or "none", "text": _root_text(status),
                        "worker_ended": worker.get("ActiveState"), "root": root, "states_seen": seen}
        else:
            ended = 0
        time.sleep(2)
    raise vmlib.GuestError(f"no update result within {ceiling:.0f} s (last: {last}); the guest:\n"
                           + update_check.guest_view(vm, 40))


def wait_serving(vm, ceiling: float = SERVING_S) -> bool:
    """The companion active and answering ``/api/state``; False as soon as it
    is down with no update worker running (nothing would start it then)."""
    end = time.monotonic() + ceiling
    down = 0
    while time.monotonic() < end:
        state = unit(vm, "companion.service").get("ActiveState")
        if state == "active":
            try:
                if vm.http("GET", "/api/state", timeout=10)[0] == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            down = 0
        elif state in ("inactive", "failed") and unit(vm, UPDATE_UNIT).get("ActiveState") in ("inactive", "failed"):
            down += 1
            if down >= 5:      # five looks apart, not a restart caught between its stop and its start
                return False
        else:
            down = 0
        time.sleep(2)
    return False


def ssh_state(vm) -> dict:
    return {what: vm.sh(f"systemctl is-{what} ssh.service", timeout=60).stdout.strip()
            for what in ("enabled", "active")}


STUB_UNIT = """# tests/vm/trust_check.py only: a stand-in for sshd while the check runs
[Unit]
Description=stand-in sshd (tests/vm trust check)

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
"""


def sshd_stand_in(vm) -> bool:
    """A stand-in sshd where the VM has none (True if installed here)."""
    if vm.sh("command -v sshd || test -e /usr/sbin/sshd || systemctl cat ssh.service", timeout=60).ok:
        return False
    vm.put("/usr/sbin/sshd", b"#!/bin/sh\nexit 0\n", mode=0o755)
    vm.put("/etc/systemd/system/ssh.service", STUB_UNIT.encode())
    vm.must("systemctl daemon-reload", timeout=300)
    return True


# -- 1. what the service's user plants -----------------------------------------------------------

def planted(run, bundler, result: dict, fail, say) -> None:
    vm = run.vm
    marker = secrets.token_hex(12)
    ssh_key = attacker_ssh_key()
    release_line = bundler.new_key(bundler.out / "attacker.pem")
    uid, gid = (int(vm.must(f"id -{flag} companion").strip()) for flag in ("u", "g"))
    stand_in = sshd_stand_in(vm)
    # Root's own key, marked as set-up's, so that a removal asked by the
    # service would have something to remove.
    own_keys = not vm.sh("test -e /root/.ssh/authorized_keys").ok
    if own_keys:
        vm.must("install -d -m 0700 /root/.ssh")
        vm.put("/root/.ssh/authorized_keys", (attacker_ssh_key().replace("trust-check-attacker", "root-own")
                                               + " # companion-setup\n").encode(), mode=0o600)
    links_before = as_root(vm, EVIDENCE, evidence_spec(ssh_key, release_line, marker))["links"]
    linked = {name: sentinel(name) for name in ROOT_NAMES + TMP_NAMES}
    linked["update/incoming.bundle"] = sentinel("update/incoming.bundle")
    linked["companion.toml.before-reset"] = sentinel("companion.toml.before-reset")
    files = {path: bait(path, marker) for path in [*linked.values(), sentinel("owner.json")]}
    for name, folder in SENTINEL_DIRS.items():
        for inside in (UPDATE_DIR_FILES if name == "update" else ("inside",)):
            files[f"{folder}/{inside}"] = bait(f"{folder}/{inside}", marker)
    as_root(vm, SENTINELS, {"dirs": list(SENTINEL_DIRS.values()), "files": files})
    before = record(vm, SENTINEL_DIRS.values())
    ssh_before = ssh_state(vm)
    detail = result.setdefault("planted", {})
    detail["sshd"] = "stand-in" if stand_in else "installed"
    top = [name for name in linked if "/" not in name]          # update/incoming.bundle comes with (c)
    aside_names = sorted(set(top) | set(OWN_NAMES) | {"update.trust-a"})
    try:
        # (a) Every name root reads or writes, and their temporary names: links.
        as_root(vm, ASIDE_SCRIPT, {"data": DATA, "aside": ASIDE, "move": top})
        report = plant(vm, [["link", n, linked[n]] for n in top if n != HARD]
                       + [["hard", HARD, linked[HARD]]], say)
        detail["links"] = len(report["planted"])
        detail["hard_link"] = report.get("hard_link")
        # (b) The owner updates the box beside them: a bundle whose
        # self-check fails, so that the rollback puts the store back into
        # the service's folder.
        running = update_check.current(vm)
        worker, = marks(vm, UPDATE_UNIT)
        code, answer = update_check.post_bundle(vm, bundler.make(bundler.newer(), bad=True))
        if code != 202:
            fail(f"the owner's update beside the planted links answered {code} {answer}")
        else:
            final = wait_update(vm, worker, say)
            serving = wait_serving(vm)
            detail["owner_update_beside_links"] = final.get("text")
            if final["state"] != "failed" or update_check.current(vm) != running or not serving:
                fail(f"the owner's update (its self-check failing) beside the planted links did not end failed "
                     f"on {running}, serving: {final}, on {update_check.current(vm)}, serving {serving}")
            elif "self-check" not in (final.get("text") or ""):
                say(f"vm: trust: the owner's update beside the links failed before its rollback: {final.get('text')}")
        # (c) What the user asks of root, with its own password and its own
        # owner hash of it: set-up not done, a set-up request for its key,
        # an update of a link to a root file, a release key, a "go back".
        as_root(vm, ASIDE_SCRIPT, {"data": DATA, "aside": ASIDE, "move": list(OWN_NAMES)})
        setup_at, update_at = marks(vm, SETUP_UNIT, UPDATE_UNIT)
        password = ATTACKER_PASSWORD
        # Shaped as the request that ends set-up; every field valid, so that
        # a root that trusted the service would carry all of it out (a time
        # zone only where the VM has the zone's file: a missing one voids
        # the whole request).
        system_request = {"hostname": "attacker-box", "ssh_key": ssh_key, "owner_password": password, "done": True}
        if vm.sh("test -f /usr/share/zoneinfo/Pacific/Chatham", timeout=60).ok:
            system_request["timezone"] = "Pacific/Chatham"
        if _opens(before.get(OPENS_ONLY)):
            # Set-up open for root: the time zone and the name are set-up's
            # to take from anyone, by design; not asked, not counted.
            del system_request["hostname"]
            system_request.pop("timezone", None)
            detail["root_setup_open"] = True
        plant(vm, [
            ["file", "companion.toml", ATTACKER_TOML],
            ["file", "owner.json", '{"hash": "{HASH}"}\n'],
            ["link", "backups", SENTINEL_DIRS["backups"]],
            ["link", "update/incoming.bundle", linked["update/incoming.bundle"]],
            ["file", "update/keys-request", json.dumps({"request": "trust-check", "owner_password": password,
                                                        "add": release_line})],
            ["file", "update/back-request", json.dumps({"request": "trust-check", "owner_password": password})],
            ["file", "setup.json", '{"done": false}\n'],
            ["file", "setup-system.json", json.dumps(system_request)],
            ["file", "update/request", "trust-check\n"],
        ], say)
        runs = {"setup a": run_root_unit(vm, SETUP_UNIT, setup_at, SETUP_S, SETUP_REQUEST),
                "update a": run_root_unit(vm, UPDATE_UNIT, update_at, update_check.WAIT_S, UPDATE_REQUEST)}
        if unit(vm, WIFI_UNIT).get("LoadState") == "loaded":
            # It runs at boot, reading and writing its files in the folder;
            # with no radio it decides, writes wifi.json and ends.
            start_by_root(vm, WIFI_UNIT, WIFI_S, verb="restart")
            runs["wifi"] = unit(vm, WIFI_UNIT).get("ActiveState")
        # (d) Its update folder a link to a root folder holding a request;
        # root's key removed.
        setup_at, update_at = marks(vm, SETUP_UNIT, UPDATE_UNIT)
        plant(vm, [["move", "update", "update.trust-a"], ["link", "update", SENTINEL_DIRS["update"]],
                   ["file", "setup-system.json", json.dumps({"ssh_remove": True, "owner_password": password})]],
              say)
        runs["setup b"] = run_root_unit(vm, SETUP_UNIT, setup_at, SETUP_S, SETUP_REQUEST)
        runs["update b"] = run_root_unit(vm, UPDATE_UNIT, update_at, update_check.WAIT_S, UPDATE_REQUEST)
        # (e) A reset, then its key again (root's set-up open, no owner:
        # what a reset that root took from the service would leave).
        for label, request in (("setup reset", {"reset": True, "owner_password": password}),
                               ("setup key again", {"ssh_key": ssh_key, "owner_password": password})):
            setup_at, = marks(vm, SETUP_UNIT)
            plant(vm, [["file", "setup.json", '{"done": false}\n'],
                       ["file", "setup-system.json", json.dumps(request)]], say)
            runs[label] = run_root_unit(vm, SETUP_UNIT, setup_at, SETUP_S, SETUP_REQUEST)
        detail["root_units"] = runs
        after = record(vm, SENTINEL_DIRS.values())
        evidence = as_root(vm, EVIDENCE, evidence_spec(ssh_key, release_line, marker))
        ssh_after = ssh_state(vm)
        # (f) Root's own command, the service's copy of the owner a link.
        plant(vm, [["link", "owner.json", sentinel("owner.json")]], say)
        res = vm.sh(f"{update_check.COMPANION} owner --data {DATA}", input=vm.owner_password + "\n", timeout=600)
        detail["owner_command"] = f"rc {res.rc}: {(res.stdout + res.stderr).strip()[-200:]}"
        after_owner = record(vm, SENTINEL_DIRS.values())
    finally:
        cleaned = as_root(vm, ASIDE_SCRIPT, {"data": DATA, "aside": ASIDE, "remove": aside_names,
                                             "restore": aside_names})
        vm.sh("rm -rf /root/companion-sentinel-* /etc/companion-sentinel-*", timeout=60)
        if own_keys:
            vm.sh("rm -f /root/.ssh/authorized_keys", timeout=60)
        if stand_in:
            vm.sh("systemctl disable --now ssh.service; rm -f /usr/sbin/sshd /etc/systemd/system/ssh.service; "
                  "systemctl daemon-reload", timeout=300)
        # The path units may have hit their start limit on requests root
        # refused to take: back as install.sh leaves them, then the
        # companion restarted on its own settings again.
        vm.sh(f"systemctl reset-failed {SETUP_UNIT} {UPDATE_UNIT} companion-setup.path companion-update.path; "
              "systemctl restart companion-setup.path companion-update.path", timeout=300)
        if unit(vm, WIFI_UNIT).get("LoadState") == "loaded":
            vm.sh(f"systemctl restart --no-block {WIFI_UNIT}", timeout=60)
        vm.sh("systemctl restart companion", timeout=300)
    if cleaned["errors"]:
        fail(f"cleaning up the planted files: {cleaned['errors']}")
    run.guest_serving()
    vm.wait_http()
    links_now = as_root(vm, EVIDENCE, evidence_spec(ssh_key, release_line, marker))["links"]
    if links_now != links_before:
        fail(f"links left in {DATA} after the clean-up: {sorted(set(links_now) - set(links_before))}")

    changed = compare(before, after)
    changed.update(compare(before, after_owner, skip=(OWNER_ROOT,)))
    given = sorted(set(chowned(before, after, uid, gid)) | set(chowned(before, after_owner, uid, gid)))
    because = []
    if evidence["key_planted"]:
        because.append("its SSH key is in root's authorized_keys")
    for what in ("enabled", "active"):
        if ssh_after[what] == what and ssh_before[what] != what:
            because.append(f"ssh.service {what}")
    if before.get(SSH_DROPIN) is None and after.get(SSH_DROPIN) is not None:
        because.append(f"{SSH_DROPIN} written")
    if evidence["root_takes_attacker_password"]:
        because.append("root's owner record takes its password")
    if evidence["release_key_added"]:
        because.append("its release key is in /etc/companion/release-keys")
    if given:
        because.append(f"root files made the service user's: {given}")
    result["service_user_got_root"] = bool(because)
    result["files_outside_changed"] = len(changed)
    detail.update(ssh=ssh_after, leaked=evidence["leaked"])
    if changed:
        detail["changed"] = changed
    if because:
        detail["got_root_because"] = because
    say(f"vm: trust: {detail['links']} links and the service's own requests planted (hard link: "
        f"{detail['hard_link']}); root units: {detail['root_units']}; ssh {ssh_after}; "
        f"{len(changed)} files outside changed; {len(evidence['leaked'])} sentinels read back")
    if because:
        fail(f"the service's user got root: {because}")
    if changed:
        fail(f"files outside the service's folder changed: {changed}")
    if evidence["leaked"]:
        fail(f"root copied a root-only file's content where the service reads it: {evidence['leaked']}")


def evidence_spec(ssh_key: str, release_line: str, marker: str) -> dict:
    return {"data": DATA, "owner_root": OWNER_ROOT, "password": ATTACKER_PASSWORD, "marker": marker,
            "ssh_blob": key_blob(ssh_key), "release_blob": key_blob(release_line),
            "also": [f"{UPDATE_ROOT}/status.json", f"{UPDATE_ROOT}/keys-status.json"]}


# -- 2. an older version -----------------------------------------------------------------------------

def downgrade(run, bundler, result: dict, fail, say) -> None:
    vm = run.vm
    running = update_check.current(vm)
    version = older_than(running, bundler.base)
    worker, = marks(vm, UPDATE_UNIT)
    code, answer = update_check.post_bundle(vm, bundler.make(version))
    if code != 202:
        result["downgrade_refused"] = False
        fail(f"the older bundle ({version}) was not taken to be checked by root: {code} {answer}")
        return
    final = wait_update(vm, worker, say)
    serving = wait_serving(vm)
    on = update_check.current(vm)
    text = final.get("text") or ""
    result["downgrade_refused"] = final["state"] == "failed" and "not newer" in text.lower() \
        and on == running and serving
    result["downgrade"] = {"from": running, "to": version, "text": text}
    say(f"vm: trust: {version} sent to the box on {running}: {final['state']}: {text[:120]}; on {on}")
    if not result["downgrade_refused"]:
        fail(f"the older bundle {version} was not refused as not newer than {running}: {final}, "
             f"on {on}, serving {serving}")


# -- 3. a full card after the service stopped --------------------------------------------------------

def full_card(run, bundler, result: dict, fail, say) -> None:
    vm = run.vm
    running = update_check.current(vm)
    version = bundler.newer()
    path = bundler.make(version)
    # Root copies the store into this folder right after stopping the
    # service: a file system with no byte left there makes that copy fail,
    # every time, at that moment.
    vm.must(f"mkdir -p {BACKUPS} && mount -t tmpfs -o size=64k,mode=0700 companion-trust-full {BACKUPS}")
    try:
        vm.sh(f"dd if=/dev/zero of={BACKUPS}/fill bs=4k 2>/dev/null; sync", timeout=120)
        left = vm.must(f"df --output=avail -B1 {BACKUPS} | tail -n1").strip()
        if left != "0":
            raise vmlib.GuestError(f"the file system over {BACKUPS} is not full: {left} bytes left")
        service = unit(vm, "companion.service").get("InactiveExitTimestampMonotonic", "0")
        worker, = marks(vm, UPDATE_UNIT)
        code, answer = update_check.post_bundle(vm, path)
        if code != 202:
            result["full_card_back_serving"] = False
            fail(f"the bundle for the full card ({version}) answered {code} {answer}")
            return
        final = wait_update(vm, worker, say)
        serving = wait_serving(vm)
        on = update_check.current(vm)
        root = root_status(vm)
        status = root.get("status") or {}
        restarted = unit(vm, "companion.service").get("InactiveExitTimestampMonotonic", "0") != service
        seen = final.get("states_seen") or []
        result["full_card"] = {
            "text": final.get("text"),
            # Where it failed, as root recorded it: a phase if it names one,
            # else the last state root's status went through before "failed".
            "phase": status.get("phase") or (root.get("pending") or {}).get("phase")
            or next((s for s in reversed(seen) if s not in update_check.FINAL), None),
            "states_seen": seen,
            "reason": _root_text(status),
            # The service was stopped (and started again): the failure came after the stop.
            "service_stopped_and_back": restarted,
        }
        if final.get("worker_ended"):
            result["full_card"]["worker_ended"] = final["worker_ended"]
        result["full_card_back_serving"] = final["state"] == "failed" and serving and on == running
        say(f"vm: trust: full card under the store's copy: {final['state']}: {(final.get('text') or '')[:120]}; "
            f"on {on}, {'serving' if serving else 'NOT serving'}, service stopped and back: {restarted}")
        if final["state"] == "done":
            fail(f"the update to {version} installed over a full {BACKUPS}: the store's pre-update copy was not "
                 "made there (the check no longer hits the step it is for)")
        elif not result["full_card_back_serving"]:
            fail(f"an update failing on a full file system left the box {'serving' if serving else 'NOT serving'} "
                 f"on {on} (was {running}): {final}")
    finally:
        vm.sh(f"umount {BACKUPS} || umount -l {BACKUPS}", timeout=120)
        if unit(vm, "companion.service").get("ActiveState") != "active":
            # The defect's own damage, undone so that the run can end cleanly.
            vm.sh("systemctl reset-failed companion; systemctl start --no-block companion", timeout=60)
            run.guest_serving()


def check(run, say) -> dict:
    vm = run.vm
    result = {"ok": True, "service_user_got_root": None, "files_outside_changed": None,
              "downgrade_refused": None, "full_card_back_serving": None}

    def fail(what):
        result["ok"] = False
        run.fail(f"--update (trust): {what}")

    if getattr(vm, "owner_password", None) is None:      # update_check makes it first, at its start
        update_check.make_owner(vm)
    bundler = getattr(run, "bundler", None)
    if bundler is None:
        bundler = run.bundler = update_check.Bundler(run.workdir, run.arch, say)
        vm.must(f"echo '{bundler.public} appliance-vm' >> /etc/companion/release-keys")
    vm.wait_http()
    for name, step in (("planted", planted), ("downgrade", downgrade), ("full card", full_card)):
        try:
            step(run, bundler, result, fail, say)
        except Exception as exc:            # the next check still runs, on a box that serves
            fail(f"{name}: {type(exc).__name__}: {exc}")
            try:
                run.guest_serving()
                vm.wait_http()
            except Exception as again:
                fail(f"after {name}: the box does not serve: {again}")
                break
    return result
