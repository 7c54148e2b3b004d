"""The box's board on the Setup page: which one the box found, and another one chosen.

    GET  /api/board     public: {"board", "name", "how", "setting", "boards", "trial"}
    POST /api/board     {"board": "ID"}: try that board; in set-up the table
                        PIN (X-Table-Pin), after it the owner password
                        (X-Owner-Password): changing the board is a system change

The choice is only asked here (appliance/board_trial.py): the companion
restarts on that board and its panel asks "Keep this board?"; OK on the
box's new keys keeps it, anything else goes back to the board before.  So
a phone never leaves a box with a dark panel and keys that do nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

from flask import Blueprint, current_app, jsonify, request

from appliance import board_trial
from appliance import setup as core
from companion.i18n import N_, gettext

from .app import companion
from .errors import ApiError
from .errors import request_language
from .guards import owner_shown, require_pin
from .setup import _nocache

bp = Blueprint("board", __name__)
RESTART_DELAY_S = 0.5         # the answer reaches the phone before the server stops


def view(language: str | None = None) -> dict:
    """What the Setup page shows: the same for everyone near the box."""
    c = companion()
    box = c.box
    known = list(getattr(box, "known_boards", lambda: [])())
    board = getattr(box, "board", None)
    folder = c.config.get("data_dir")
    trial = board_trial.pending(folder) if folder else None
    setting = c.config.get("board")
    return {
        "board": board.id if board is not None else None,
        "name": gettext(board.name, language) if board is not None else None,
        "how": getattr(box, "board_how", None),
        "setting": None if setting in (None, "", "auto") else setting,
        "boards": [{"id": i, "name": gettext(name, language)} for i, name in known],
        "trial": {"board": trial["board"], "seconds": board_trial.WINDOW_S} if trial else None,
    }


@bp.get("/api/board")
def board_state():
    return _nocache(jsonify(view(request_language())))


@bp.post("/api/board")
def board_try():
    c = companion()
    folder = c.config.get("data_dir")
    if not folder:
        raise ApiError(409, N_("this box keeps no settings (no data folder)"))
    if core.in_setup_mode(folder):
        require_pin(N_("choosing the board needs the table PIN (header X-Table-Pin), shown on the box"))
    else:
        owner_shown(N_("the board is the owner's: send the owner password (header X-Owner-Password)"))
    if c.box is None:
        raise ApiError(503, N_("no box is running (see the companion's log)"))
    body = request.get_json(silent=True)
    ids = [i for i, _name in c.box.known_boards()]
    if not isinstance(body, dict) or set(body) != {"board"} or body["board"] not in ids:
        raise ApiError(400, N_("send a JSON object with: board (one of {boards})"), boards=", ".join(ids))
    current = view()
    board_trial.ask(Path(folder), body["board"], current["setting"])
    restart = current_app.extensions.get("companion.restart")
    if restart is not None:
        threading.Timer(RESTART_DELAY_S, restart).start()
    answer = view(request_language())
    answer["restarting"] = restart is not None
    response = jsonify(answer)
    response.status_code = 202
    return _nocache(response)


@bp.app_context_processor
def _board_in_templates():
    """``board_view(lang)`` for the Setup page's board section (web/templates/_setup_board.html)."""
    return {"board_view": view}
