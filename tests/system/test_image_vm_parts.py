"""The parts of ``appliance-vm --image``'s first-boot cuts and memory run
that need no VM: the console watcher that places a cut, the host-key check
read from a card's bytes, and the memory sampler (run here, on this
machine's /proc, as the guest runs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "vm"))
import first_boot_cuts  # noqa: E402
import image_check  # noqa: E402
import memory_check  # noqa: E402

# As the image's console shows them (virt's serial port, 80 columns):
# systemd's status lines coloured and cut in their middle.
FIRST_BOOT = [
    "[   12.0] EXT4-fs (vda2): mounted filesystem with ordered data mode.",
    "         Starting \x1b[0;1;39mcompanion-first-b\u2026own to the card, SSH host keys)...",
    "[   20.1] EXT4-fs (vda2): resizing filesystem from 271616 to 2096128 blocks",
    "[   31.7] EXT4-fs (vda2): resized filesystem to 2096128",
    "[   31.9] companion-first-boot: drawing the SSH host keys",
    "[   38.4] companion-first-boot: done\r",
]


def test_the_console_watcher_follows_a_first_boot_line_by_line(tmp_path):
    path = tmp_path / "console.log"
    path.write_text("")
    console = first_boot_cuts.Console(path)
    assert console.phase() == "before"
    phases = []
    with open(path, "a") as f:
        for line in FIRST_BOOT:
            f.write(line[:20])                  # half a line: not read yet
            f.flush()
            before = console.phase()
            f.write(line[20:] + "\n")
            f.flush()
            phases.append((before, console.phase()))
    assert [after for _, after in phases] == ["before", "start", "growth", "grown", "keys", "after"]
    assert all(a == b for (a, _), (_, b) in zip(phases[1:], phases))   # nothing seen from half a line
    assert list(console.seen) == ["start", "growing", "grown", "drawing", "finished"]


def test_the_keys_are_not_taken_as_drawn_when_the_growth_ends(tmp_path):
    """The cut aimed at the keys waits for the unit's own word that it is
    drawing them: the growth's end is not it (a cut there finds no key
    being written)."""
    path = tmp_path / "console.log"
    path.write_text("\n".join(FIRST_BOOT[:4]) + "\n")
    console = first_boot_cuts.Console(path)
    assert console.phase() == "grown" and "drawing" not in console.seen


def test_systemd_finished_line_also_ends_the_unit(tmp_path):
    path = tmp_path / "console.log"
    path.write_text(FIRST_BOOT[1] + "\n[\x1b[0;32m  OK  \x1b[0m] Finished \x1b[0;1;39mcompanion-first-b\u2026own "
                    "to the card, SSH host keys).\n")
    assert first_boot_cuts.Console(path).phase() == "after"


def test_a_failed_first_boot_unit_is_seen(tmp_path):
    path = tmp_path / "console.log"
    path.write_text(FIRST_BOOT[1] + "\n[FAILED] Failed to start companion-first-boot.service - companion: "
                    "first boot of a new card (root grown to the card, SSH host keys).\n")
    assert "failed" in first_boot_cuts.Console(path).poll()


needs_tools = pytest.mark.skipif(any(shutil.which(t) is None for t in ("mkfs.ext4", "debugfs", "ssh-keygen")),
                                 reason="needs e2fsprogs and ssh-keygen")


def card_with_keys(tmp_path: Path, damage=None) -> Path:
    root = tmp_path / "root"
    ssh = root / "etc/ssh"
    ssh.mkdir(parents=True)
    for kind in ("ed25519", "ecdsa"):
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "root@companion",
                        "-f", str(ssh / f"ssh_host_{kind}_key")], check=True)
    if damage:
        damage(ssh)
    card = tmp_path / "root.ext4"
    subprocess.run(["truncate", "-s", "16M", str(card)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-d", str(root), str(card)], check=True)
    return card


@needs_tools
def test_whole_host_keys_read_back_from_the_card(tmp_path):
    card = card_with_keys(tmp_path)
    assert first_boot_cuts.verify_keys(card, 0, tmp_path) == {"types": ["ecdsa-sha2-nistp256", "ssh-ed25519"]}


@needs_tools
@pytest.mark.parametrize("damage, words", [
    (lambda ssh: (ssh / "ssh_host_ed25519_key").write_bytes(b""), "ssh_host_ed25519_key is empty"),
    (lambda ssh: (ssh / "ssh_host_ecdsa_key.pub").write_bytes(b""), "ssh_host_ecdsa_key.pub is empty"),
    (lambda ssh: (ssh / "ssh_host_ecdsa_key").write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"\0" * 200),
     "does not read back"),
    (lambda ssh: (ssh / "ssh_host_ed25519_key.pub").write_bytes((ssh / "ssh_host_ecdsa_key.pub").read_bytes()),
     "ssh_host_ed25519_key does not read back as its .pub"),
])
def test_an_empty_cut_short_or_mismatched_host_key_is_caught(tmp_path, damage, words):
    card = card_with_keys(tmp_path, damage)
    with pytest.raises(image_check.ImageError, match=words):
        first_boot_cuts.verify_keys(card, 0, tmp_path)


@pytest.mark.skipif(not Path("/proc/meminfo").exists() or shutil.which("sh") is None, reason="needs /proc and sh")
def test_the_sampler_records_available_memory_and_the_units_resident_memory(tmp_path):
    """The guest's sampler, run here on this machine's /proc: a fake
    cgroup listing this test's process (and a process gone already)."""
    procs = tmp_path / "cgroup.procs"
    procs.write_text(f"{os.getpid()}\n999999999\n")
    log = tmp_path / "memory.log"
    script = tmp_path / "sampler.sh"
    script.write_text(memory_check.sampler(str(procs), str(log)))
    script.chmod(0o755)
    proc = subprocess.Popen([str(script)], stderr=subprocess.DEVNULL)
    try:
        with open(log, "a") as f:
            f.write("m phones\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and log.read_text().count("\ns ") < 2:
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    phases = memory_check.samples(log.read_text())
    assert phases["phones"], log.read_text()
    rss_kb = int(next(line for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines()
                      if line.startswith("VmRSS:")).split()[1])
    for uptime, available, rss in phases["phones"]:
        assert uptime > 0 and available > 0
        assert 0.5 * rss_kb < rss < 2 * rss_kb          # this process's own, the gone one counted as nothing


def test_samples_are_split_by_the_hosts_marks():
    text = "s 1.0 500000 40000\nm phones\ns 2.0 400000 50000\ns 2.5 390000 52000\nm update\ns 3.0 200000 45000\n" \
           "s 3.5 bad line\n"
    phases = memory_check.samples(text)
    assert phases == {"before": [(1.0, 500000, 40000)], "phones": [(2.0, 400000, 50000), (2.5, 390000, 52000)],
                      "update": [(3.0, 200000, 45000)]}


@pytest.mark.skipif(not shutil.which("mkfs.ext4") or not shutil.which("debugfs"), reason="e2fsprogs")
def test_a_root_left_mounted_is_told_from_one_unmounted_by_its_superblock(tmp_path):
    card = tmp_path / "root.img"
    with open(card, "wb") as f:
        f.truncate(16 * 2**20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(card)], check=True)
    assert image_check.unmounted_cleanly(card, 0)
    # What a board reset leaves: the journal marked for replay (debugfs sets
    # the feature as the kernel does when it mounts the root read-write).
    subprocess.run(["debugfs", "-w", "-R", "feature needs_recovery", str(card)], check=True, capture_output=True)
    assert not image_check.unmounted_cleanly(card, 0)
    subprocess.run(["debugfs", "-w", "-R", "feature -needs_recovery", str(card)], check=True, capture_output=True)
    subprocess.run(["debugfs", "-w", "-R", "ssv state 0", str(card)], check=True, capture_output=True)
    assert not image_check.unmounted_cleanly(card, 0)          # not cleanly unmounted (state 0)


