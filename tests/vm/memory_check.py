"""A Pi Zero 2 W's memory (``appliance-vm --image FILE --memory``).

The flashed image, on a fresh card, under QEMU's ``virt`` with 512 MB (a
Zero 2 W's RAM; ``raspi3b``'s is fixed at 1 GiB) and no swap, as the image
has none.  Its PIN is set as an owner sets one, in ``/etc/default/companion``
(written onto the card before it boots).  Then, all from the host:

1. set-up from a phone (``POST /api/setup`` with the PIN: the owner's
   password and an SSH key made for the run, Finish): the box turns SSH on
   for that key, as for any owner, and the run reads the guest through it.
   The box's per-address cap on event streams (8) is raised to 10 in its
   ``companion.toml``: QEMU's forwarded port makes every phone one address,
   where a table's phones have one each;
2. a sampler in the guest (a shell loop, builtins only) writes, twice a
   second, ``MemAvailable`` and the resident memory of every process of
   ``companion.service`` (its cgroup);
3. **10 phones follow a game**: each loads the page and the state, then
   holds the event stream open while the table adds points every second;
   every phone must be sent the table's changes;
4. **an update** while they still follow: the run's release key added on
   the Update page (the owner's password), a bundle made on the host
   (``update_check.Bundler``: the wheels for aarch64) sent as a phone
   sends it; pip builds the new environment in these 512 MB; it must end
   ``done``, the box serving on the new version;
5. the kernel's OOM kills since boot (``/proc/vmstat``'s ``oom_kill``)
   must be 0; then a clean poweroff.

``"memory": {"ram_mb", "box_rss_mb", "available_min_mb",
"update_available_min_mb", "oom_kills", ...}``: the box's largest resident
memory and the lowest available memory while the phones follow, the lowest
during the update.  What it adds to the box's own: sshd and one session
(a few MB), the sampler (a shell).  What it does not show: a Zero 2 W's
speed (TCG), its GPU's share of the RAM (the firmware's ``gpu_mem``; 64 MB
by default on a real board leaves about 440 MB to Linux), the Wi-Fi chip's
driver and firmware.

Standard library only, but for the bundle (made with the repository's
``.venv``, as ``--update`` makes its own).
"""

from __future__ import annotations

import http.client
import json
import random
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import image_check
import vmlib
from image_check import ImageError

RAM_MB = 512                # a Pi Zero 2 W
PHONES = 10
FOLLOW_S = 120              # how long the phones follow before the update (a load, not a budget)
PLAYERS = ["Marc-Antoine", "Éloïse", "Ann", "Ben"]
OWNER_PASSWORD = "memory owner password 1"
LOG = "/run/companion-memory.log"
CGROUP = "/sys/fs/cgroup/system.slice/companion.service/cgroup.procs"

# The sampler: shell builtins only (no process per sample, but sleep's),
# so that what it costs the guest is a shell's few hundred kB.
SAMPLER = r"""#!/bin/sh
while :; do
    a=0; while read -r k v u; do [ "$k" = MemAvailable: ] && { a=$v; break; }; done < /proc/meminfo
    r=0
    if [ -r CGROUP ]; then
        while read -r p; do
            [ -r "/proc/$p/status" ] || continue
            while read -r k v u; do [ "$k" = VmRSS: ] && { r=$((r + v)); break; }; done < "/proc/$p/status"
        done < CGROUP
    fi
    read -r up idle < /proc/uptime
    echo "s $up $a $r" >> LOG
    sleep 0.5
done
"""


def sampler(cgroup: str = CGROUP, log: str = LOG) -> str:
    """The sampler's script, reading ``cgroup``'s processes, writing to ``log``."""
    return SAMPLER.replace("CGROUP", cgroup).replace("LOG", log)


class Result:
    def __init__(self, rc: int, stdout: str, stderr: str):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def __repr__(self) -> str:
        return f"Result(rc={self.rc}, stdout={self.stdout[-300:]!r}, stderr={self.stderr[-300:]!r})"


