"""Power cuts during a card's first boot (``appliance-vm --image FILE --first-boot-cuts N``).

A fresh card's first boot grows its root partition and file system to the
card and draws the box's SSH host keys (systemd/image/first-boot, once,
until its marker ``/var/lib/companion-image/first-boot-done`` is written).
A person who pulls the plug in the middle, or a moment after, must get a
box that finishes the job at its next boot and serves, with every host key
whole: an empty key file that ``ssh-keygen -A`` would then leave as it is
(it draws only the keys that are missing) is a box whose SSH never works.

Each of the N rounds takes a fresh card (the image unpacked once, copied
sparse), on the SD card's cache model of the power cuts (``lossy_disk.py``:
what the guest had not flushed is lost at a cut, or a random subset of it
kept), under QEMU's ``virt``.  A round's plan names the moments to cut, one
per boot, watched for on the console:

- ``growth``: during the file system's growth (after the kernel's
  "resizing filesystem", before its "resized filesystem");
- ``keys``: after the unit's own "drawing the SSH host keys", before its
  "done" (``ssh-keygen -A``, the syncs, the marker): the unit says both on
  the kernel's log, which the console shows (systemd's "Finished" line
  does not reach the console once the login prompt is there; an image
  without the unit's words is taken as done when the box serves, which
  companion.service is ordered after);
- ``after``: 0-35 s after its "done", while the files just written may
  still be in the kernel's cache (ext4 commits its journal every 5 s, the
  data behind it within 30 s).

The delay into ``growth`` and ``keys`` is drawn from the phase's length as
last seen (a round that went through it uncut), so the first rounds cut
``after`` and see both. The plans go round: [after], [keys], [growth],
[growth, keys], [keys, after].  A boot that serves without the first-boot
unit running again (its marker was kept) skips the plan's remaining cuts.
After the plan, a boot without a cut must serve; it is powered off cleanly
and the card, read from its bytes, must hold: the root grown to the card,
the marker, the box's state, and every host key whole: each private key
reading back (``ssh-keygen -y``) as the public key beside it.

``"first_boot_cuts": {"rounds", "cuts", "phases", "reorder_cuts",
"lost_writes", "unflushed_writes", "ok"}``, each cut's moment and phase as
the console showed it in ``cut_log``.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import image_check
import lossy_disk
from image_check import ImageError

PLANS = (("after",), ("keys",), ("growth",), ("growth", "keys"), ("keys", "after"))
MARKER = "/var/lib/companion-image/first-boot-done"
UNIT_WORDS = "first boot of a new card"
# The console's words, in the order a first boot says them.
# systemd's status lines on the serial console are coloured and cut to its
# 80 columns in their middle ("Starting companion-first-b…own to the card,
# SSH host keys)..."): the unit is known by the start of its name, which is
# always kept, on the line with its escapes taken out.
UNIT = r"\S*companion-first-b"
START = re.compile(r"Starting " + UNIT)
GROWING = re.compile(r"EXT4-fs \(\w+\): resizing filesystem from")
GROWN = re.compile(r"EXT4-fs \(\w+\): resized filesystem to")
DRAWING = re.compile(r"companion-first-boot: drawing the SSH host keys")
# The unit's own "done" (after its last sync), or systemd's line for it.
FINISHED = re.compile(r"companion-first-boot: done\s*$|Finished " + UNIT)
FAILED = re.compile(r"Failed to start " + UNIT)
ESCAPES = re.compile(r"\x1b\[[0-9;]*m")
ORDER = ("start", "growing", "grown", "drawing", "finished")
AFTER_S = 35.0
WATCH_CEILING_S = 1800      # a boot that never reaches its moment fails at last


class Console:
    """A boot's console file, read as it grows: when each word was first seen."""

    def __init__(self, path: Path):
        self.path, self.at, self.seen = path, 0, {}

    def poll(self) -> dict[str, float]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.at)
                chunk = f.read()
        except OSError:
            return self.seen
        # Only whole lines: a line being written is read again next time.
        cut = chunk.rfind(b"\n") + 1
        self.at += cut
        now = time.monotonic()
        for line in ESCAPES.sub("", chunk[:cut].decode(errors="replace")).splitlines():
            for name, word in (("start", START), ("growing", GROWING), ("grown", GROWN), ("drawing", DRAWING),
                               ("finished", FINISHED), ("failed", FAILED)):
                if name not in self.seen and word.search(line):
                    self.seen[name] = now
        return self.seen

    def phase(self) -> str:
        """Where the first boot is, by the last word seen."""
        seen = self.poll()
        for name, phase in (("finished", "after"), ("drawing", "keys"), ("grown", "grown"), ("growing", "growth"),
                            ("start", "start")):
            if name in seen:
                return phase
        return "before"


