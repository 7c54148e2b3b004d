"""The flashed image under QEMU (``appliance-vm --image FILE``).

The image file itself is what boots, as a card would hold it: its MBR
partition table, the kernel, initrd and kernel command line of its FAT boot
partition (read with mtools, no loop mount), its root partition grown at its
first boot.  No test agent is added to it: everything is seen from the host,
by reading the card's bytes and through the box's forwarded web port.

The machine is QEMU's ``virt`` (TCG, cortex-a72) with the image's own
kernel: QEMU's ``raspi3b`` does not run the Pi's GPU firmware (start.elf,
config.txt are never read, so it would not boot the card "as flashed"
either: the kernel and device tree are given to QEMU by hand on both), has
no network device of its own to reach the box's port (the Pi 3's LAN9514
USB Ethernet is not emulated) and runs its four cortex-a53 cores slower.
``virt`` runs Debian's same arm64 kernel, initrd, root and services; what it
cannot test is the Pi's firmware and device tree, and its Wi-Fi chip.

Standard library only: it runs with the host's ``python3``.
"""

from __future__ import annotations

import http.client
import json
import lzma
import os
import re
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

MACHINE = "virt"
CARD_BYTES = 8 * 2**30           # the card it is "flashed" on: 8 GB, larger than the image
SECTOR = 512
BOX_PORT = 8000                  # the companion's web side
SERVING_CEILING_S = 1800         # generous: TCG on a shared host; a boot that never serves fails at last


class ImageError(RuntimeError):
    """What the image or its boot did not hold (one line)."""


# -- reading the card ----------------------------------------------------------------------------

def partitions(card: Path) -> list[dict]:
    """The MBR's primary partitions: number, type, start and size in bytes."""
    with open(card, "rb") as f:
        mbr = f.read(512)
    if mbr[510:512] != b"\x55\xaa":
        raise ImageError(f"{card.name}: no MBR partition table")
    found = []
    for i in range(4):
        entry = mbr[446 + 16 * i: 446 + 16 * (i + 1)]
        ptype = entry[4]
        start, count = struct.unpack("<II", entry[8:16])
        if ptype:
            found.append({"number": i + 1, "type": ptype, "boot": entry[0] == 0x80,
                          "start": start * SECTOR, "size": count * SECTOR})
    return found


