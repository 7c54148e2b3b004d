"""Core figures: replaying a long log, and cold start of the command."""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from companion.timeline import replay


def long_log(n: int = 10_000, seed: int = 7, players=("Ann", "Ben", "Chloé", "Dan"),
             secret_max: int = 99) -> list[str]:
    """A scoreboard log of ``n`` actions: adds, tokens, secret rounds (numbers
    0 to ``secret_max``) and undos, for ``players``; the same for a seed."""
    rng = random.Random(seed)
    seats = len(players)
    lines = [json.dumps({"type": "new_game", "game": "scoreboard", "players": list(players)})]
    entered: set[int] = set()
    while len(lines) < n:
        r = rng.random()
        if r < 0.6:
            lines.append(json.dumps({"type": "add", "seat": rng.randrange(seats), "points": rng.randint(-10, 10)}))
        elif r < 0.7:
            lines.append(json.dumps({"type": "token", "seat": rng.randrange(seats), "delta": 1}))
        elif r < 0.95:
            seat = rng.choice([s for s in range(seats) if s not in entered])
            entered = set() if len(entered) == seats - 1 else entered | {seat}
            lines.append(json.dumps({"type": "secret", "seat": seat, "value": rng.randint(0, secret_max)}))
        else:  # a slip of the finger, taken back
            lines.append(json.dumps({"type": "add", "seat": rng.randrange(seats), "points": 5}))
            lines.append(json.dumps({"type": "undo"}))
    return lines[:n]


def timed(fn, repeat: int = 5) -> float:
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t0)
    return statistics.median(best)


def run() -> dict:
    lines = long_log()
    replay(lines)  # must be a valid log: raises otherwise
    replay_s = timed(lambda: replay(lines))
    baseline_s = timed(lambda: [json.loads(l) for l in lines])
    exe = Path(sys.executable).with_name("companion")
    log = Path("/tmp/companion-bench-replay.jsonl")
    log.write_text("\n".join(lines[:50]) + "\n")
    cmd_s = timed(lambda: subprocess.run([str(exe), "replay", str(log)], capture_output=True), repeat=3)
    bare_s = timed(lambda: subprocess.run([sys.executable, "-c", "import json"], capture_output=True), repeat=3)
    return {
        "replay_10k_actions_s": replay_s,
        "replay_10k_baseline_json_parse_s": baseline_s,
        "replay_command_cold_s": cmd_s,
        "replay_command_baseline_bare_python_s": bare_s,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
