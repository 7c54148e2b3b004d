"""The table's players on the phones (docs/api.md, "The table's players").

    GET  /api/players                      the roster, in the box's order
    POST /api/players           {name}     add a player            (PIN)
    POST /api/players/<id>/rename {name}   rename; history follows (PIN)
    POST /api/players/<id>/merge  {into}   fold into another player (PIN)

Names go through the request-body check every route has (web/api.py:
control and direction characters are a 400) and the roster's own
(companion/roster.py: trimmed, NFC, 1 to 24 characters, not already there).
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from companion.i18n import N_
from companion.roster import NoSuchPlayer, Roster

from .api import json_body
from .app import companion
from .errors import ApiError
from .guards import pin_required

# Every change of the roster needs the PIN, asked before the body is read.
CHANGING = N_("changing the roster needs the table PIN (header X-Table-Pin)")

bp = Blueprint("roster", __name__)


def roster() -> Roster:
    return Roster(companion().session)


def _listing(status: int = 200, **extra):
    response = jsonify(players=[p.as_dict() for p in roster().players()], **extra)
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response


def _field(name: str):
    body = json_body(required=True)
    if not isinstance(body, dict) or name not in body:
        raise ApiError(400, N_("send a JSON object with '{field}'"), field=name)
    return body[name]


@bp.get("/api/players")
def players():
    return _listing()


@bp.post("/api/players")
@pin_required(CHANGING)
def add_player():
    player = roster().add(_field("name"))
    return _listing(201, player=player.as_dict())


@bp.post("/api/players/<int:player_id>/rename")
@pin_required(CHANGING)
def rename_player(player_id: int):
    try:
        player = roster().rename(player_id, _field("name"))
    except NoSuchPlayer as exc:
        raise ApiError(404, exc.template, **exc.params) from None
    return _listing(player=player.as_dict())


@bp.post("/api/players/<int:player_id>/merge")
@pin_required(CHANGING)
def merge_player(player_id: int):
    try:
        player = roster().merge(player_id, _field("into"))
    except NoSuchPlayer as exc:
        raise ApiError(404, exc.template, **exc.params) from None
    return _listing(player=player.as_dict())
