"""A CPU cgroup that makes this machine run a process at a Raspberry Pi's pace.

A Pi Zero 2 W runs single-threaded Python roughly eight times slower than
one core of a laptop, a Pi 4 roughly four times.  The Linux CFS bandwidth
controller gives a group of processes ``quota`` microseconds of CPU per
``period``: 1250 µs every 10 ms is 1/8 of one core.  The process under test
is put in the group from ``preexec_fn`` (between fork and exec, so even its
imports are throttled) and pinned to one CPU; the load generators (this
process: the phones, the clock) stay outside the group, pinned to another
CPU, at full speed.

cgroup v1 (``/sys/fs/cgroup/cpu``, mounted if it is not) or cgroup v2
(``cpu.max``); root is needed either way.  :func:`available` says why not
when it cannot work, and the benchmark prints that as a "skipped" line.
The 10 ms period adds up to ~9 ms of jitter to any wall-clock figure.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

PERIOD_US = 10_000
_ALLOWED = sorted(os.sched_getaffinity(0))     # before pin_generators() narrows this process
V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")


def _v1_ready() -> bool:
    if (V1 / "cpu.cfs_quota_us").exists():
        return True
    if (V2 / "cgroup.controllers").exists():
        return False                    # a v2 hierarchy: use cpu.max instead
    try:                                # v1 without the cpu controller mounted
        V1.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "cgroup", "-o", "cpu", "none", str(V1)],
                       check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return (V1 / "cpu.cfs_quota_us").exists()


def available() -> str | None:
    """None when a throttled group can be made here, else why not."""
    if os.geteuid() != 0:
        return "skipped: no cgroup (needs root)"
    if _v1_ready():
        return None
    controllers = V2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return None
    return "skipped: no cgroup (neither v1 cpu nor v2 cpu.max is available)"


def cpus() -> tuple[int | None, int | None]:
    """(the CPU of the process under test, the CPU of the load generators);
    None when there is a single CPU (no pinning then)."""
    allowed = _ALLOWED
    if len(allowed) < 2:
        return None, None
    return allowed[-1], allowed[0]


class CpuLimit:
    """One group limited to ``fraction`` of a core (None: no limit, but the
    same pinning, for the baseline run).  Use as a context manager; pass
    :meth:`enter` as ``preexec_fn``."""

    def __init__(self, name: str, fraction: float | None, cpu: int | None = None):
        self.fraction = fraction
        self.cpu = cpus()[0] if cpu is None else cpu
        self.path: Path | None = None
        if fraction is None:
            return
        quota = max(1000, int(PERIOD_US * fraction))       # the kernel refuses under 1 ms
        if _v1_ready():
            self.path = V1 / f"companion-bench-{os.getpid()}-{name}"
            self.path.mkdir(exist_ok=True)
            (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            control = V2 / "cgroup.subtree_control"
            if "cpu" not in control.read_text().split():
                control.write_text("+cpu")
            self.path = V2 / f"companion-bench-{os.getpid()}-{name}"
            self.path.mkdir(exist_ok=True)
            (self.path / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        self._procs = str(self.path / "cgroup.procs")

    def enter(self) -> None:
        """Runs in the child between fork and exec: join the group, take the CPU."""
        if self.path is not None:
            with open(self._procs, "w") as f:
                f.write(str(os.getpid()))
        if self.cpu is not None:
            os.sched_setaffinity(0, {self.cpu})

    def __enter__(self) -> "CpuLimit":
        return self

    def __exit__(self, *exc) -> None:
        if self.path is None:
            return
        for _ in range(50):                 # a process just ended may still be leaving it
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def pin_generators() -> None:
    """Pin this process (the load generators) away from the throttled CPU."""
    _, cpu = cpus()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
