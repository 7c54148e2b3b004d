"""What every cut is checked against, for the power cuts and the update cuts alike.

* :func:`judge`: a store's log against what the client was told.  The
  games before the cycle (``known``) must be there as they were; then the
  cycle's actions in the order they were sent: every acknowledged one
  (``True``), an unknown one (``False``: sent when the power went, or while
  the box was going down) may be there or not, nothing else may.
* :class:`HostChecks`: right after a cut, before any boot, a copy of the
  card checked from the host (host_check.py): ``e2fsck -fn`` clean once the
  journal is replayed, the store's integrity and every acknowledged action.
* :func:`replay`: every crash state of a logged cycle (crash_states.py)
  against the same check of the store.

Standard library only: it runs with the host's ``python3``.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import crash_states
import host_check


def _action(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return line


def _greedy(tail: list, entries: list[tuple[object, bool]]) -> bool:
    j = 0
    for item in tail:
        while j < len(entries) and entries[j][0] != item:
            if entries[j][1]:
                return False
            j += 1
        if j == len(entries):
            return False
        j += 1
    return not any(must for _, must in entries[j:])


def _match(tail: list, entries: list[tuple[object, bool]]) -> tuple[int, int]:
    """The fewest (missing acknowledged actions, lines nobody sent) that
    explain ``tail`` as ``entries`` in order, unknown ones optional."""
    if _greedy(tail, entries):
        return 0, 0
    n, m = len(tail), len(entries)
    # cost[j] for the current i: (missing + strangers, missing), tail[i:] against entries[j:].
    below = [(0, 0)] * (m + 1)
    for j in range(m - 1, -1, -1):
        miss = below[j + 1][1] + entries[j][1]
        below[j] = (miss, miss)
    for i in range(n - 1, -1, -1):
        row = [(0, 0)] * (m + 1)
        row[m] = (n - i, 0)
        for j in range(m - 1, -1, -1):
            must = entries[j][1]
            skip = row[j + 1]
            options = [(skip[0] + must, skip[1] + must), (below[j][0] + 1, below[j][1])]
            if tail[i] == entries[j][0]:
                options.append(below[j + 1])
            row[j] = min(options)
        below = row
    total, missing = below[0]
    return missing, total - missing


def judge(lines: list[str], integrity: list, known: list[str], entries: list[tuple[str, bool]]) -> tuple[int, list[str]]:
    """A store's log (``lines``, ``integrity``) against what was told: the
    acknowledged actions lost and what does not hold (empty: it holds)."""
    problems = []
    parsed = [_action(line) for line in lines]
    want = [_action(line) for line in known]
    lost = 0
    if parsed[:len(want)] != want:
        lost = sum(1 for a in want if a not in parsed) or 1
        problems.append(f"the games before the cycle changed: stored {len(parsed)} lines, "
                        f"{len(want)} known before it")
    missing, strangers = _match(parsed[len(want):], [(_action(line), must) for line, must in entries])
    if missing:
        lost += missing
        told = sum(1 for _, must in entries if must)
        problems.append(f"acknowledged actions missing: {missing} of the {told} told this cycle "
                        f"(stored {len(parsed)} lines)")
    if strangers:
        problems.append(f"the store holds {strangers} actions nobody sent (or out of order)")
    if integrity != ["ok"]:
        problems.append(f"integrity_check: {integrity[:5]}")
    return lost, problems


def told(acked: list[str], inflight: str | None) -> list[tuple[str, bool]]:
    """A power-cut cycle's entries: every acknowledged action, then the one in flight."""
    return [(line, True) for line in acked] + ([(inflight, False)] if inflight else [])


def damaged(files: list[str] | None) -> list[str]:
    return [f for f in files or [] if ".damaged-" in f]


class HostChecks:
    """Right after each cut, before any boot: a copy of the card checked from
    the host.  The counts go to the summary's ``host_check``; each check
    that does not hold fails the run."""

    def __init__(self, summary: dict, fail, say):
        self.figures = summary.setdefault("host_check", {"fsck_clean": 0, "sqlite_ok": 0})
        self.fail, self.say = fail, say
        self.checks = 0
        self.seconds = 0.0          # what the checks cost, all told

    def check(self, disk: Path, workdir: Path, known: list[str], entries: list[tuple[str, bool]],
              when: str) -> bool:
        self.checks += 1
        started = time.monotonic()
        copy = host_check.copy_card(disk, workdir)
        try:
            fs = host_check.fsck(copy)
            store = host_check.read_store(copy, replay=False)   # fsck replayed the journal in the copy
        finally:
            host_check.drop_copy(copy)
        ok = True
        if fs["clean"]:
            self.figures["fsck_clean"] += 1
        else:
            ok = False
            self.fail(f"{when}: on the host, e2fsck -fn after the journal's replay: exit {fs['rc']}:\n"
                      f"{fs.get('output', '')[-1500:]}")
        lost, problems = judge(store["lines"], store["integrity"], known, entries)
        bad = damaged(store.get("files"))
        if bad:
            problems.append(f"damaged files: {bad}")
        if not problems:
            self.figures["sqlite_ok"] += 1
        for problem in problems:
            ok = False
            self.fail(f"{when}: on the host: {problem}")
        self.last = {"fsck": fs, "lost": lost, "lines": len(store["lines"]), "s": time.monotonic() - started}
        self.seconds += self.last["s"]
        return ok


def replay(disk: Path, workdir: Path, log: list[tuple], undo: dict, known: list[str], acked: list[str],
           acked_at: list[float], inflight: str | None, rng: random.Random) -> dict:
    """Every crash state of the logged cycle (crash_states.check_cycle), each
    read as the check before opening reads the store: those acknowledged
    before the flush that ended its interval must be there, the next one
    sent may be.  The figures, with the first few problems."""
    copy = host_check.copy_card(disk, workdir, "replay.raw")
    problems: list[str] = []

    def check(image: Path, flushed_at: float | None, lying: bool = False) -> int:
        count = len(acked) if flushed_at is None else sum(1 for t in acked_at if t < flushed_at)
        following = acked[count:count + 1] or ([inflight] if inflight else [])
        entries = [(line, True) for line in acked[:count]] + [(line, False) for line in following]
        store = host_check.read_store(image, undo_dir=copy.parent)
        lost, found = judge(store["lines"], store["integrity"], known, entries)
        found += [f"damaged files: {damaged(store.get('files'))}"] if damaged(store.get("files")) else []
        if lying:           # what a card lying about its flushes would leave: the limit, not a finding
            return lost
        if found and len(problems) < 5:
            where = "the cut's" if flushed_at is None else f"the flush at {flushed_at:.3f}'s"
            problems.append(f"a crash state before {where}: " + "; ".join(found))
        return lost or (1 if found else 0)

    try:
        out = crash_states.check_cycle(copy, log, undo, check, rng)
    finally:
        host_check.drop_copy(copy)
    out["problems"] = problems
    return out
