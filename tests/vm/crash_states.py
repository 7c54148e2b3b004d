"""Every crash state of one cycle of the card, checked from the host without a boot.

The card (lossy_disk.py) logs one cycle's write stream: each write the guest
sent and each flush it was told was done, and the file's pages as they were
before the log changed them.  From a copy of the card after the cut and that
undo data, the card at the log's start (S0) is rebuilt; the flushes cut the
stream into intervals; the card after the k-th flush is S_k.  A cut between
flush k and flush k+1 can leave S_k plus any subset of the interval's writes
(the reordering model), each of them whole or torn (a part of its 512-byte
sectors).  Each such crash state is written into the work image, read as
the check before opening reads the store (the journal replayed, then
undone: host_check.read_store), and compared with what the client was told
before flush k+1 was done, by the caller's ``check``.

Which states: an interval of up to :data:`FULL` writes, every subset of them
(2**FULL at most); a longer one, none, all and :data:`SAMPLE` subsets drawn
at random (each write kept, lost or torn, a third each); and in every
interval up to :data:`TEARS` states "in order up to a torn write": the
writes before it kept, it torn, the rest lost.  At most :data:`MAX_STATES`
states per cycle (the intervals in order: the cut's last; a state costs
~0.03-0.1 s).

Besides, one state no honest card leaves: S0 with every action acknowledged
during the log required: what a card that said "done" to each flush and
kept nothing would leave (``lying_lost``: the limit of what software can
promise).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import lossy_disk

FULL = 5
SAMPLE = 24
TEARS = 6
MAX_STATES = 2000
PAGE = lossy_disk.Cache.PAGE


@dataclass
class Interval:
    writes: list[tuple[int, bytes]]
    #: The host's clock when the flush that ended it was done (before the guest
    #: was told); None for the interval the cut ended.
    flushed_at: float | None


def intervals(log: list[tuple]) -> list[Interval]:
    out, writes = [], []
    for entry in log:
        if entry[0] == "w":
            writes.append((entry[1], entry[2]))
        elif entry[0] == "f":
            out.append(Interval(writes, entry[1]))
            writes = []
    out.append(Interval(writes, None))
    return out


def states(writes: list[tuple[int, bytes]], rng: random.Random) -> list[list]:
    """The crash states of one interval: for each, one choice per write:
    True (it reached the card), False (it did not) or a list of sector
    indexes (torn: those sectors only)."""
    n = len(writes)
    chosen: list[list] = []
    if n <= FULL:
        for mask in range(2 ** n):
            chosen.append([bool(mask >> i & 1) for i in range(n)])
    else:
        chosen += [[False] * n, [True] * n]
        for _ in range(SAMPLE):
            state = []
            for _offset, data in writes:
                draw = rng.random()
                sectors = lossy_disk.tear(len(data), rng) if draw >= 2 / 3 else None
                state.append(sectors if sectors is not None else draw < 1 / 3 or (draw >= 2 / 3 and rng.random() < .5))
            chosen.append(state)
    tearable = [i for i, (_o, data) in enumerate(writes) if len(data) > lossy_disk.SECTOR]
    for i in sorted(rng.sample(tearable, min(TEARS, len(tearable)))):
        chosen.append([True] * i + [lossy_disk.tear(len(writes[i][1]), rng)] + [False] * (n - i - 1))
    return chosen


def pieces(writes: list[tuple[int, bytes]], state: list) -> list[tuple[int, bytes]]:
    """What a crash state writes over S_k, in the stream's order."""
    out = []
    for (offset, data), choice in zip(writes, state):
        if choice is True:
            out.append((offset, data))
        elif isinstance(choice, list):
            out += lossy_disk.torn_pieces(offset, data, choice)
    return out


class Work:
    """The work image: a copy of the card after the cut, put back as it was
    at the log's start (the undo pages), then moved forward flush by flush."""

    def __init__(self, image: Path, undo: dict[int, bytes]):
        self.image = image
        self.fd = os.open(image, os.O_RDWR)
        for index, page in undo.items():
            os.pwrite(self.fd, page, index * PAGE)

    def patch(self, writes: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Write ``writes`` in order; what they overwrote, for :meth:`unpatch`."""
        saved = []
        for offset, data in writes:
            saved.append((offset, os.pread(self.fd, len(data), offset)))
            os.pwrite(self.fd, data, offset)
        return saved

    def unpatch(self, saved: list[tuple[int, bytes]]) -> None:
        for offset, data in reversed(saved):
            os.pwrite(self.fd, data, offset)

    def close(self) -> None:
        os.close(self.fd)


def check_cycle(image: Path, log: list[tuple], undo: dict[int, bytes],
                check: Callable[..., int], rng: random.Random,
                *, lying: bool = True) -> dict:
    """Every crash state (above) of the cycle logged in ``log``, in ``image``
    (a copy of the card after the cut: changed, and left as the card was at
    the cut's last flush).  ``check(image, flushed_at, lying=False)`` reads
    the state and returns the acknowledged actions it lost (0: it holds);
    the acknowledged ones are those told before ``flushed_at`` (all of them
    when None); ``lying``: the state a lying card leaves (S0).  The figures: ``intervals``, ``crash_states_checked``,
    ``lost`` (the sum), ``states_losing`` and, with ``lying``,
    ``lying_lost``."""
    spans = intervals(log)
    work = Work(image, undo)
    out = {"intervals": len(spans), "writes": sum(len(s.writes) for s in spans), "crash_states_checked": 0,
           "lost": 0, "states_losing": 0, "capped": False}
    try:
        if lying:
            out["lying_lost"] = check(image, None, lying=True)
        for span in spans:
            for state in states(span.writes, rng):
                if out["crash_states_checked"] >= MAX_STATES:
                    out["capped"] = True
                    return out
                saved = work.patch(pieces(span.writes, state))
                try:
                    lost = check(image, span.flushed_at)
                finally:
                    work.unpatch(saved)
                out["crash_states_checked"] += 1
                out["lost"] += lost
                out["states_losing"] += bool(lost)
            work.patch(span.writes)         # S_k+1: the interval's flush done
        return out
    finally:
        work.close()
