"""companion — the score track, token counter and secret-bid collector of a game table.

The package is the table, the pure core: games, the event log and its
timeline, the store, the table session, roster, history, statistics,
exports, the turn clock, and the data commands (``companion/commands.py``).
Nothing here imports Flask, gpiozero or luma, nor any other package of the
project: the adapters (``hardware``: the box; ``web``: the phones) wrap the
session, and ``appliance`` keeps the box alive around it (its start, updates,
set-up, Wi-Fi, backups).  tests/core/test_layers.py holds it to that.
"""

__version__ = "0.1.0"
