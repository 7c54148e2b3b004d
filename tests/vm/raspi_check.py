"""The flashed image booted the Pi's way (``appliance-vm --image FILE --machine raspi3b``).

QEMU's ``raspi3b`` is a Raspberry Pi 3 Model B: its SoC's devices as the
image's own device tree describes them (``bcm2837-rpi-3-b.dtb``, read out
of the card's FAT partition), the card on the Pi's SD controller (the
"sdhost", which the initrd's ``bcm2835`` module drives: there is no virtio
anywhere on this machine, so a root found is a root found through the Pi's
own driver), the Pi's USB controller (dwc2) with QEMU's ``usb-net`` on it
as the box's network (its page reached through the forwarded port) and a
USB keyboard, whose Ctrl+Alt+Del is how the box is stopped cleanly: the Pi
has no power button, and systemd's ``ctrl-alt-del.target`` is a whole clean
shutdown; ``-no-reboot`` makes its final reset QEMU's exit.

What it cannot run is the Pi's GPU firmware: QEMU loads the kernel, the
initrd and the device tree itself, so ``config.txt`` is never read (its
``dtparam`` lines do not apply, the firmware's own changes to the device
tree are not made) and ``cmdline.txt`` is handed over as the firmware
would.  Nor the Wi-Fi chip, the I²C bus's devices (the panel), or the Pi's
speed: RAM is fixed at 1 GiB, the four cores are emulated (TCG).

The checks are those of ``--image`` on ``virt`` (image_check.py): nothing
secret in the image, first boot to serving with sshd silent, a clean
shutdown, the root grown to the card, host keys drawn, the box's state
kept, a second boot to serving and a clean shutdown; and, from the
console, that this was the Pi's machine, its SD driver and its card.

Standard library only: it runs with the host's ``python3``.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import image_check
from image_check import ImageError

MACHINE = "raspi3b"
VIRTIO_DEVICE = re.compile(r"\bvirtio\d+\b|\bvd[a-z]: |virtio-mmio [0-9a-f]+\.\S*: ")
NO_REBOOT_WATCHDOG = "systemd.watchdog_device=/dev/no-watchdog-on-qemu-raspi3b"
DTB = "bcm2837-rpi-3-b.dtb"
# raspi3b's SD card must be a power of two; image_check's card (8 GiB) is one.
CARD_BYTES = image_check.CARD_BYTES
assert CARD_BYTES & (CARD_BYTES - 1) == 0


class PiBoot(image_check.Boot):
    """One boot of the card under ``-M raspi3b``."""

    def __init__(self, card: Path, kernel: Path, initrd: Path, dtb: Path, append: str, workdir: Path, n: int):
        self.port, self.ssh_port = image_check.free_port(), image_check.free_port()
        self.console = workdir / f"raspi-console-{n}.log"
        self.qmp_path = workdir / f"raspi-qmp-{n}.sock"
        self.qmp_path.unlink(missing_ok=True)
        cmd = ["qemu-system-aarch64", "-machine", MACHINE, "-accel", "tcg,thread=multi",
               "-kernel", str(kernel), "-initrd", str(initrd), "-dtb", str(dtb), "-append", append,
               "-drive", f"file={card},if=sd,format=raw",
               # The first UART (the PL011) is the Bluetooth chip's on a Pi 3;
               # the console is the mini UART, ttyS1.
               "-serial", "null", "-serial", f"file:{self.console}",
               "-display", "none", "-monitor", "none", "-no-reboot",
               "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
               "-device", "usb-net,netdev=net0", "-device", "usb-kbd",
               # restrict=on: the box reaches nothing; only the forwarded ports come in.
               "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:{image_check.BOX_PORT},"
                          f"hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22"]
        self.log = open(workdir / f"raspi-qemu-{n}.log", "w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def press_power(self) -> None:
        """Ctrl+Alt+Del on the USB keyboard (systemd: a clean reboot, which
        ``-no-reboot`` turns into QEMU's exit)."""
        self.qmp({"execute": "send-key", "arguments": {
            "keys": [{"type": "qcode", "data": k} for k in ("ctrl", "alt", "delete")]}})

    def shut_down(self, wait: float = 600) -> bool:
        """Ctrl+Alt+Del, then QEMU's exit at the board's reset; if the
        reset does not end QEMU, the kernel's last words are enough: once
        the console says them, QEMU is stopped.  True if they were said."""
        if self.proc.poll() is None:
            self.press_power()
        end = time.monotonic() + wait
        said = None
        while self.proc.poll() is None and time.monotonic() < end:
            if said is None and any(word in self.text() for word in self.GOODBYE):
                said = time.monotonic()
            if said is not None and time.monotonic() > said + 10:
                break
            time.sleep(0.5)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
        return any(word in self.text() for word in self.GOODBYE)

    def text(self) -> str:
        return self.console.read_text(errors="replace") if self.console.exists() else ""


def the_pis_way(console: str) -> dict:
    """From a boot's console: the machine, the card's driver and device,
    the root's device, the network's; raises ImageError if it was not the
    Pi's machine, the Pi's SD driver, or a root on the card."""
    model = re.search(r"Machine model: (.+)", console)
    card = re.search(r"(mmcblk\d+): p1 p2", console)
    root = re.search(r"EXT4-fs \((\w+)\): mounted filesystem", console)
    host = re.search(r"(sdhost-bcm2835|sdhci-iproc|sdhci) (\S+)", console)
    net = re.search(r"(cdc_ether|cdc_subset|rndis_host) \S+ (usb\d+): register", console)
    seen = {"model": model and model.group(1).strip(), "card": card and card.group(1),
            "root": root and root.group(1), "sd_driver": host and f"{host.group(1)} {host.group(2).rstrip(':')}",
            "network": net and f"{net.group(1)} {net.group(2)}"}
    if not seen["model"] or "Raspberry Pi 3" not in seen["model"]:
        raise ImageError(f"not the Pi 3's device tree: machine model {seen['model']!r}")
    # A virtio device, not the word: the initrd's virtio modules (there for
    # virt) are named in every kernel warning's "Modules linked in" list.
    device = VIRTIO_DEVICE.search(console)
    if device:
        raise ImageError(f"a virtio device on the Pi's machine: {device.group(0)!r}")
    if not seen["card"] or not (seen["root"] or "").startswith(seen["card"] + "p"):
        raise ImageError(f"the root was not found on the SD card: card {seen['card']}, root {seen['root']}")
    return seen


def check(image: Path, workdir: Path, say) -> dict:
    """``--image FILE --machine raspi3b``: two boots on the Pi's machine;
    the ``image`` figures, or ImageError."""
    if not image.exists():
        raise ImageError(f"no image file {image}")
    card = workdir / "card.img"
    say(f"image: unpacking {image.name} onto an {CARD_BYTES // 2**30} GB card")
    image_check.unpack(image, card)
    layout = image_check.Card(card)
    before = image_check.ext4_bytes(card, layout.root["start"])
    problems = image_check.hygiene(card, layout.root["start"])
    if problems:
        raise ImageError("the image as built: " + "; ".join(problems))
    if DTB not in layout.dtbs:
        raise ImageError(f"no {DTB} on the boot partition (it has {layout.dtbs})")
    sd = image_check.sd_modules(card, layout, say)
    kernel, initrd = layout.extract(workdir)
    dtb = workdir / DTB
    dtb.write_bytes(image_check.fat_read(card, layout.boot["start"], DTB))
    # cmdline.txt as the firmware hands it over (its consoles are the Pi's),
    # and one word for QEMU's model of the Pi's power manager: it resets the
    # board the moment the watchdog is armed (a real Pi counts its timeout
    # down), and systemd arms it for the last steps of every reboot
    # (RebootWatchdogSec, 10 min): the board would reset before the root is
    # unmounted.  Pointing systemd at a watchdog that does not exist keeps
    # the Pi's own restart (bcm2835_wdt) for the end.
    append = layout.cmdline + " " + NO_REBOOT_WATCHDOG
    result = {"machine": MACHINE, "kernel": layout.kernel_name, "dtb": DTB, "cmdline": append, "sd_modules": sd}

    first = PiBoot(card, kernel, initrd, dtb, append, workdir, 1)
    say(f"image: first boot (QEMU {MACHINE}: the Pi 3's device tree, the card on its SD controller, "
        f"usb-net), box on http://127.0.0.1:{first.port}/")
    try:
        result["first_boot_to_serving_s"] = round(first.wait_serving(), 1)
        say(f"image: first boot to serving: {result['first_boot_to_serving_s']} s")
        result["seen"] = the_pis_way(first.text())
        say(f"image: the Pi's way: {result['seen']}")
        banner = image_check.ssh_banner(first.ssh_port)
        if banner.startswith(b"SSH-"):
            raise ImageError(f"sshd answers on a fresh card: {banner!r}")
    finally:
        first.clean = first.shut_down(wait=600)
    say(f"image: first boot stopped ({'clean shutdown' if first.clean else 'NOT clean: killed'})")
    image_check.stopped_cleanly(first, card, "first")
    result["root_mib"] = image_check.after_first_boot(card, before)

    second = PiBoot(card, kernel, initrd, dtb, append, workdir, 2)
    say("image: second boot")
    try:
        result["boot_to_serving_s"] = round(second.wait_serving(), 1)
        say(f"image: boot to serving: {result['boot_to_serving_s']} s")
        the_pis_way(second.text())
    finally:
        second.clean = second.shut_down(wait=600)
    image_check.stopped_cleanly(second, card, "second")
    return result
