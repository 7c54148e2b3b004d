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
"""

from __future__ import annotations

MAX_GAME_LINES = 5000
MAX_IMPORT_BYTES = 1024 * 1024
MAX_IMPORT_LINES = MAX_GAME_LINES
HISTORY_PAGE_STEPS = 200
MAX_STORED_INT = 2 ** 63 - 1