def test_the_pis_way_is_read_off_its_console_and_a_virtio_device_is_not_the_pis():
    import raspi_check
    console = "\n".join([
        "[    0.000000] Machine model: Raspberry Pi 3 Model B",
        "[    9.100000] sdhost-bcm2835 3f202000.mmc: loaded - DMA enabled (>1)",
        "[    9.500000] mmcblk0: mmc0:aaaa QEMU! 8.00 GiB",
        "[    9.600000]  mmcblk0: p1 p2",
        "[   16.000000] EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode.",
        "[  210.600000] cdc_ether 1-1.1:1.0 usb0: register 'cdc_ether' at usb-3f980000.usb-1.1, CDC Ethernet Device",
        # A warning's module list names the initrd's virtio modules: not a device.
        "[  305.600756] Modules linked in: ext4 crc16 mbcache jbd2 virtio_blk virtio_mmio virtio_pci sd_mod",
    ])
    seen = raspi_check.the_pis_way(console)
    assert seen == {"model": "Raspberry Pi 3 Model B", "card": "mmcblk0", "root": "mmcblk0p2",
                    "sd_driver": "sdhost-bcm2835 3f202000.mmc", "network": "cdc_ether usb0"}
    with pytest.raises(image_check.ImageError, match="virtio device"):
        raspi_check.the_pis_way(console + "\n[    2.0] virtio_blk virtio0: [vda] 16777216 512-byte logical blocks")
    with pytest.raises(image_check.ImageError, match="Pi 3"):
        raspi_check.the_pis_way(console.replace("Raspberry Pi 3 Model B", "linux,dummy-virt"))
