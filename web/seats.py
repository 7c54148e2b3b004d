"""Seats claimed by phones: claim with the PIN, get a token, read your own view.

    GET  /api/seats                     who has claimed which seat (public)
    POST /api/seats/<seat>/claim        X-Table-Pin; body {"name": "..."} optional -> {"seat", "token", "label"}
    POST /api/seats/<seat>/release      X-Seat-Token of that seat, or X-Table-Pin
    GET  /api/seats/<seat>/view         X-Seat-Token of that seat -> the seat's private view

Claiming needs the PIN: an unclaimed seat's token would read that seat's
locked entry, so a stranger on the network must not get one.
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from companion.i18n import N_

from .api import json_body
from .app import companion
from .auth import clean_label
from .errors import ApiError
from .guards import credentials, pin_required, seat_or_pin, seat_token

bp = Blueprint("seats", __name__)

DEFAULT_LABEL = "phone"


def _no_store(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/seats")
def seats():
    return _no_store(jsonify(companion().public_seats()))


@bp.post("/api/seats/<int:seat>/claim")
@pin_required(N_("claiming a seat needs the table PIN (header X-Table-Pin)"))
def claim(seat: int):
    c = companion()
    body = json_body(required=False)
    if body is not None and not isinstance(body, dict):
        raise ApiError(400, N_("the body must be a JSON object like {\"name\": \"Ann's phone\"}"))
    body = body or {}
    unknown = sorted(set(body) - {"name"})
    if unknown:
        raise ApiError(400, N_("unknown key '{key}' (only 'name' is allowed)"), key=unknown[0])
    label = clean_label(body.get("name")) or DEFAULT_LABEL
    with c.session.lock:
        timeline = c.session.timeline
        # A seat that locked its entry on the buttons: a phone claiming it now
        # would read that entry (the PIN is on the box for all to see).
        if timeline.started and any(timeline.game.secret_owner(k) == seat for k in timeline.state.hidden):
            raise ApiError(409, N_("seat {seat} has an entry waiting for the reveal: claim it after the reveal"),
                           seat=seat + 1)          # people count seats from 1 (docs/api.md)
        token = c.seats.claim(seat, label)
    return _no_store(jsonify(seat=seat, token=token, label=label))


@bp.post("/api/seats/<int:seat>/release")
def release(seat: int):
    seat_or_pin(N_("releasing a seat needs its seat token (X-Seat-Token) or the table PIN (X-Table-Pin)"), seat)
    companion().seats.release(seat)
    return _no_store(jsonify(seat=seat, claimed=False))


@bp.get("/api/seats/<int:seat>/view")
def view(seat: int):
    _pin, token = credentials()         # the PIN opens no seat's view: it is on the box for all to see
    if not token:
        raise ApiError(401, N_("a seat's view needs its seat token (header X-Seat-Token)"))
    seat_token(token, seat)
    return _no_store(jsonify(companion().session.private(seat, phone=True)))      # never an entry made on the box
