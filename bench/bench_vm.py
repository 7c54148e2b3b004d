"""The appliance on a real operating system (issue 22): ``tests/vm/appliance-vm``.

* amd64 with 100 power cuts (QEMU SIGKILLed while a client posts actions)
  on the SD-card disk model (``tests/vm/lossy_disk.py``: every unflushed
  write lost, or a random subset kept, some torn, at each cut;
  ``"disk_model"``), four cuts in five aimed by the card at a moment it
  holds unflushed writes (``"cuts_with_unflushed"``), each cut's card
  checked from the host before any boot (``"host_check"``), every fifth
  cycle's crash states replayed on the host (``"replay"``), the store
  checked before the companion opens it (``"cuts_before_open_checked"``):
  acknowledged actions lost, store integrity, the time a cut costs; then
  signed updates (``--update``): refusals, a rollback, a rollback after
  acknowledged actions, 10 cuts during updates aimed at each of their
  steps in turn (``COMPANION_VM_UPDATE_CUTS``; ``"phases_cut"``) with a
  phone posting all through (``"acked_during_update"``), and the good
  update's time;
* arm64 (qemu-system-aarch64, ``virt``, TCG: emulated, so many times slower
  than a Pi): install with the ``pi`` extra and boot to serving.

Each boot figure is beside its baseline from the same boot: the moment the
test image's bare command runner (a few lines of Python started by systemd
with no ordering of its own) answered.  Both machines are emulated (TCG):
the figures say how the box behaves, not how fast a Pi is.

The cuts and the updates are two VMs side by side (each installs afresh):
one after the other they took most of three hours on two cores, the cuts
~75 s each with their reboot and the check before opening.

Slow (amd64 ~65 min on a 2-core machine in 2026-11, the updates' VM done
in the first 25; arm64 after it, an hour more with the image's first build):
``python -m bench --vm``; needs root, QEMU, mmdebstrap/debootstrap.
``COMPANION_VM_CUTS`` changes the number of cuts; ``COMPANION_VM_ARCHES``
the architectures (default ``amd64 arm64``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "tests" / "vm" / "appliance-vm"
RESULTS = Path(__file__).resolve().with_name("results")


class Harness:
    """One ``appliance-vm`` run in the background; :meth:`summary` waits for its JSON.

    Its whole output is kept in ``bench/results/vm-<label>.log``: an hour's
    run that fails at its 81st cut must leave more than its last line."""

    def __init__(self, label: str, *args: str):
        RESULTS.mkdir(exist_ok=True)
        self.log = open(RESULTS / f"vm-{label}.log", "w+")
        self.proc = subprocess.Popen([sys.executable, str(HARNESS), *args], stdout=self.log,
                                     stderr=subprocess.STDOUT, text=True)

    def wait_for(self, words: str) -> None:
        """Until the run's output says ``words`` (or it ends)."""
        while self.proc.poll() is None:
            self.log.seek(0)
            if words in self.log.read():
                return
            time.sleep(2)

    def summary(self) -> dict:
        code = self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        lines = [line for line in out.splitlines() if line.strip()]
        try:
            summary = json.loads(lines[-1])
        except (IndexError, ValueError):
            return {"error": f"exit {code}: {out[-800:]}", "log": str(self.log.name)}
        summary["exit"] = code
        return summary


def harness(label: str, *args: str) -> dict:
    return Harness(label, *args).summary()


def run(quick: bool = False) -> dict:
    if os.geteuid() != 0:
        return {"skipped": "needs root (mmdebstrap, chroot)"}
    cuts = "3" if quick else os.environ.get("COMPANION_VM_CUTS", "100")
    update_cuts = "3" if quick else os.environ.get("COMPANION_VM_UPDATE_CUTS", "10")
    arches = os.environ.get("COMPANION_VM_ARCHES", "amd64 arm64").split()
    out = {}
    for arch in arches:
        if arch != "amd64":
            out[arch] = harness(arch, "--arch", arch)
            continue
        cutting = Harness(arch, "--arch", arch, "--power-cuts", cuts)
        # The second VM starts once the first has built the shared image and
        # wheelhouse (both would build them into the same cache folder).
        cutting.wait_for("vm: run folder")
        updating = Harness(arch + "-update", "--arch", arch, "--update-only", "--update-cuts", update_cuts)
        out[arch] = cutting.summary()
        out[arch + "-update"] = updating.summary()
    return out
