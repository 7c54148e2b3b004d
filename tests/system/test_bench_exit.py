"""``python -m bench`` says when a run failed: its exit status is 1."""

from __future__ import annotations

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import bench.__main__ as bench_main  # noqa: E402


def fake_suite(monkeypatch, name: str, run) -> None:
    module = types.ModuleType(f"bench.{name}")
    module.run = run
    monkeypatch.setitem(sys.modules, f"bench.{name}", module)


def test_a_run_that_fails_exits_non_zero(monkeypatch, tmp_path, capsys):
    fake_suite(monkeypatch, "bench_fine", lambda: {"median_ms": 1.0, "skipped_part": {"skipped": "no root"}})
    assert bench_main.main(["--only", "bench_fine"], results_dir=tmp_path) == 0

    def broken():
        raise RuntimeError("the benchmark broke")

    fake_suite(monkeypatch, "bench_broken", broken)
    assert bench_main.main(["--only", "bench_fine", "bench_broken"], results_dir=tmp_path) == 1
    assert "FAILED: bench_broken: RuntimeError: the benchmark broke" in capsys.readouterr().out


def test_a_vm_run_that_reports_a_failure_fails_the_bench(monkeypatch, tmp_path, capsys):
    """The VM's harness runs in the background: its summary says ok false
    and exit 1 (a lost action, a host check that failed...)."""
    fake_suite(monkeypatch, "bench_vmish", lambda: {"amd64": {"ok": False, "exit": 1, "lost": 1},
                                                    "arm64": {"ok": True, "exit": 0}})
    assert bench_main.main(["--only", "bench_vmish"], results_dir=tmp_path) == 1
    out = capsys.readouterr().out
    assert "FAILED: bench_vmish.amd64: exit 1" in out and "arm64" not in out.split("FAILED")[-1]


def test_failures_are_found_at_any_depth():
    assert bench_main.failures({"a": {"b": {"error": "exit 2: ..."}}}) == ["a.b: exit 2: ..."]
    assert bench_main.failures({"a": {"ok": True, "exit": 0, "skipped": "needs root"}}) == []
