"""Routes that help the table control enter one game's turns (no login).

    GET /api/fight/changes?play=V   every change the table allows after
                                    playing a coin worth V, largest first
    GET /api/fight/hint             the solver's move for the seat to play

Both only read the public state (FIGHT? has nothing secret: every purse
and the table are public), so they need no credential, like
``GET /api/state``.  They answer for the game at the table *now*; a page
asks again after each change.

The hint searches outside the session lock, on a snapshot: the table can
go on while it thinks.  The search runs in the hint process
(:mod:`companion.hints`, shared with the box): the request's thread only
waits on a pipe, so neither the box nor the other phones wait behind it
(not even for the GIL).  Searches are bounded by the solver's own position
budgets (:data:`companion.fight_solver.HINT_BUDGET` exact, a smaller one
for the 3+ seat "team-up" hint) and by the worker's time budget, run one at
a time, and the last answers are kept, so a table full of phones asking for
the same hint pays once.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from companion import fight_solver, hints
from companion.games.fight import legal_changes
from companion.i18n import N_, gettext

from .app import companion
from .errors import ApiError, request_language

bp = Blueprint("game_api", __name__)


def _fight_state() -> dict:
    """The public state, or a 409 when the game at the table is not FIGHT?."""
    _version, state = companion().session.snapshot()
    if state.get("game") != "fight":
        raise ApiError(409, N_("the game at the table is not FIGHT?: there are no coins to play"))
    return state


def _answer(body: dict):
    response = jsonify(body)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/fight/changes")
def fight_changes():
    """``{"play": V, "seat": turn, "changes": [[10, 5], [10, 1, 1, 1, 1], ..., []]}``:
    every change worth at most V - 1 that the table holds, in the box's
    order (largest worth first, then fewer coins); the last is always
    ``[]``.  400 if V is not a coin value of this game."""
    text = request.args.get("play", "").strip()
    if not text:
        raise ApiError(400, N_("say which coin is played: ?play=VALUE"))
    if not (text.isascii() and text.isdigit()) or len(text) > 6:   # "²".isdigit() too
        raise ApiError(400, N_("'play' must be a coin value (a whole number), got '{value}'"), value=text[:12])
    state = _fight_state()
    play = int(text)
    values = sorted((int(v) for v in state["table"]), reverse=True)
    if play not in values:
        raise ApiError(400, N_("{value} is not a coin of this game (coins: {coins})"),
                       value=play, coins=", ".join(map(str, values)))
    return _answer({"play": play, "seat": state["turn"], "changes": legal_changes(state["table"], play)})


@bp.get("/api/fight/hint")
def fight_hint():
    """``{"seat", "play", "take", "result", "turns", "exact", "reason", "action"}``.

    ``play`` is null when there is no hint (``reason`` says why: the game
    is over, the position is too large to search quickly).  ``exact``:
    perfect play (two seats hold coins); otherwise the hint is the
    labelled "team-up" heuristic and ``reason`` says so.  ``reason`` is in
    the request's language."""
    state = _fight_state()
    hint = _hint_for(state)
    return _answer({
        "seat": hint.seat if hint.seat is not None else state["turn"],
        "play": hint.play,
        "take": list(hint.take),
        "result": hint.result,
        "turns": hint.turns,
        "exact": hint.exact,
        "reason": gettext(hint.reason, request_language()) if hint.reason else "",
        "action": hint.action() if hint else None,
    })


def _hint_for(state: dict) -> fight_solver.Hint:
    """The solver's hint for ``state``, from the hint process (or the app's
    own :class:`companion.hints.HintWorker` in ``extensions["companion.hints"]``)."""
    worker = current_app.extensions.get("companion.hints") or hints.shared()
    return worker.hint(state)
