"""The card after a cut, checked from the host before any boot.

A copy of the card (a sparse copy of the disk file, on ``/dev/shm`` when it
has room) is checked as a person with a card reader would, with nothing of
the guest's:

1. ``e2fsck -fn``: the file system as the cut left it.  A cut while the
   guest had journal transactions not yet written to their places leaves a
   file system that only its journal makes whole: e2fsck then sees
   problems that the journal's replay fixes (the kernel replays it at
   mount).  So the journal is replayed (``e2fsck -E journal_only``, which
   does nothing else) and ``e2fsck -fn`` must then find nothing: **clean**.
2. The store: ``companion.db`` and its ``-wal`` read out of the replayed
   file system (``debugfs``, no mount), opened by SQLite as the companion
   would open them: ``PRAGMA integrity_check``, and the last game's log,
   which the harness compares with what the client was told.

:func:`read_store` (the replay of the journal, undone afterwards with
``e2undo``) is also how tests/vm/crash_states.py reads each crash state.

Standard library and e2fsprogs only: it runs with the host's ``python3``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

STATE = "/var/lib/companion"
SHM = Path("/dev/shm")


def scratch(need: int, fallback: Path) -> Path:
    """Where a card's copy goes: memory (``/dev/shm``) when it has room for
    ``need`` bytes and some to spare, else ``fallback``."""
    try:
        free = shutil.disk_usage(SHM).free
    except OSError:
        free = 0
    return SHM if free > 2 * need + (2 << 30) else fallback


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def copy_card(disk: Path, folder: Path, name: str = "card-copy.raw") -> Path:
    """A sparse copy of the card (only its written extents are read)."""
    where = scratch(allocated(disk), folder)
    dest = Path(tempfile.mkdtemp(prefix="companion-vm-", dir=where)) / name
    subprocess.run(["cp", "--sparse=always", str(disk), str(dest)], check=True)
    return dest


def drop_copy(path: Path) -> None:
    shutil.rmtree(path.parent, ignore_errors=True)


def _e2fsck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["e2fsck", *args], capture_output=True, text=True, timeout=1800)


def replay_journal(image: Path, undo: Path | None = None) -> bool:
    """What the kernel does first at mount: the journal's committed
    transactions written to their places (and nothing else); whether there
    were any.  ``undo``: e2fsck's undo file, so that ``e2undo`` can put the
    image back."""
    args = ["-E", "journal_only", "-y"]
    if undo is not None:
        undo.unlink(missing_ok=True)
        args += ["-z", str(undo)]
    done = _e2fsck(*args, str(image))
    if done.returncode not in (0, 1):
        raise RuntimeError(f"e2fsck could not replay the journal (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr)[-500:]}")
    return "recovering journal" in done.stdout + done.stderr


def undo_replay(image: Path, undo: Path) -> None:
    """Put back what :func:`replay_journal` changed (nothing, if it wrote no undo file)."""
    if undo.exists() and undo.stat().st_size:
        done = subprocess.run(["e2undo", str(undo), str(image)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"e2undo failed: {done.stdout[-300:]} {done.stderr[-300:]}")
    undo.unlink(missing_ok=True)


def fsck(image: Path) -> dict:
    """``e2fsck -fn`` as the cut left the file system, then again after the
    journal's replay (which changes ``image``: a copy).  ``clean``: the
    second found nothing (e2fsck's exit status 0)."""
    before = _e2fsck("-fn", str(image))
    replayed = replay_journal(image)
    after = _e2fsck("-fn", str(image))
    # e2fsck -fn's exit status: 0 clean, 4 errors left uncorrected.
    out = {"clean": after.returncode == 0, "clean_before_replay": before.returncode == 0,
           "journal_replayed": replayed, "rc": after.returncode}
    if after.returncode != 0:
        out["output"] = (after.stdout + after.stderr)[-2000:]
    return out


def _debugfs(image: Path, commands: list[str]) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".debugfs") as script:
        script.write("\n".join(commands) + "\n")
        script.flush()
        done = subprocess.run(["debugfs", "-f", script.name, str(image)], capture_output=True, text=True,
                              timeout=600)
    return done.stdout + done.stderr


def listing(image: Path, folder: str = STATE) -> list[str] | None:
    """The names in ``folder`` (debugfs's ``ls -p``), or None if it is not there."""
    out = _debugfs(image, [f"ls -p {folder}"])
    names = []
    for line in out.splitlines():
        parts = line.split("/")
        if len(parts) >= 7 and line.startswith("/"):
            name = "/".join(parts[5:-2])
            if name not in (".", ".."):
                names.append(name)
    if not names and "File not found" in out:
        return None
    return sorted(names)


def store_from(folder: Path) -> dict:
    """``companion.db`` (and its ``-wal``) in ``folder`` opened as SQLite
    opens it (the log replayed into that copy): the integrity check and the
    last game's log, as the guest's check before opening reads them."""
    db_path = folder / "companion.db"
    out: dict = {"db_bytes": db_path.stat().st_size if db_path.exists() else None}
    if not out["db_bytes"]:
        out.update(integrity=["no store file, or an empty one"], lines=[], game=None)
        return out
    try:
        db = sqlite3.connect(db_path, timeout=10)
        try:
            out["integrity"] = [r[0] for r in db.execute("PRAGMA integrity_check")]
            row = db.execute("SELECT id FROM games ORDER BY id DESC LIMIT 1").fetchone()
            out["game"] = row and row[0]
            out["lines"] = [r[0] for r in db.execute(
                "SELECT line FROM actions WHERE game_id = ? ORDER BY seq", (row[0],))] if row else []
        finally:
            db.close()
    except sqlite3.Error as exc:
        out.update(integrity=[f"sqlite: {exc}"], lines=[], game=None)
    return out


def read_store(image: Path, *, replay: bool = True, undo_dir: Path | None = None) -> dict:
    """The store on the card image: the journal replayed first (undone
    afterwards when ``undo_dir`` is given: the image is left as it was),
    the folder's names, the store's check (:func:`store_from`)."""
    undo = (undo_dir / "replay.e2undo") if undo_dir is not None else None
    if replay:
        replay_journal(image, undo)
    try:
        with tempfile.TemporaryDirectory(prefix="companion-store-", dir=undo_dir) as tmp:
            names = listing(image)
            commands = [f"dump {STATE}/{name} {tmp}/{name}" for name in ("companion.db", "companion.db-wal")
                        if names and name in names]
            if commands:
                _debugfs(image, commands)
            out = store_from(Path(tmp))
            out["files"] = names
            return out
    finally:
        if replay and undo is not None:
            undo_replay(image, undo)


def main(argv: list[str]) -> int:
    """``python3 host_check.py IMAGE``: the check of a card image, as JSON."""
    image = Path(argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_card(image, Path(tmp))
        try:
            print(json.dumps({"fsck": fsck(copy), "store": read_store(copy, replay=False)}, indent=1))
        finally:
            drop_copy(copy)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
