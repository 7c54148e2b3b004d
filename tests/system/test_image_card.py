"""The flashed image's card, without building Debian: systemd/image/build's
card maker (MBR, FAT boot partition, ext4 root, as files and dd) read back by
tests/vm/image_check.py (the partition table, config.txt's kernel and initrd,
cmdline.txt, and the hygiene check that no card carries a password, SSH host
keys, a machine id or the box's state).  Two cards that differ only in one
planted secret: the check must tell them apart.  The real image boots in
``tests/vm/appliance-vm --image FILE``."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("mkfs.vfat", "mcopy", "mdir", "mkfs.ext4", "debugfs", "sfdisk")
pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                reason="needs dosfstools, mtools, e2fsprogs, fdisk")

sys.path.insert(0, str(REPO / "tests" / "vm"))
import image_check  # noqa: E402


def load_build():
    loader = importlib.machinery.SourceFileLoader("image_build", str(REPO / "systemd" / "image" / "build"))
    spec = importlib.util.spec_from_loader("image_build", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def fake_root(top: Path, *, password: str = "!", host_key: bool = False, state: bool = False) -> Path:
    root = top / "root"
    (root / "etc/ssh").mkdir(parents=True)
    (root / "etc/ssh/sshd_config").write_text("# sshd\n")
    if host_key:
        (root / "etc/ssh/ssh_host_ed25519_key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (root / "etc/shadow").write_text(f"root:{password}:19000:0:99999:7:::\ncompanion:!:19000::::::\n")
    (root / "etc/machine-id").write_text("")
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    (wants / "companion.service").symlink_to("/etc/systemd/system/companion.service")
    (root / "var/lib").mkdir(parents=True)
    if state:
        (root / "var/lib/companion").mkdir()
        (root / "var/lib/companion/wifi-password").write_text("correct horse\n")
    firmware = root / "boot/firmware"
    firmware.mkdir(parents=True)
    (firmware / "config.txt").write_text("arm_64bit=1\nkernel=vmlinuz-6.1.0-99-arm64\n"
                                         "initramfs initrd.img-6.1.0-99-arm64 followkernel\n")
    (firmware / "cmdline.txt").write_text("console=tty0 console=ttyS1,115200 root=LABEL=RASPIROOT rw rootwait\n")
    (firmware / "vmlinuz-6.1.0-99-arm64").write_bytes(b"KERNEL" * 100)
    (firmware / "initrd.img-6.1.0-99-arm64").write_bytes(b"INITRD" * 100)
    (firmware / "bcm2837-rpi-3-b.dtb").write_bytes(b"\xd0\x0d\xfe\xed")
    return root


def card(tmp_path: Path, **secrets) -> Path:
    build = load_build()
    work = tmp_path / "work"
    work.mkdir()
    root = fake_root(tmp_path, **secrets)
    return build.make_card(root, work)


def test_the_card_reads_back_as_the_pi_firmware_would(tmp_path):
    img = card(tmp_path)
    layout = image_check.Card(img)
    assert layout.boot["boot"] and layout.boot["type"] == 0x0C and layout.root["type"] == 0x83
    assert layout.boot["start"] % 2**20 == 0 and layout.root["start"] == layout.boot["start"] + layout.boot["size"]
    assert layout.kernel_name == "vmlinuz-6.1.0-99-arm64"
    assert layout.dtbs == ["bcm2837-rpi-3-b.dtb"]
    kernel, initrd = layout.extract(tmp_path)
    assert kernel.read_bytes() == b"KERNEL" * 100 and initrd.read_bytes() == b"INITRD" * 100
    append = layout.append()
    assert "root=LABEL=RASPIROOT" in append and append.endswith("console=ttyAMA0")
    assert "ttyS1" not in append
    # The root's ext4 is as large as its partition, which ends the image.
    assert image_check.ext4_bytes(img, layout.root["start"]) == layout.root["size"]
    assert img.stat().st_size == layout.root["start"] + layout.root["size"]
    # The boot partition's files live on the FAT partition, not in the root's mount point.
    assert image_check.ext4_ls(img, layout.root["start"], "/boot/firmware") == []


def test_a_clean_card_passes_the_hygiene_check(tmp_path):
    img = card(tmp_path)
    assert image_check.hygiene(img, image_check.Card(img).root["start"]) == []


@pytest.mark.parametrize("secret, words", [
    ({"password": "$y$j9T$abc$def"}, "has a password"),
    ({"host_key": True}, "SSH host keys"),
    ({"state": True}, "the box's state"),
])
def test_a_card_with_a_secret_fails_the_hygiene_check(tmp_path, secret, words):
    img = card(tmp_path, **secret)
    problems = image_check.hygiene(img, image_check.Card(img).root["start"])
    assert len(problems) == 1 and words in problems[0], problems


def test_a_card_without_a_partition_table_is_refused(tmp_path):
    blank = tmp_path / "blank.img"
    blank.write_bytes(b"\0" * 4096)
    with pytest.raises(image_check.ImageError, match="no MBR"):
        image_check.Card(blank)
