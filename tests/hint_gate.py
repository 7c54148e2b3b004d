"""A hint solver for the tests: the real one, once a gate file exists.

The hint worker runs ``companion.fight_solver.hint`` in its own process;
tests that must see the box *while* a search runs name this function
instead (``HintWorker(solver="hint_gate:gated_hint")``) and open the gate
(create the file named by ``COMPANION_TEST_HINT_GATE``) when they are done
looking.  The worker process inherits the variable and this directory on
its path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from companion import fight_solver


def gated_hint(state):
    gate = Path(os.environ["COMPANION_TEST_HINT_GATE"])
    deadline = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return fight_solver.hint(state)