def fat_read(card: Path, offset: int, name: str) -> bytes:
    """A file of the FAT boot partition at ``offset`` (mtools: no mount)."""
    out = subprocess.run(["mcopy", "-n", "-i", f"{card}@@{offset}", f"::{name}", "-"],
                         capture_output=True)
    if out.returncode != 0:
        raise ImageError(f"no {name} in the boot partition: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout


def fat_list(card: Path, offset: int) -> list[str]:
    out = subprocess.run(["mdir", "-b", "-i", f"{card}@@{offset}", "::"], capture_output=True, check=True)
    return sorted(Path(line).name for line in out.stdout.decode().split())


def ext4_read(card: Path, offset: int, path: str) -> bytes | None:
    """A file of the ext4 root at ``offset`` (debugfs on the card file; None if absent)."""
    out = subprocess.run(["debugfs", "-R", f"cat {path}", f"{card}?offset={offset}"], capture_output=True)
    if out.returncode != 0 or b"File not found" in out.stderr:
        return None
    return out.stdout


def ext4_ls(card: Path, offset: int, path: str) -> list[str] | None:
    out = subprocess.run(["debugfs", "-R", f"ls {path}", f"{card}?offset={offset}"], capture_output=True)
    text = out.stdout.decode(errors="replace")
    if out.returncode != 0 or "File not found" in out.stderr.decode(errors="replace"):
        return None
    return [n for n in re.findall(r"\(\d+\)\s+(\S+)", text) if n not in (".", "..")]


def superblock(card: Path, offset: int) -> bytes:
    """The ext4 superblock of the partition at ``offset``; ImageError if there is none."""
    with open(card, "rb") as f:
        f.seek(offset + 1024)
        sb = f.read(1024)
    if len(sb) < 1024 or struct.unpack_from("<H", sb, 0x38)[0] != 0xEF53:
        raise ImageError("the root partition holds no ext4 file system")
    return sb


def ext4_bytes(card: Path, offset: int) -> int:
    """The ext4 file system's size, from its superblock."""
    sb = superblock(card, offset)
    blocks_lo, = struct.unpack_from("<I", sb, 4)
    log_block, = struct.unpack_from("<I", sb, 24)
    blocks_hi, = struct.unpack_from("<I", sb, 0x150)
    return ((blocks_hi << 32) | blocks_lo) * (1024 << log_block)


class Card:
    """The image's layout and what its boot partition tells the firmware."""

    def __init__(self, path: Path):
        self.path = path
        parts = partitions(path)
        if len(parts) != 2 or parts[0]["type"] not in (0x0B, 0x0C) or parts[1]["type"] != 0x83:
            raise ImageError(f"expected a FAT boot and a Linux root partition, found {parts}")
        self.boot, self.root = parts
        config = fat_read(path, self.boot["start"], "config.txt").decode()
        self.cmdline = fat_read(path, self.boot["start"], "cmdline.txt").decode().strip()
        self.files = fat_list(path, self.boot["start"])
        kernel = re.search(r"^kernel=(\S+)", config, re.M)
        initrd = re.search(r"^initramfs\s+(\S+)", config, re.M)
        if not kernel or not initrd:
            raise ImageError("config.txt names no kernel= or initramfs")
        self.kernel_name, self.initrd_name = kernel.group(1), initrd.group(1)
        self.dtbs = [f for f in self.files if f.endswith(".dtb")]

    def extract(self, folder: Path) -> tuple[Path, Path]:
        kernel, initrd = folder / "kernel", folder / "initrd"
        kernel.write_bytes(fat_read(self.path, self.boot["start"], self.kernel_name))
        initrd.write_bytes(fat_read(self.path, self.boot["start"], self.initrd_name))
        return kernel, initrd

    def append(self) -> str:
        """cmdline.txt as the Pi's firmware passes it, with the console on virt's
        serial port (the Pi's consoles are ttyS1/ttyAMA0 of another UART)."""
        args = [a for a in self.cmdline.split() if not a.startswith("console=")]
        return " ".join(args + ["console=ttyAMA0"])


# -- what must not be in the image ---------------------------------------------------------------

def hygiene(card: Path, root_offset: int) -> list[str]:
    """What every card would share and must not: a password, SSH host keys,
    a machine id, the box's PIN or Wi-Fi password, sshd switched on."""
    problems = []
    shadow = ext4_read(card, root_offset, "/etc/shadow")
    if shadow is None:
        problems.append("no /etc/shadow")
    else:
        for line in shadow.decode().splitlines():
            user, pw = line.split(":")[:2]
            if pw and not pw.startswith(("!", "*")):
                problems.append(f"user {user} has a password")
    keys = [n for n in ext4_ls(card, root_offset, "/etc/ssh") or [] if n.startswith("ssh_host_")]
    if keys:
        problems.append(f"SSH host keys in the image: {keys}")
    if (ext4_read(card, root_offset, "/etc/machine-id") or b"").strip():
        problems.append("a machine id in the image")
    state = ext4_ls(card, root_offset, "/var/lib/companion")
    if state:
        problems.append(f"the box's state in the image (PIN, Wi-Fi password?): {state}")
    wants = ext4_ls(card, root_offset, "/etc/systemd/system/multi-user.target.wants") or []
    if "ssh.service" in wants or "sshd.service" in wants:
        problems.append("sshd is switched on")
    if "companion.service" not in wants:
        problems.append("companion.service is not enabled")
    return problems


# -- booting it ----------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(port: int, path: str = "/", timeout: float = 10) -> int | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", path)
        status = conn.getresponse().status
        conn.close()
        return status
    except (OSError, http.client.HTTPException):
        return None


def ssh_banner(port: int, wait: float = 5) -> bytes:
    """What the box's port 22 says (QEMU's forward accepts, then closes if the
    guest refuses: an empty answer means no sshd)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
            s.settimeout(wait)
            return s.recv(64)
    except OSError:
        return b""


class Boot:
    """One boot of the card under ``virt``: ``memory`` MB (a Zero 2 W has
    512), the card as ``drive`` (QEMU's -drive; default: the card file,
    QEMU's own cache, as a card that never loses its power)."""

    def __init__(self, card: Path, kernel: Path, initrd: Path, append: str, workdir: Path, n: int,
                 *, memory: int = 1024, drive: str | None = None):
        self.port, self.ssh_port = free_port(), free_port()
        self.console = workdir / f"image-console-{n}.log"
        self.qmp_path = workdir / f"image-qmp-{n}.sock"
        self.qmp_path.unlink(missing_ok=True)
        cmd = ["qemu-system-aarch64", "-machine", MACHINE, "-cpu", "cortex-a72", "-accel", "tcg,thread=multi",
               "-smp", "2", "-m", str(memory), "-display", "none", "-monitor", "none",
               "-serial", f"file:{self.console}",
               "-kernel", str(kernel), "-initrd", str(initrd), "-append", append,
               "-drive", drive or f"file={card},format=raw,if=virtio,cache=writeback",
               "-device", "virtio-rng-pci", "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
               # restrict=on: the box reaches nothing; only the forwarded ports come in.
               "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:{BOX_PORT},"
                          f"hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22",
               "-device", "virtio-net-pci,netdev=net0"]
        self.log = open(workdir / f"image-qemu-{n}.log", "w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_serving(self, ceiling: float = SERVING_CEILING_S) -> float:
        """Seconds from QEMU's start to the box's page answering 200."""
        end = self.started + ceiling
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise ImageError(f"QEMU stopped before the box served: {self.tail()}")
            if http_status(self.port) == 200:
                return time.monotonic() - self.started
            time.sleep(0.5)
        raise ImageError(f"the box did not serve within {ceiling} s: {self.tail()}")

    def tail(self) -> str:
        text = self.console.read_text(errors="replace") if self.console.exists() else ""
        return " | ".join(text.strip().splitlines()[-6:])[-900:]

    def qmp(self, *commands: dict) -> None:
        """Sends QMP commands (each {"execute": ..., "arguments": ...}) to this QEMU."""
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(str(self.qmp_path))
                f = s.makefile("rw")
                f.readline()                        # the greeting
                for command in ({"execute": "qmp_capabilities"}, *commands):
                    f.write(json.dumps(command) + "\n")
                    f.flush()
                    f.readline()
        except OSError:
            pass

    def press_power(self) -> None:
        """virt's power key (QEMU's ``system_powerdown``): systemd-logind powers off."""
        self.qmp({"execute": "system_powerdown"})

    #: The kernel's last words after systemd's whole shutdown (every file
    #: system unmounted or read-only, the disks flushed).
    GOODBYE = ("reboot: Power down", "reboot: Restarting system", "reboot: System halted")

    def shut_down(self, wait: float = 300) -> bool:
        """Stops the box as its power button would (:meth:`press_power`);
        kills QEMU after ``wait`` seconds.  True if QEMU stopped by itself
        and the console's last kernel words say systemd's shutdown ended."""
        if self.proc.poll() is None:
            self.press_power()
        try:
            self.proc.wait(wait)
            stopped = True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            stopped = False
        self.log.close()
        text = self.console.read_text(errors="replace") if self.console.exists() else ""
        return stopped and any(word in text for word in self.GOODBYE)


def unpack(image: Path, out: Path) -> Path:
    """The .img.xz as a card: unpacked, then as large as the card it is flashed on."""
    if image.name.endswith(".xz"):
        with lzma.open(image) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 16 * 2**20)
    else:
        shutil.copy(image, out)
    if out.stat().st_size < CARD_BYTES:
        os.truncate(out, CARD_BYTES)
    return out


def sd_modules(card: Path, layout: Card, say) -> dict:
    """Each covered board's SD card path against the initrd (boot_modules.py):
    {"ok", "boards"}; the boots go on either way, and :func:`run` fails the
    run when it is not ok (:func:`sd_failure`)."""
    import boot_modules

    short = boot_modules.summary(boot_modules.from_card(card, layout))
    for board, entry in short["boards"].items():
        say(f"image: {board} ({entry['dtb']}): SD card on {entry['controller']}, initrd needs "
            f"{', '.join(entry['modules']) or 'nothing loadable'}"
            + (f"; MISSING {entry['missing']}" if entry["missing"] else ""))
    return short


def sd_failure(short: dict) -> str | None:
    if short.get("ok"):
        return None
    return "the initrd lacks what a board needs to find its root: " + "; ".join(
        f"{board}: {', '.join(entry['missing'])}" for board, entry in short["boards"].items() if entry["missing"])


def unmounted_cleanly(card: Path, offset: int) -> bool:
    """Whether the root's ext4 was left as a whole shutdown leaves it: its
    superblock's state "cleanly unmounted" (s_state bit 0) and no journal
    to replay (the needs_recovery feature, incompat 0x4, off).  A board
    reset or a cut before the root was unmounted (or remounted read-only)
    leaves needs_recovery on, whatever the console printed."""
    sb = superblock(card, offset)
    state, = struct.unpack_from("<H", sb, 0x3A)
    incompat, = struct.unpack_from("<I", sb, 0x60)
    return bool(state & 1) and not incompat & 0x4


def stopped_cleanly(boot, card: Path, which: str) -> None:
    """After ``boot``'s shutdown: QEMU stopped by itself, and the card's root
    says so too (:func:`unmounted_cleanly`); else ImageError."""
    if not boot.clean:
        raise ImageError(f"the {which} boot did not power off cleanly: {boot.tail()}")
    if not unmounted_cleanly(card, Card(card).root["start"]):
        raise ImageError(f"the {which} boot stopped with its root still mounted (ext4 needs_recovery on the card)")


def check(image: Path, workdir: Path, say) -> dict:
    """Boots ``image`` twice (first boot, then again) and returns the
    ``image`` figures; raises ImageError when a check does not hold."""
    if not image.exists():
        raise ImageError(f"no image file {image}")
    for tool in ("qemu-system-aarch64", "mcopy", "mdir", "debugfs"):
        if not shutil.which(tool):
            raise ImageError(f"{tool} is missing (apt-get install qemu-system-arm mtools e2fsprogs)")
    card = workdir / "card.img"
    say(f"image: unpacking {image.name} onto an {CARD_BYTES // 2**30} GB card")
    unpack(image, card)
    layout = Card(card)
    before = ext4_bytes(card, layout.root["start"])
    problems = hygiene(card, layout.root["start"])
    if problems:
        raise ImageError("the image as built: " + "; ".join(problems))
    say(f"image: boot partition: {layout.kernel_name}, {layout.initrd_name}, {len(layout.dtbs)} device trees; "
        f"cmdline {layout.cmdline!r}; root {before / 2**20:.0f} MiB")
    sd = sd_modules(card, layout, say)
    kernel, initrd = layout.extract(workdir)
    result = {"machine": MACHINE, "kernel": layout.kernel_name, "dtbs": layout.dtbs, "sd_modules": sd}

    first = Boot(card, kernel, initrd, layout.append(), workdir, 1)
    say(f"image: first boot (QEMU {MACHINE}, TCG), box on http://127.0.0.1:{first.port}/")
    try:
        result["first_boot_to_serving_s"] = round(first.wait_serving(), 1)
        say(f"image: first boot to serving: {result['first_boot_to_serving_s']} s")
        banner = ssh_banner(first.ssh_port)
        if banner.startswith(b"SSH-"):
            raise ImageError(f"sshd answers on a fresh card: {banner!r}")
    finally:
        first.clean = first.shut_down()
    say(f"image: first boot stopped ({'clean poweroff' if first.clean else 'NOT clean: killed'})")
    stopped_cleanly(first, card, "first")
    result["root_mib"] = after_first_boot(card, before)

    second = Boot(card, kernel, initrd, layout.append(), workdir, 2)
    say("image: second boot")
    try:
        result["boot_to_serving_s"] = round(second.wait_serving(), 1)
        say(f"image: boot to serving: {result['boot_to_serving_s']} s")
    finally:
        second.clean = second.shut_down()
    stopped_cleanly(second, card, "second")
    return result


def host_keys(card: Path, root_offset: int) -> dict[str, bytes]:
    """The card's SSH host key files (private and .pub), by name."""
    names = [n for n in ext4_ls(card, root_offset, "/etc/ssh") or [] if n.startswith("ssh_host_")]
    return {n: ext4_read(card, root_offset, f"/etc/ssh/{n}") or b"" for n in names}


def after_first_boot(card: Path, before: int) -> dict:
    """What a first boot must leave on the card, read from its bytes: the
    root partition and file system grown to the card, SSH host keys drawn
    (none empty), the box's state kept.  The root's sizes in MiB."""
    layout = Card(card)
    after = ext4_bytes(card, layout.root["start"])
    grown_to = layout.root["start"] + layout.root["size"]
    size = card.stat().st_size
    if grown_to < size - 4 * 2**20 or after < layout.root["size"] - 4 * 2**20:
        raise ImageError(f"the root did not grow to the card: partition ends at {grown_to / 2**20:.0f} MiB, "
                         f"file system {after / 2**20:.0f} MiB, card {size / 2**20:.0f} MiB")
    keys = host_keys(card, layout.root["start"])
    if not keys:
        raise ImageError("no SSH host keys drawn at first boot")
    empty = sorted(n for n, data in keys.items() if not data.strip())
    if empty:
        raise ImageError(f"empty SSH host keys on the card: {empty}")
    if not ext4_ls(card, layout.root["start"], "/var/lib/companion"):
        raise ImageError("the box kept nothing in /var/lib/companion at its first start")
    return {"image": round(before / 2**20), "after_first_boot": round(after / 2**20)}


def run(image: Path, cache: Path, keep: bool, say, *, machine: str = MACHINE, memory: bool = False,
        first_boot_cuts: int = 0, seed: int | None = None) -> tuple[dict, list[str]]:
    """``appliance-vm --image FILE [--machine raspi3b] [--memory] [--first-boot-cuts N]``:
    the summary (with its ``image`` figures, and ``memory`` and
    ``first_boot_cuts`` when asked) and the failures."""
    runs = cache / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix="image-", dir=runs))
    started = time.monotonic()
    summary: dict = {"arch": "arm64", "image_file": image.name}
    failures: list[str] = []
    try:
        if machine == "raspi3b":
            import raspi_check
            figures = raspi_check.check(image, workdir, say)
        else:
            figures = check(image, workdir, say)
        summary["image"] = {k: figures[k] for k in ("boot_to_serving_s", "first_boot_to_serving_s", "machine")}
        summary["image"]["initrd_sd_ok"] = figures["sd_modules"]["ok"]
        summary["image_detail"] = {k: v for k, v in figures.items() if k not in summary["image"]}
        problem = sd_failure(figures["sd_modules"])
        if problem:
            say("FAILED:", problem)
            failures.append(problem)
    except ImageError as exc:
        say("FAILED:", exc)
        failures.append(str(exc))
    # Each on a card of its own, freshly unpacked (memory_check.py, first_boot_cuts.py).
    if memory:
        import memory_check
        summary["memory"], more = memory_check.run(image, workdir, say)
        failures += more
    if first_boot_cuts:
        import first_boot_cuts as cuts_check
        summary["first_boot_cuts"], more = cuts_check.run(image, workdir, first_boot_cuts, say, seed=seed)
        failures += more
    summary["total_s"] = round(time.monotonic() - started, 1)
    summary["ok"] = not failures
    if failures:
        summary["failures"] = [f[:500] for f in failures]
    if keep or failures:
        say(f"image: kept {workdir} (card, consoles)")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary, failures
