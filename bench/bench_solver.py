"""Timings of the FIGHT? solver, for the project's benchmark command.

``run()`` returns a dict of plain numbers:

* ``fight_solve_cold_s`` — exact solve of the default two-player start
  (20:1 10:2 5:3 1:4 each) from an empty memo, wall clock, seconds;
* ``fight_positions`` — positions that solve stored;
* ``fight_hint_cached_ms`` — mean latency of :func:`hint` on positions of
  that game once the memo is warm (what a player waits for during play), ms;
* ``fight_hint_public_view_ms`` — the same from a public view dict.

Standard library and ``companion`` only.  Run directly to print JSON.
"""

from __future__ import annotations

import json
import time

from companion import fight_solver
from companion.games.fight import STANDARD


def run() -> dict:
    fight_solver.duel.cache_clear()                  # a cold memo
    began = time.perf_counter()
    value = fight_solver.solve(STANDARD)
    cold = time.perf_counter() - began

    # Warm hints along the perfect-play line of the game, both input forms.
    position = fight_solver.Position.start(STANDARD)
    positions = []
    while any(position.mover) and any(position.other):
        positions.append(position)
        position = _after(position, fight_solver.hint(position))
    rounds = 20
    began = time.perf_counter()
    for _ in range(rounds):
        for here in positions:
            fight_solver.hint(here)
    cached_ms = (time.perf_counter() - began) * 1000 / (rounds * len(positions))

    view = {"game": "fight", "turn": 0, "table": {str(v): 0 for v in STANDARD},
            "coins": [dict(STANDARD), dict(STANDARD)]}
    began = time.perf_counter()
    for _ in range(rounds):
        fight_solver.hint(view)
    view_ms = (time.perf_counter() - began) * 1000 / rounds

    return {
        "fight_solve_cold_s": round(cold, 4),
        "fight_positions": value["positions"],
        "fight_hint_cached_ms": round(cached_ms, 4),
        "fight_hint_public_view_ms": round(view_ms, 4),
    }


def _after(position: fight_solver.Position, hint: fight_solver.Hint) -> fight_solver.Position:
    """The position after ``hint`` is played (the other seat to move)."""
    index = {v: i for i, v in enumerate(position.values)}
    mover, table = list(position.mover), list(position.table)
    mover[index[hint.play]] -= 1
    table[index[hint.play]] += 1
    for coin in hint.take:
        mover[index[coin]] += 1
        table[index[coin]] -= 1
    return fight_solver.Position(position.values, position.other, tuple(mover), tuple(table))


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
