"""Run every benchmark, print a table and write ``bench/results/latest.json``.

    .venv/bin/python -m bench [--quick] [--only NAME ...] [--pi]

Each figure is printed beside a baseline measured in the same run on the same
machine (a bare gpiozero callback, a bare streaming endpoint, a bare JSON
parse...), so numbers from different machines can be compared by their ratio.
Targets are printed, never asserted: the tests do not time anything.
A run that fails (a suite that raised, or one whose own run reports an
error, a non-zero exit or ``"ok": false``, as the VM runs do) is named at
the end and the command exits 1; a suite skipped for want of root, a
cgroup or PostgreSQL is not a failure.

``--pi`` adds the Pi-class figures (``bench_pi``): the companion in a CPU
cgroup at 1/4 and 1/8 of one core, each figure beside its unthrottled run
(needs root; prints "skipped: no cgroup" otherwise).  Alone, ``--pi`` runs
only that suite; with ``--only`` it runs after the named ones.

``--vm`` adds the appliance in a VM (``bench_vm``, issue 22): 100 power cuts
under the file system on amd64 and the arm64 boot (an hour or more; needs
root and QEMU).  Like ``--pi``, alone it runs only that suite.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path

SUITES = ["bench_core", "bench_box", "bench_push", "bench_solver", "bench_idle", "bench_costs",
          "bench_i2c",
          "bench_starve",   # issues 13, 21: a phone and the buttons under 20 addresses x 50 hostile connections
          "bench_history",  # issue 21: a history listing at 10 and at 10,000 stored games
          "bench_hub",      # issue 16: the club hub (skipped without PostgreSQL)
          "bench_panel",    # panel care: lit pixel-hours of an evening and an idle day, before and after
          "bench_backup"]   # one backup file of 1,000 games: write, again, check, restore


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return {"python": platform.python_version(), "machine": platform.machine(), "cpu": cpu,
            "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def failures(results: dict, where: str = "") -> list[str]:
    """Where the results say a run failed: an ``error``, a non-zero ``exit``,
    ``"ok": false``, at any depth."""
    found = []
    for key, value in results.items():
        here = f"{where}{key}"
        if key == "error" and value:
            found.append(f"{where.rstrip('.') or key}: {str(value)[:300]}")
        elif key == "exit" and isinstance(value, int) and value != 0:
            found.append(f"{where.rstrip('.')}: exit {value}")
        elif key == "ok" and value is False:
            found.append(f"{where.rstrip('.')}: not ok")
        elif isinstance(value, dict):
            found += failures(value, here + ".")
    return found


def main(argv=None, results_dir: Path | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench")
    p.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    p.add_argument("--only", nargs="*", help="suites to run (default: all)")
    p.add_argument("--pi", action="store_true", help="Pi-class figures: the companion at 1/4 and 1/8 of a core")
    p.add_argument("--vm", action="store_true", help="the appliance in a VM: 100 power cuts, the arm64 boot (slow)")
    args = p.parse_args(argv)
    results = {"machine": machine()}
    suites = list(args.only or ([] if args.pi or args.vm else SUITES))
    if args.pi:
        suites.append("bench_pi")                 # the Pi-class mode (bench/bench_pi.py)
        suites.append("bench_clock")              # the turn clock's handover at 1/8 of a core
    if args.vm:
        suites.append("bench_vm")                 # the appliance in a VM (bench/bench_vm.py)
    for name in suites:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            results[name] = {"skipped": str(exc)}
            continue
        t0 = time.perf_counter()
        try:
            kwargs = {"quick": True} if args.quick and "quick" in module.run.__code__.co_varnames else {}
            results[name] = module.run(**kwargs)
        except Exception as exc:  # a broken suite must not hide the others
            traceback.print_exc()
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        results[name]["_seconds"] = round(time.perf_counter() - t0, 2)
    out = results_dir or Path(__file__).with_name("results")
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"machine: {results['machine']}")
    for suite, figures in results.items():
        if suite == "machine":
            continue
        print(f"\n[{suite}]")
        flat = _flatten(figures)
        width = max((len(k) for k in flat), default=10)
        for key, value in flat.items():
            print(f"  {key:<{width}}  {fmt(value)}")
    print(f"\nwritten: {out / 'latest.json'}")
    failed = failures({k: v for k, v in results.items() if k != "machine"})
    for line in failed:
        print(f"FAILED: {line}")
    return 1 if failed else 0


def _flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}." if isinstance(v, dict) else f"{prefix}{k}"))
            if not isinstance(v, dict):
                out[f"{prefix}{k}"] = v
    return out


if __name__ == "__main__":
    sys.exit(main())