class Box:
    """The booted card seen from the host: its page (``http``, as vmlib.VM's)
    and, once set-up has turned SSH on, a root shell (``sh``, ``must``)."""

    def __init__(self, boot: image_check.Boot, workdir: Path, pin: str):
        self.boot, self.port, self.pin = boot, boot.port, pin
        self.key = workdir / "owner-ssh"
        self.owner_password = OWNER_PASSWORD

    def http(self, method: str, path: str, body=None, headers: dict | None = None,
             timeout: float = 10) -> tuple[int, bytes]:
        return vmlib.http_request(self.port, method, path, body, headers, timeout)

    def sh(self, script: str, timeout: float = 600, input: str = "") -> Result:
        cmd = ["ssh", "-i", str(self.key), "-p", str(self.boot.ssh_port), "-o", "BatchMode=yes",
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
               "-o", "ConnectTimeout=30", "root@127.0.0.1", script]
        try:
            out = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(124, "", f"timed out after {timeout} s")
        return Result(out.returncode, out.stdout, out.stderr)

    def must(self, script: str, **kw) -> str:
        res = self.sh(script, **kw)
        if not res.ok:
            raise ImageError(f"in the guest: {script[:200]!r} -> {res}")
        return res.stdout

    def mark(self, what: str) -> None:
        self.must(f"echo 'm {what}' >> {LOG}")


def set_pin(card: Path, root_offset: int, pin: str, workdir: Path) -> None:
    """The PIN in the card's /etc/default/companion, as an owner sets it."""
    old = image_check.ext4_read(card, root_offset, "/etc/default/companion") or b""
    new = workdir / "default-companion"
    new.write_bytes(old.rstrip(b"\n") + (b"\n" if old.strip() else b"") + f"COMPANION_PIN={pin}\n".encode())
    new.chmod(0o644)
    target = f"{card}?offset={root_offset}"
    subprocess.run(["debugfs", "-w", "-R", "rm /etc/default/companion", target], capture_output=True)
    out = subprocess.run(["debugfs", "-w", "-R", f"write {new} /etc/default/companion", target],
                         capture_output=True, text=True)
    if image_check.ext4_read(card, root_offset, "/etc/default/companion") != new.read_bytes():
        raise ImageError(f"could not write the PIN onto the card: {out.stderr[-300:]}")