def verify_keys(card: Path, root_offset: int, workdir: Path) -> dict:
    """Every host key whole: each private key gives back its .pub's key
    (``ssh-keygen -y``); the types drawn."""
    keys = image_check.host_keys(card, root_offset)
    private = sorted(n for n in keys if not n.endswith(".pub"))
    problems = [f"{n} is empty" for n in sorted(keys) if not keys[n].strip()]
    types = []
    for name in private:
        pub = keys.get(name + ".pub", b"").split()
        if not keys[name].strip():
            continue
        if len(pub) < 2:
            problems.append(f"{name}.pub missing or empty")
            continue
        with tempfile.NamedTemporaryFile(dir=workdir, delete=False) as f:
            f.write(keys[name])
        tmp = Path(f.name)
        tmp.chmod(0o600)
        out = subprocess.run(["ssh-keygen", "-y", "-f", str(tmp)], capture_output=True, text=True)
        tmp.unlink()
        derived = out.stdout.split()
        if out.returncode != 0 or derived[:2] != [x.decode() for x in pub[:2]]:
            problems.append(f"{name} does not read back as its .pub ({out.stderr.strip()[:120]})")
        else:
            types.append(pub[0].decode())
    if not private:
        problems.append("no host keys")
    if problems:
        raise ImageError("SSH host keys after the cuts: " + "; ".join(problems))
    return {"types": sorted(types)}


class Round:
    """One fresh card, its cut boots, the boot that must serve, the checks."""

    def __init__(self, number: int, card: Path, layout: image_check.Card, kernel: Path, initrd: Path,
                 workdir: Path, rng: random.Random, lengths: dict, say):
        self.number, self.card, self.layout = number, card, layout
        self.kernel, self.initrd, self.workdir, self.rng = kernel, initrd, workdir, rng
        self.lengths, self.say = lengths, say
        self.disk = lossy_disk.LossyDisk(card, workdir / f"card-{number}.nbd")
        self.drive = f"file=nbd+unix:///?socket={self.disk.sock_path},format=raw,if=virtio,cache=none"
        self.boots = 0
        self.log: list[dict] = []

    def boot(self) -> image_check.Boot:
        self.boots += 1
        return image_check.Boot(self.card, self.kernel, self.initrd, self.layout.append(), self.workdir,
                                1000 * self.number + self.boots, drive=self.drive)

    def learn(self, seen: dict) -> None:
        """The phases' lengths as this boot showed them, for the next rounds' draws."""
        if "growing" in seen and "grown" in seen:
            self.lengths["growth"] = seen["grown"] - seen["growing"]
        if "drawing" in seen and "finished" in seen:
            self.lengths["keys"] = seen["finished"] - seen["drawing"]

    def cut_during(self, phase: str) -> bool:
        """Boots and cuts the power in ``phase``; False if the first-boot
        unit did not run this time (the boot went on to serve: stopped cleanly)."""
        boot = self.boot()
        console = Console(boot.console)
        begin = {"growth": "growing", "keys": "drawing", "after": "finished"}[phase]
        end = time.monotonic() + WATCH_CEILING_S
        while time.monotonic() < end:
            seen = console.poll()
            if "start" in seen and "finished" not in seen and \
                    image_check.http_status(boot.port, "/", timeout=2) == 200:
                # companion.service is ordered after the unit, so serving says
                # it finished; its own "Finished" line never reaches the
                # console once the login prompt is there.
                seen["finished"] = time.monotonic()
            if begin in seen:
                break
            if "failed" in seen:
                boot.shut_down()
                raise ImageError(f"round {self.number}: the first-boot unit failed: {boot.tail()}")
            if boot.proc.poll() is not None:
                raise ImageError(f"round {self.number}: QEMU stopped: {boot.tail()}")
            later = [w for w in ORDER[ORDER.index(begin) + 1:] if w in seen]
            # Serving with no sign of the unit: its marker was kept, it did not run.
            serving = "start" not in seen and image_check.http_status(boot.port, "/", timeout=2) == 200
            if later or serving:
                # Past the moment without its word (a growth with nothing
                # left to grow prints none), or the unit never ran (its
                # marker was kept): no cut on this boot, and the plan ends.
                why = (f"{begin!r} not seen before {later[0]!r}" if later else
                       "serving without the first-boot unit running again")
                self.log.append({"boot": self.boots, "wanted": phase, "skipped": why})
                self.say(f"first-boot cuts: round {self.number}, boot {self.boots}: no cut: {why}")
                if not boot.shut_down():
                    raise ImageError(f"round {self.number}: a boot did not power off cleanly: {boot.tail()}")
                return False
            time.sleep(0.2)
        else:
            raise ImageError(f"round {self.number}: no {begin!r} on the console in {WATCH_CEILING_S} s: "
                             f"{boot.tail()}")
        span = AFTER_S if phase == "after" else max(0.5, 0.9 * self.lengths.get(phase, 2.0))
        delay = self.rng.uniform(0.0, span)
        deadline = seen[begin] + delay
        while time.monotonic() < deadline:
            console.poll()
            time.sleep(0.05)
        landed = console.phase()
        boot.proc.kill()
        boot.proc.wait()
        boot.log.close()
        reorder = self.rng.random() < 0.5
        lost = self.disk.power_cut(reorder=reorder, rng=self.rng)
        self.learn(console.seen)
        entry = {"boot": self.boots, "wanted": phase, "landed": landed, "after_s": round(delay, 1),
                 "mode": "reorder" if reorder else "drop", **lost}
        self.log.append(entry)
        self.say(f"first-boot cuts: round {self.number}, boot {self.boots}: cut {delay:.1f} s into {phase!r} "
                 f"(the console says {landed!r}); card {lost}")
        return True

    def finish(self) -> dict:
        """The boot after the cuts: it must serve; then a clean poweroff and the card's checks."""
        boot = self.boot()
        console = Console(boot.console)
        try:
            seconds = boot.wait_serving()
        except ImageError as exc:
            boot.shut_down()
            raise ImageError(f"round {self.number}: the box did not come back after the cuts: {exc}") from None
        seen = console.poll()
        self.learn(seen)
        clean = boot.shut_down()
        self.disk.close()
        if not clean:
            raise ImageError(f"round {self.number}: the boot after the cuts did not power off cleanly: {boot.tail()}")
        root = self.layout.root["start"]
        image_check.after_first_boot(self.card, 0)
        if image_check.ext4_read(self.card, root, MARKER) is None:
            raise ImageError(f"round {self.number}: no first-boot marker after the cuts")
        keys = verify_keys(self.card, root, self.workdir)
        return {"serving_s": round(seconds, 1), "first_boot_ran_again": "start" in seen, **keys}


