"""The box's fixed limits: how much it reads, stores and sends at once.

A Raspberry Pi Zero 2 W has 512 MB for everything and one table to serve,
so every cost a client can cause is bounded by one of these numbers (each is
documented in docs/api.md, "Limits").  They are generous for real play: a
long Costly Tricks match entered card by card is about 1,500 lines.

* :data:`MAX_GAME_LINES` — the largest game the box stores, in log lines
  (``new_game``, every action and every ``undo``).  An action beyond it is
  refused and changes nothing (:meth:`companion.session.TableSession.submit`);
  a longer log is refused on import.
* :data:`MAX_IMPORT_BYTES` — the largest log file ``companion import`` and
  ``POST /api/history/import`` read (a reader stops one byte after it).
* :data:`MAX_IMPORT_LINES` — the most non-blank lines an imported log may
  have: the largest game.
* :data:`HISTORY_PAGE_STEPS` — the steps ``GET /api/history/<id>`` returns
  at once; ``?from=K`` asks for the next page.
* :data:`MAX_STORED_INT` — the largest whole number the store (SQLite's
  64-bit integers) holds: a larger game number, or a larger number in a
  request body, is refused with a clear message.
* :class:`StoreLimits` — how many games and bytes of logs the store keeps,
  and what a new game beyond them does (the settings ``store_max_games``,
  ``store_max_mb``, ``store_full``).
* :data:`HISTORY_PAGE_GAMES` — the games one history listing returns;
  ``?from=K`` asks for the next page.
* :class:`Bucket` — imports, table-wide: ``import_burst`` at once, then one
  every ``import_refill_s`` seconds.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

MAX_GAME_LINES = 5000
MAX_IMPORT_BYTES = 1024 * 1024
MAX_IMPORT_LINES = MAX_GAME_LINES
HISTORY_PAGE_STEPS = 200
MAX_STORED_INT = 2 ** 63 - 1
HISTORY_PAGE_GAMES = 50

# A real table: a game is a few to a few tens of KB (a long Costly Tricks
# match entered card by card, 1,500 lines, is about 100 KB); 10,000 games of
# an evening each is decades.  100 MB is a sixth of the smallest SD card's
# free space after the system, and what the bench lists in constant time.
STORE_MAX_GAMES = 10_000
STORE_MAX_MB = 100
STORE_FULL_CHOICES = ("prune", "refuse")
IMPORT_BURST = 10
IMPORT_REFILL_S = 60.0


@dataclass(frozen=True)
class StoreLimits:
    """The store's bounds and the operator's choice beyond them:
    ``"prune"`` (the default) moves the oldest finished games to
    ``backups/pruned/`` to make room for a new one; ``"refuse"`` refuses the
    new game with a message saying so.  An unfinished game is never pruned,
    and a game in progress is never refused an action for space."""

    max_games: int = STORE_MAX_GAMES
    max_bytes: int = STORE_MAX_MB * 1_000_000
    when_full: str = "prune"

    @property
    def prune(self) -> bool:
        return self.when_full == "prune"

    @classmethod
    def from_config(cls, config: dict) -> "StoreLimits":
        """From the settings; a value out of range is a clear ValueError."""
        games = config.get("store_max_games", STORE_MAX_GAMES)
        mb = config.get("store_max_mb", STORE_MAX_MB)
        full = config.get("store_full", "prune")
        if type(games) is not int or games < 1:
            raise ValueError(f"store_max_games must be a whole number of games, at least 1, got {games!r}")
        if type(mb) not in (int, float) or not 0 < mb < 1_000_000:
            raise ValueError(f"store_max_mb must be a number of megabytes above 0, got {mb!r}")
        if full not in STORE_FULL_CHOICES:
            raise ValueError(f"store_full must be \"prune\" or \"refuse\", got {full!r}")
        return cls(games, int(mb * 1_000_000), full)


class Bucket:
    """A token bucket: ``burst`` at once, refilled by one every ``refill_s``
    seconds (a clock can be injected).  :meth:`take` returns 0 when a token
    was taken, else the seconds to wait for one."""

    def __init__(self, burst: int, refill_s: float, clock=time.monotonic):
        self.burst = max(1, int(burst))
        self.refill_s = max(0.001, float(refill_s))
        self.clock = clock
        self._tokens = float(self.burst)
        self._at = clock()
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) / self.refill_s)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0
            return max(1, math.ceil((1 - self._tokens) * self.refill_s))