def set_up(box: Box, say) -> None:
    """Set-up as a phone does it, with an SSH key; then wait for SSH."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "memory-check", "-f", str(box.key)],
                   check=True)
    public = (box.key.parent / (box.key.name + ".pub")).read_text().strip()
    code, body = box.http("POST", "/api/setup", {"owner_password": OWNER_PASSWORD, "ssh_key": public,
                                                 "done": True}, {"X-Table-Pin": box.pin}, timeout=60)
    if code != 200:
        raise ImageError(f"set-up refused: {code} {body[:300]!r}")
    end = time.monotonic() + 600
    while time.monotonic() < end:
        if image_check.ssh_banner(box.boot.ssh_port).startswith(b"SSH-") and box.sh("true", timeout=120).ok:
            say("memory: set-up done, SSH on for the run's key")
            return
        time.sleep(3)
    raise ImageError(f"SSH did not come on after set-up: {box.http('GET', '/api/setup')[1][:300]!r}")


class Phone(threading.Thread):
    """A phone following the game: the page, the state, then the event
    stream, read until ``stop``; opened again if the box goes away (an
    update restarts it)."""

    def __init__(self, box: Box, stop: threading.Event):
        super().__init__(daemon=True)
        self.box, self.stop = box, stop
        self.events, self.opened, self.errors = 0, 0, []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for path in ("/", "/api/state"):
                    code, _ = self.box.http("GET", path, timeout=60)
                    if code != 200:
                        raise OSError(f"GET {path}: {code}")
                conn = http.client.HTTPConnection("127.0.0.1", self.box.port, timeout=30)
                conn.request("GET", "/api/events")
                resp = conn.getresponse()
                if resp.status != 200:
                    raise OSError(f"GET /api/events: {resp.status} {resp.read()[:200]!r}")
                self.opened += 1
                while not self.stop.is_set():
                    line = resp.fp.readline()
                    if not line:
                        break               # the box closed the stream
                    if line.startswith(b"data:"):
                        self.events += 1
                conn.close()
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
                self.stop.wait(2)


class Table(threading.Thread):
    """The table: points added every second with the PIN."""

    def __init__(self, box: Box, stop: threading.Event, rng: random.Random):
        super().__init__(daemon=True)
        self.box, self.stop, self.rng = box, stop, rng
        self.acked, self.errors = 0, 0

    def run(self) -> None:
        while not self.stop.is_set():
            action = {"type": "add", "seat": self.rng.randrange(len(PLAYERS)), "points": self.rng.randint(1, 9)}
            try:
                code, _ = self.box.http("POST", "/api/actions", action, {"X-Table-Pin": self.box.pin}, timeout=60)
                if code == 200:
                    self.acked += 1
                else:
                    self.errors += 1
            except (OSError, http.client.HTTPException):
                self.errors += 1            # the box restarting during the update
            self.stop.wait(1.0)


def samples(text: str) -> dict[str, list[tuple[float, int, int]]]:
    """The sampler's lines (uptime, MemAvailable kB, the box's RSS kB), by
    the phase the host marked them in ("m NAME" lines)."""
    phases: dict[str, list] = {}
    now = "before"
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["m"] and len(parts) > 1:
            now = parts[1]
        elif parts[:1] == ["s"] and len(parts) == 4:
            try:
                sample = (float(parts[1]), int(parts[2]), int(parts[3]))
            except ValueError:
                continue                # a line still being written when the log was read
            phases.setdefault(now, []).append(sample)
    return phases


def mb(kb: int) -> float:
    return round(kb / 1024, 1)


def check(image: Path, workdir: Path, say) -> dict:
    card = workdir / "memory-card.img"
    say(f"memory: unpacking {image.name} onto a fresh card; {RAM_MB} MB, virt")
    image_check.unpack(image, card)
    layout = image_check.Card(card)
    rng = random.Random()
    pin = f"{rng.randrange(10000):04d}"
    set_pin(card, layout.root["start"], pin, workdir)
    kernel, initrd = layout.extract(workdir)
    boot = image_check.Boot(card, kernel, initrd, layout.append(), workdir, 101, memory=RAM_MB)
    box = Box(boot, workdir, pin)
    result: dict = {"ram_mb": RAM_MB}
    stop = threading.Event()
    try:
        result["first_boot_to_serving_s"] = round(boot.wait_serving(), 1)
        say(f"memory: serving {result['first_boot_to_serving_s']} s after QEMU's start (first boot)")
        set_up(box, say)
        result["mem_total_mb"] = mb(int(box.must("awk '/^MemTotal:/ {print $2}' /proc/meminfo")))
        box.must(f"printf '\\nmax_streams_per_address = {PHONES}\\n' >> /var/lib/companion/companion.toml && "
                 "systemctl restart companion")
        end = time.monotonic() + 300
        while time.monotonic() < end and image_check.http_status(box.port, "/api/state") != 200:
            time.sleep(1)
        # The sampler runs as a unit of its own (systemd-run), not in the
        # background of the SSH session that starts it (whose end may take
        # it along), through sh (wherever /run is mounted noexec); it must
        # have written a sample before the phones come.
        box.must(f"rm -f {LOG}; cat > /run/companion-memory.sh && "
                 "systemd-run --quiet --unit companion-memory-sampler /bin/sh /run/companion-memory.sh",
                 input=sampler())
        end = time.monotonic() + 60
        while time.monotonic() < end and not box.sh(f"grep -q '^s ' {LOG}").ok:
            time.sleep(1)
        if not box.sh(f"grep -q '^s ' {LOG}").ok:
            raise ImageError("the memory sampler wrote nothing: "
                             + box.sh("systemctl status companion-memory-sampler --no-pager | tail -5").stdout)
        code, body = box.http("POST", "/api/actions", {"type": "new_game", "game": "scoreboard", "players": PLAYERS},
                              {"X-Table-Pin": pin}, timeout=60)
        if code != 200:
            raise ImageError(f"new game refused: {code} {body[:200]!r}")

        box.mark("phones")
        phones = [Phone(box, stop) for _ in range(PHONES)]
        for phone in phones:
            phone.start()
        table = Table(box, stop, rng)
        table.start()
        say(f"memory: {PHONES} phones follow the game for {FOLLOW_S} s")
        time.sleep(FOLLOW_S)
        following = [p.events for p in phones]
        hwm = box.must("grep VmHWM /proc/$(systemctl show -p MainPID --value companion)/status").split()[1]
        result["box_hwm_mb"] = mb(int(hwm))
        result["phones"] = {"count": PHONES, "events_min": min(following), "actions": table.acked,
                            "opened": sum(p.opened for p in phones)}
        say(f"memory: phones received {min(following)}-{max(following)} events for {table.acked} actions")
        if min(following) < 1 or table.acked < 1 or any(p.opened < 1 for p in phones):
            raise ImageError(f"the phones did not follow the game: {result['phones']}, "
                             f"errors {[p.errors[:2] for p in phones]}")

        box.mark("update")
        result["update_s"] = update(box, workdir, say)
        box.mark("after")
        stop.set()
        phases = samples(box.must(f"cat {LOG}"))
        follow, during = phases.get("phones", []), phases.get("update", [])
        if not follow or not during:
            raise ImageError(f"the sampler recorded nothing (phones {len(follow)}, update {len(during)} samples)")
        result["box_rss_mb"] = mb(max(s[2] for s in follow))
        result["available_min_mb"] = mb(min(s[1] for s in follow))
        result["update_available_min_mb"] = mb(min(s[1] for s in during))
        result["update_box_rss_mb"] = mb(max(s[2] for s in during))
        result["samples"] = {"phones": len(follow), "update": len(during)}
        vmstat = box.must("cat /proc/vmstat")
        kills = [int(line.split()[1]) for line in vmstat.splitlines() if line.startswith("oom_kill ")]
        result["oom_kills"] = kills[0] if kills else None
        journal = box.sh("journalctl -k -b --no-pager | grep -i 'out of memory' | tail -5").stdout.strip()
        if result["oom_kills"] is None:
            raise ImageError("no oom_kill counter in /proc/vmstat")
        if result["oom_kills"] or journal:
            raise ImageError(f"the OOM killer killed {result['oom_kills']} processes: {journal[:500]}")
        say(f"memory: box {result['box_rss_mb']} MB resident, available at least {result['available_min_mb']} MB "
            f"with {PHONES} phones, {result['update_available_min_mb']} MB during the update; "
            f"{result['oom_kills']} OOM kills")
    finally:
        stop.set()
        clean = boot.shut_down()
    if not clean:
        raise ImageError(f"the memory run's box did not power off cleanly: {boot.tail()}")
    return result


def update(box: Box, workdir: Path, say) -> float:
    """The run's release key added by the owner, then one good update; its seconds."""
    import update_check

    bundler = update_check.Bundler(workdir, "arm64", say)
    code, body = box.http("POST", "/api/update/keys", {"add": f"{bundler.public}"},
                          {"X-Owner-Password": OWNER_PASSWORD}, timeout=60)
    if code != 202:
        raise ImageError(f"the release key was refused: {code} {body[:300]!r}")
    end = time.monotonic() + 600
    while time.monotonic() < end:
        code, body = box.http("GET", "/api/update/keys", timeout=30)
        if code == 200 and json.loads(body).get("accepts_updates"):
            break
        time.sleep(2)
    else:
        raise ImageError(f"the release key was not listed: {body[:300]!r}")
    version = bundler.newer()
    bundle = bundler.make(version)
    say(f"memory: updating to {version} ({bundle.stat().st_size / 2**20:.0f} MB bundle) in {RAM_MB} MB")
    t = time.monotonic()
    code, answer = update_check.post_bundle(box, bundle)
    if code != 202:
        raise ImageError(f"POST /api/update answered {code} {answer}")
    final = update_check.wait_final(box, say=say)
    seconds = round(time.monotonic() - t, 1)
    on = box.must("basename \"$(readlink /opt/companion/current)\"").strip()
    if final["state"] != "done" or on != version:
        raise ImageError(f"the update did not install: {final}, on {on}")
    say(f"memory: updated to {version} in {seconds} s")
    return seconds


def run(image: Path, workdir: Path, say) -> tuple[dict, list[str]]:
    """The ``memory`` figures and the failures."""
    for tool in ("ssh", "ssh-keygen", "debugfs"):
        if not shutil.which(tool):
            return {"ok": False}, [f"--memory: {tool} is missing (openssh-client, e2fsprogs)"]
    folder = Path(tempfile.mkdtemp(prefix="memory-", dir=workdir))
    try:
        result = check(image, folder, say)
        result["ok"] = True
        return result, []
    except (ImageError, OSError, subprocess.SubprocessError) as exc:
        say("FAILED:", exc)
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1500]}, [f"--memory: {exc}"]
    finally:
        (folder / "memory-card.img").unlink(missing_ok=True)
