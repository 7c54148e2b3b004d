"""The first boot of a card (systemd/image/first-boot), run on a folder.

The script grows the root file system (growpart and resize2fs, played here
by stand-ins on ``PATH``) and draws the SSH host keys with the real
``ssh-keygen``; then it marks itself done.  A power cut can come at any
moment: the keys must be on the card before the mark (a card cut before
the mark runs it again), and a key cut short then — empty, torn, its public
half missing — must be drawn again, not taken for a key for ever.  The real
boot of an image: ``tests/vm/appliance-vm --image FILE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "systemd" / "image" / "first-boot"
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")


@pytest.fixture
def card(tmp_path):
    """A system folder as the image leaves it, and stand-ins for the tools
    that touch the real card; each call, and every ``sync``, goes to a log."""
    root = tmp_path / "root"
    (root / "etc/ssh").mkdir(parents=True)
    block = root / "sys/class/block"
    (root / "sys/devices/vda/vda2").mkdir(parents=True)
    (root / "sys/devices/vda/vda2/partition").write_text("2\n")
    block.mkdir(parents=True)
    (block / "vda2").symlink_to(root / "sys/devices/vda/vda2")
    tools = tmp_path / "bin"
    tools.mkdir()
    log = tmp_path / "calls.log"
    stand_ins = {
        "findmnt": "echo /dev/vda2",
        "growpart": "echo 'NOCHANGE: partition 2 is size 100'; exit 1",
        "resize2fs": "exit 0",
        # What a sync means here: everything written so far is on the card.
        "sync": f"ls -1A {root}/etc/ssh {root}/var/lib/companion-image 2>/dev/null | tr '\\n' ' ' >> {log}; "
                f"echo >> {log}",
    }
    for name, body in stand_ins.items():
        path = tools / name
        path.write_text(f"#!/bin/sh\necho \"{name} $*\" >> {log}\n{body}\n")
        path.chmod(0o755)
    return root, tools, log


def first_boot(card):
    root, tools, _log = card
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    return subprocess.run(["sh", str(SCRIPT), str(root)], env=env, capture_output=True, text=True, timeout=300)


def host_keys(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "etc/ssh").glob("ssh_host_*"))}


def test_the_first_boot_draws_the_host_keys_and_marks_itself_done(card):
    root, _tools, log = card
    done = first_boot(card)
    assert done.returncode == 0, done.stderr
    keys = host_keys(root)
    assert {"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"} <= keys.keys()
    assert all(keys.values())
    assert (root / "var/lib/companion-image/first-boot-done").read_text().strip()
    assert sorted(p.name for p in (root / "var/lib/companion-image").iterdir()) == ["first-boot-done"]


def test_the_keys_are_on_the_card_before_the_mark_and_the_mark_is_written_whole(card):
    root, _tools, log = card
    assert first_boot(card).returncode == 0
    lines = log.read_text().splitlines()
    syncs = [i for i, line in enumerate(lines) if line.startswith("sync")]
    # What each sync found on the card: the keys at the first, then the mark's
    # bytes under their temporary name, then the mark under its own name.
    seen = [set(lines[i + 1].split()) for i in syncs]
    assert len(seen) == 3, lines
    assert "ssh_host_ed25519_key" in seen[0] and not {"first-boot-done", ".first-boot-done.tmp"} & seen[0]
    assert ".first-boot-done.tmp" in seen[1] and "first-boot-done" not in seen[1]
    assert "first-boot-done" in seen[2] and ".first-boot-done.tmp" not in seen[2]


@pytest.mark.parametrize("cut", ["empty key", "no public half", "torn key", "empty public half"])
def test_a_key_cut_short_by_a_power_cut_is_drawn_again_at_the_next_boot(card, cut):
    """The cut came after the keys were begun and before the mark: the
    next boot runs the script again and draws the broken key anew."""
    root, _tools, _log = card
    assert first_boot(card).returncode == 0
    (root / "var/lib/companion-image/first-boot-done").unlink()       # the mark never reached the card
    key = root / "etc/ssh/ssh_host_ed25519_key"
    others = {k: v for k, v in host_keys(root).items() if "ed25519" not in k}
    if cut == "empty key":
        key.write_bytes(b"")
    elif cut == "no public half":
        key.with_name(key.name + ".pub").unlink()
    elif cut == "torn key":
        key.write_bytes(key.read_bytes()[:40])
    else:
        key.with_name(key.name + ".pub").write_bytes(b"")
    done = first_boot(card)
    assert done.returncode == 0, done.stderr
    assert "not whole: drawn again" in done.stdout
    check = subprocess.run(["ssh-keygen", "-l", "-f", str(key)], capture_output=True, text=True)
    assert check.returncode == 0 and "ED25519" in check.stdout
    assert key.with_name(key.name + ".pub").stat().st_size > 0
    assert {k: v for k, v in host_keys(root).items() if "ed25519" not in k} == others   # whole keys stay


def test_whole_keys_are_never_drawn_again(card):
    root, _tools, _log = card
    assert first_boot(card).returncode == 0
    before = host_keys(root)
    (root / "var/lib/companion-image/first-boot-done").unlink()
    done = first_boot(card)
    assert done.returncode == 0 and "drawn again" not in done.stdout
    assert host_keys(root) == before
