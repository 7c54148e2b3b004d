"""Every public replay sample in tests/data/scenarios, through the real command.

Run both in-process (fast, precise failure messages) and through
``companion replay`` in a subprocess (the contract: exit codes, stdout, stderr).
The samples and how they are compared: tests/data/scenarios/README.md.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from companion.timeline import ReplayError, replay
from conftest import SCENARIOS

# The samples are part of the repository: an empty list is a failure (below), never a skip.
CASES = sorted(SCENARIOS.rglob("*.jsonl"))
GAMES = ("third-man", "costly-tricks", "fight", "sloppy-seconds", "yenta", "diabolo", "scoreboard")


def mismatch(got, want, path="state"):
    """None when ``got`` matches ``want`` as check_scenarios.py defines it."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{path}: got {got!r}, want an object"
        for key, sub in want.items():
            if key not in got:
                return f"{path}.{key}: missing"
            found = mismatch(got[key], sub, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{path}: got {got!r}, want {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            found = mismatch(g, w, f"{path}[{i}]")
            if found:
                return found
        return None
    if type(got) is not type(want) or got != want:
        return f"{path}: got {got!r}, want {want!r}"
    return None


def test_the_samples_are_there():
    assert CASES, f"no scenarios found under {SCENARIOS}"
    # every game has samples, and every sample has its expectation
    assert sorted({p.parent.name for p in CASES}) == sorted(GAMES)
    for path in CASES:
        assert path.with_suffix("").with_suffix(".expect.json").exists(), f"{path} has no .expect.json"


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario_in_process(path):
    expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
    lines = path.read_text(encoding="utf-8").split("\n")
    if expect["exit"] == 0:
        state = replay(lines).public()
        # the state must be JSON-ready exactly as printed
        state = json.loads(json.dumps(state))
        problem = mismatch(state, expect["state"])
        assert problem is None, problem
    else:
        with pytest.raises(ReplayError) as info:
            replay(lines)
        assert info.value.line == expect["line"], str(info.value)


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario_through_the_command(path, companion_cmd):
    expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
    run = subprocess.run(companion_cmd + ["replay", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == expect["exit"], run.stderr
    assert "Traceback" not in run.stderr
    if expect["exit"] == 0:
        problem = mismatch(json.loads(run.stdout), expect["state"])
        assert problem is None, problem
    else:
        assert run.stdout == ""
        assert run.stderr.startswith(f"line {expect['line']}:"), run.stderr
        assert run.stderr.count("\n") == 1, "one line on stderr"
