"""Pull the plug: SIGKILL a real child process at random moments.

The child submits actions through the table session and prints ``ack N``
only after ``submit`` returned.  After each kill, a fresh session must hold
every acknowledged action, and its state must equal the replay of the log.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from companion.session import TableSession
from companion.store import Store
from companion.timeline import replay

CHILD = r"""
import json, sys
from companion.store import Store
from companion.session import TableSession
session = TableSession(Store(sys.argv[1]))
if session.public() == {"game": None}:
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Cat"]})
print("ready", flush=True)
for line in sys.stdin:
    action = json.loads(line)
    session.submit(action)
    print("ack", json.dumps(action), flush=True)
"""


def test_sigkill_at_random_moments_loses_no_acknowledged_action(tmp_path):
    rng = random.Random(1234)
    acked: list[dict] = []
    for attempt in range(12):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, bufsize=1)
        assert child.stdout.readline().strip() == "ready"
        n = rng.randint(1, 30)
        for i in range(n):
            child.stdin.write(json.dumps({"type": "add", "seat": rng.randrange(3), "points": rng.randint(-9, 9)}) + "\n")
        child.stdin.flush()
        time.sleep(rng.random() * 0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        for line in child.stdout.read().splitlines():
            if line.startswith("ack "):
                acked.append(json.loads(line[4:]))
        child.stdin.close()
        child.stdout.close()

        store = Store(tmp_path)
        session = TableSession(store)
        stored = [json.loads(l) for l in store.lines(session.game_id)]
        assert stored[0]["type"] == "new_game"
        # every acknowledged action is there, in order (unacknowledged ones may be too)
        assert stored[1:1 + len(acked)] == acked, f"attempt {attempt}: lost an acknowledged action"
        acked = stored[1:]
        assert session.public() == replay(store.lines(session.game_id)).public()
        store.close()
