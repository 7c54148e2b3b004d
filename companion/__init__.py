"""companion — the score track, token counter and secret-bid collector of a game table.

The package is the pure core: games, the table session, the event log and the
command line.  Nothing here imports Flask, gpiozero or luma; the hardware and
web adapters (top-level packages ``hardware`` and ``web``) wrap the session.
"""

__version__ = "0.1.0"
