"""The box's backup file (appliance/backup.py): how long and how big.

    python -m bench --only bench_backup [--quick]

For a store of 1,000 scoreboard games of 20 lines (100 with ``--quick``),
each log different, in the same process and the same run:

* ``write_s`` — :func:`backup_bytes` (the store read on its own connection,
  each game's public prefix, the zip); ``bytes`` its size, ``store_bytes``
  the store file's; ``write_again_s`` — the next backup of the same store
  (a box sending one to its hub every 10 min: each game's prefix is known
  by its log's digest);
* ``check_s`` — :func:`check_bytes` (every checksum, every log replayed);
* ``restore_s`` — :func:`restore_backup` into an empty folder (checked,
  built, summaries filled, swapped in);
* ``replay_all_s`` — the baseline: one replay of every game's log, what a
  check cannot do without.

Target (printed, never asserted): check and restore within a small factor
of the baseline (they replay each game once; the restore folds it once more
for the store's summaries).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path


def run(quick: bool = False) -> dict:
    from bench.bench_history import _log
    from appliance import backup
    from appliance.backup import backup_bytes, check_bytes, restore_backup
    from companion.store import Store
    from companion.timeline import replay

    games = 100 if quick else 1000
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as folder:
        folder = Path(folder)
        store = Store(folder / "box")
        store.db.execute("PRAGMA synchronous=OFF")          # a bench store: the filling is not measured
        logs = []
        for n in range(games):
            log, public = _log(n, 20)
            log[-1] = log[-1].replace('"points": ', f'"points": {n}') if n else log[-1]   # every log its own
            logs.append(log)
            store.import_game("scoreboard", json.loads(log[0])["players"], log, False, None)
        store.close()
        backup._PREFIX_LENGTHS.clear()           # the first backup of this process
        began = time.perf_counter()
        data, info = backup_bytes(folder / "box")
        write_s = time.perf_counter() - began
        began = time.perf_counter()
        backup_bytes(folder / "box")
        again_s = time.perf_counter() - began
        began = time.perf_counter()
        check_bytes(data)
        check_s = time.perf_counter() - began
        (folder / "b.zip").write_bytes(data)
        began = time.perf_counter()
        restore_backup(folder / "b.zip", folder / "fresh")
        restore_s = time.perf_counter() - began
        began = time.perf_counter()
        for log in logs:
            replay(log)
        replay_all_s = time.perf_counter() - began
        return {"games": info.games, "bytes": len(data), "store_bytes": (folder / "box" / "companion.db").stat().st_size,
                "write_s": round(write_s, 3), "write_again_s": round(again_s, 3), "check_s": round(check_s, 3), "restore_s": round(restore_s, 3),
                "replay_all_s": round(replay_all_s, 3)}


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