def check(image: Path, workdir: Path, rounds: int, say, seed: int | None = None) -> dict:
    rng = random.Random(seed)
    pristine = workdir / "pristine.img"
    say(f"first-boot cuts: unpacking {image.name}; {rounds} rounds, each on a fresh card (virt, the SD card's cache)")
    image_check.unpack(image, pristine)
    layout = image_check.Card(pristine)
    kernel, initrd = layout.extract(workdir)
    lengths: dict = {}
    result = {"rounds": 0, "cuts": 0, "phases": {}, "reorder_cuts": 0, "lost_writes": 0, "unflushed_writes": 0,
              "cut_log": []}
    for number in range(1, rounds + 1):
        card = workdir / f"card-{number}.img"
        subprocess.run(["cp", "--sparse=always", str(pristine), str(card)], check=True)
        plan = PLANS[(number - 1) % len(PLANS)]
        one = Round(number, card, layout, kernel, initrd, workdir, rng, lengths, say)
        try:
            for phase in plan:
                if not one.cut_during(phase):
                    break
            end = one.finish()
        finally:
            one.disk.close()
            result["cut_log"] += [dict(e, round=number) for e in one.log]
            card.unlink(missing_ok=True)
        for entry in one.log:
            if "landed" not in entry:
                continue
            result["cuts"] += 1
            result["phases"][entry["landed"]] = result["phases"].get(entry["landed"], 0) + 1
            result["reorder_cuts"] += entry["mode"] == "reorder"
            result["lost_writes"] += entry.get("lost_writes", 0)
            result["unflushed_writes"] += entry.get("unflushed_writes", 0)
        result["rounds"] += 1
        say(f"first-boot cuts: round {number} ({' then '.join(plan)}): back and serving in {end['serving_s']} s, "
            f"first-boot unit {'ran again' if end['first_boot_ran_again'] else 'did not run again'}, "
            f"host keys whole ({', '.join(end['types'])})")
    pristine.unlink(missing_ok=True)
    return result


def run(image: Path, workdir: Path, rounds: int, say, seed: int | None = None) -> tuple[dict, list[str]]:
    """The ``first_boot_cuts`` figures and the failures."""
    if not shutil.which("ssh-keygen"):
        return {"ok": False}, ["--first-boot-cuts: ssh-keygen is missing (openssh-client)"]
    folder = Path(tempfile.mkdtemp(prefix="first-boot-cuts-", dir=workdir))
    try:
        result = check(image, folder, rounds, say, seed)
        result["ok"] = True
        return result, []
    except (ImageError, OSError, subprocess.SubprocessError) as exc:
        say("FAILED:", exc)
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1500]}, [f"--first-boot-cuts: {exc}"]
