"""Another board, chosen on the Setup page, kept only once a press on the box says it works.

Changing the board changes which pins are the keys and where the panel
is: a wrong choice leaves a dark panel and dead keys.  So the Setup page
never writes the ``board`` setting itself.  It asks (:func:`ask`: a file
``board-trial.json`` in the data folder) and the companion restarts; that
start (:func:`at_start`) runs on the board asked, once, and the box asks
"Keep this board?" for :data:`WINDOW_S` seconds: OK there (on the new
board's own keys) keeps it (:func:`keep`: ``board = "ID"`` in
companion.toml); BACK, the time running out, or the power cut before OK
goes back to the board before (:func:`drop`, then a restart).  A trial is
tried at one start only: the next start finds it tried, and forgets it.
"""

from __future__ import annotations

import json
from pathlib import Path

from .settings_file import save_setting
from .setup import SETTINGS, read_json, write_private

FILE = "board-trial.json"
WINDOW_S = 60.0


def _path(folder) -> Path:
    return Path(folder) / FILE


def pending(folder) -> dict | None:
    """The trial asked for, if any: ``{"board", "previous", "tried"}``."""
    if not folder:
        return None
    data = read_json(_path(folder))
    return data if isinstance(data, dict) and isinstance(data.get("board"), str) else None


def ask(folder, board: str, previous: str | None) -> None:
    write_private(_path(folder), json.dumps({"board": board, "previous": previous, "tried": False}) + "\n")


def at_start(folder) -> str | None:
    """The board to try at this start, or None.  Marks the trial tried
    (before the board is used): a trial that a power cut or a crash ends
    goes back to the board before at the next start."""
    trial = pending(folder)
    if trial is None:
        return None
    if trial.get("tried"):
        drop(folder)
        return None
    write_private(_path(folder), json.dumps({**trial, "tried": True}) + "\n")
    return trial["board"]


def keep(folder, board: str) -> bool:
    """The owner pressed OK on the new board: it is the setting now."""
    saved = save_setting(Path(folder) / SETTINGS, "board", board)
    drop(folder)
    return saved


def drop(folder) -> None:
    try:
        _path(folder).unlink()
    except FileNotFoundError:
        pass
