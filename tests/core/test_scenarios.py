"""Every public replay sample in tests/data/scenarios, through the real command.

Run both in-process (fast, precise failure messages) and through
``companion replay`` in a subprocess (the contract: exit codes, stdout, stderr).
The samples and how they are compared: tests/data/scenarios/README.md.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

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


# -- the repository stands alone ----------------------------------------------------

ROOT = SCENARIOS.parents[2]
# Built from pieces so that this file does not match what it looks for.
OUTSIDE = ("../" + "shared", "COMPANION_" + "SHARED")
NOT_OURS = {".git", ".venv", "test-artifacts", "__pycache__", ".pytest_cache", ".hypothesis", "results", "demo-data", "data"}


def test_nothing_points_outside_the_repository():
    """A clone is all a user has: no file may send the reader (or a test) to a
    folder beside it.  The rules and the log format are docs/rules.md and
    docs/replay.md."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in NOT_OURS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            # Regular files only: lgpio leaves a named pipe (.lgd-nfy0) in the
            # folder it was imported from, and reading a pipe waits forever.
            if not stat.S_ISREG(path.lstat().st_mode) or path.suffix in (".png", ".mo", ".ttf", ".otb", ".pyc", ".db"):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{path.relative_to(ROOT)}: {word}" for word in OUTSIDE if word in text]
    assert not found, found


def _started(game_id):
    """A fresh game of ``game_id`` with as few players as it takes."""
    from companion import games

    game = games.get(game_id)
    names = ["Ann", "Ben", "Cat", "Dan"][:max(game.min_players, 1)]
    return game, replay([json.dumps({"type": "new_game", "game": game_id, "players": names})])


@pytest.mark.parametrize("game_id", GAMES)
def test_docs_replay_md_names_every_action_and_state_key(game_id):
    """docs/replay.md is the log format's reference: each game's actions and
    options, and every key ``companion replay`` prints for it, are named there."""
    doc = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    game, timeline = _started(game_id)
    section = doc.split(f"**{game_id}**", 1)[1].split("\n**", 1)[0]
    for move in game.moves:
        assert f'"type": "{move}"' in section, f"{game_id}: action {move} is not in docs/replay.md"
    for option in game.options:
        assert f"`{option}`" in section, f"{game_id}: option {option} is not in docs/replay.md"
    row = next(line for line in doc.splitlines() if line.startswith(f"| {game_id} |"))
    common = ("game", "players", "scores", "finished", "winner")
    for key in timeline.public():
        assert key in common or f"`{key}`" in row, f"{game_id}: state key {key} is not in docs/replay.md"
    assert f"`{game_id}`" in (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
