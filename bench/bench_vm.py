"""The appliance on a real operating system (issue 22): ``tests/vm/appliance-vm``.

* amd64 with 100 power cuts (QEMU SIGKILLed while a client posts actions)
  on the SD-card disk model (``tests/vm/lossy_disk.py``: every unflushed
  write lost, or a random subset kept, at each cut; ``"disk_model"``), the
  store checked before the companion opens it (``"cuts_before_open_checked"``):
  acknowledged actions lost, store integrity, the time a cut costs; then
  signed updates (``--update``): refusals, a rollback, 10 cuts during
  updates (``COMPANION_VM_UPDATE_CUTS``) and the good update's time;
* arm64 (qemu-system-aarch64, ``virt``, TCG: emulated, so many times slower
  than a Pi): install with the ``pi`` extra and boot to serving.

Each boot figure is beside its baseline from the same boot: the moment the
test image's bare command runner (a few lines of Python started by systemd
with no ordering of its own) answered.  Both machines are emulated (TCG):
the figures say how the box behaves, not how fast a Pi is.

Slow (amd64 ~3.5 h on a quiet 2-core machine: ~100 s a cut with its reboot
and the check before opening, then the updates; arm64 longer):
``python -m bench --vm``; needs root, QEMU, mmdebstrap/debootstrap.
``COMPANION_VM_CUTS`` changes the number of cuts; ``COMPANION_VM_ARCHES``
the architectures (default ``amd64 arm64``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "tests" / "vm" / "appliance-vm"


def harness(*args: str) -> dict:
    run = subprocess.run([sys.executable, str(HARNESS), *args], capture_output=True, text=True)
    lines = [l for l in run.stdout.splitlines() if l.strip()]
    try:
        summary = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"error": f"exit {run.returncode}: {(run.stdout + run.stderr)[-800:]}"}
    summary["exit"] = run.returncode
    return summary


def run(quick: bool = False) -> dict:
    if os.geteuid() != 0:
        return {"skipped": "needs root (mmdebstrap, chroot)"}
    cuts = "3" if quick else os.environ.get("COMPANION_VM_CUTS", "100")
    update_cuts = "3" if quick else os.environ.get("COMPANION_VM_UPDATE_CUTS", "10")
    arches = os.environ.get("COMPANION_VM_ARCHES", "amd64 arm64").split()
    out = {}
    for arch in arches:
        args = ["--arch", arch]
        if arch == "amd64":
            args += ["--power-cuts", cuts, "--update", "--update-cuts", update_cuts]
        out[arch] = harness(*args)
    return out
