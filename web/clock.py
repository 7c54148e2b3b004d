"""The turn clock from a phone.

    GET  /api/clock            the live clock (public): the log's record plus
                               "running" and "used_ms" (what the running seat
                               had used when this was said), or {"clock": null}
    POST /api/clock            X-Table-Pin; {"mode": "sudden"|"fischer"|"delay",
                               "bank_s": 1..86400, "extra_s": 0..3600}: set and start
    POST /api/clock/end-turn   X-Seat-Token of the running seat, or X-Table-Pin:
                               the running seat's turn ends, the next seat's starts
    POST /api/clock/pause      X-Seat-Token of any seat, or X-Table-Pin
    POST /api/clock/resume     likewise

Times are public (they are in the game's log), so reading needs nothing.  A
seat token ends only its own seat's turn; pausing is anybody's at the table
(a player who must leave the table for a moment).  In a game with its own
turn order the moves hand the clock on, and ``end-turn`` is refused.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from companion import clock as tc
from companion.fields import is_int
from companion.i18n import N_

from .api import json_body
from .app import companion
from .errors import ApiError
from .guards import pin_required, seat_or_pin

bp = Blueprint("clock", __name__)


def _answer(c):
    with c.session.lock:
        response = jsonify(clock=c.session.clock.live())
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/clock")
def clock():
    return _answer(companion())


@bp.post("/api/clock")
@pin_required(N_("setting the turn clock needs the table PIN (header X-Table-Pin)"))
def set_clock():
    c = companion()
    body = json_body(required=True)
    if not isinstance(body, dict):
        raise ApiError(400, N_("the body must be a JSON object like {\"mode\": \"fischer\", \"bank_s\": 600, "
                               "\"extra_s\": 5}"))
    unknown = sorted(set(body) - {"mode", "bank_s", "extra_s"})
    if unknown:
        raise ApiError(400, N_("unknown key '{key}' (only 'mode', 'bank_s' and 'extra_s' are allowed)"),
                       key=unknown[0])
    mode = body.get("mode")
    if mode not in tc.MODES:
        raise ApiError(400, N_("'mode' must be one of {choices}"), choices=", ".join(tc.MODES))
    bank, extra = body.get("bank_s"), body.get("extra_s", 0)
    if not is_int(bank) or not 1 <= bank <= tc.MAX_BANK_MS // 1000:
        raise ApiError(400, N_("'bank_s' must be a whole number of seconds from 1 to {hi}"), hi=tc.MAX_BANK_MS // 1000)
    if not is_int(extra) or not 0 <= extra <= tc.MAX_EXTRA_MS // 1000:
        raise ApiError(400, N_("'extra_s' must be a whole number of seconds from 0 to {hi}"),
                       hi=tc.MAX_EXTRA_MS // 1000)
    if mode == "sudden":
        extra = 0
    c.session.clock_set(mode, bank * 1000, extra * 1000, "web")
    return _answer(c)


@bp.post("/api/clock/end-turn")
def end_turn():
    c = companion()
    seat = seat_or_pin()        # a seat token ends only its own seat's turn (the session checks)
    c.session.clock_end_turn(seat, "seat" if seat is not None else "web")
    return _answer(c)


@bp.post("/api/clock/pause")
def pause():
    c = companion()
    seat_or_pin()               # any seat may pause: a player who must leave the table
    c.session.clock_pause()
    return _answer(c)


@bp.post("/api/clock/resume")
def resume():
    c = companion()
    seat_or_pin()
    c.session.clock_resume()
    return _answer(c)
