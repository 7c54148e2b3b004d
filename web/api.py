"""The fixed routes of the table: state, live events, actions."""

from __future__ import annotations

import json
import math

from flask import Blueprint, Response, jsonify, request

from companion import games as game_registry
from companion.i18n import N_, gettext
from companion.limits import MAX_STORED_INT
from companion.roster import SEEDED, Roster
from companion.text import unsafe_char

from .app import companion
from .auth import SEAT_ENTRIES, may_enter
from .errors import ApiError, request_language
from .guards import pin_required, seat_or_pin

bp = Blueprint("api", __name__)


@bp.get("/api/state")
def state():
    response = jsonify(companion().session.public())
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/notices")
def notices():
    """What the table must know (a damaged game store was repaired, the
    buttons do not work...), translated, oldest first.  The box shows the
    same notices; OK on the box dismisses one for everyone."""
    response = jsonify(companion().public_notices(request_language()))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/api/notices/<int:index>/dismiss")
@pin_required(N_("dismissing a notice needs the table PIN (header X-Table-Pin)"))
def dismiss_notice(index: int):
    """Dismiss notice ``index`` (as listed by ``GET /api/notices``) for the
    whole table, as OK on the box does.  Needs the PIN."""
    c = companion()
    with c.session.lock:
        if not 0 <= index < len(c.session.table.notices):
            raise ApiError(404, N_("there is no notice {index}"), index=index)
        c.session.update_table(lambda table: table.notices.pop(index))
    response = jsonify(c.public_notices(request_language()))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/games")
def games():
    """What a "new game" form needs: each game's id, title, seat counts,
    options, and the move through which a seat enters its own secret."""
    language = request_language()
    listed = []
    for game_id in game_registry.available():
        game = game_registry.get(game_id)
        listed.append({
            "id": game.id,
            "title": gettext(game.title, language),
            "min_players": game.min_players,
            "max_players": game.max_players,
            "options": {name: _field(spec) for name, spec in game.options.items()},
            "seat_entries": sorted(getattr(game, "seat_entries", None) or SEAT_ENTRIES.get(game.id, ())),
        })
    response = jsonify(games=listed, names=offered_names(companion().session))
    response.headers["Cache-Control"] = "no-store"
    return response


def offered_names(session) -> list[str]:
    """The names a new-game form offers: the table's roster, the last game's
    players first (companion/roster.py).  The settings' names (the demo
    names that seed an empty roster) that never played are left out once the
    table has names of its own: they stay on the roster, out of the way."""
    players = Roster(session).players()
    with session.lock:
        demo = {r.id for r in session.store.roster() if r.added == SEEDED and r.last is None}
    own = [p.name for p in players if p.id not in demo]
    return own or [p.name for p in players]


def _field(spec) -> dict:
    """A field spec as JSON: its kind, whether required, its default and bounds."""
    out = {"kind": type(spec).__name__.lower().rstrip("_"), "required": bool(spec.required)}
    default = spec.default
    try:
        json.dumps(default)
    except (TypeError, ValueError):
        default = None
    out["default"] = default
    for attr, key in (("lo", "min"), ("hi", "max"), ("choices", "choices")):
        value = getattr(spec, attr, None)
        if value is not None:
            out[key] = list(value) if key == "choices" else value
    return out


@bp.get("/api/events")
def events():
    c = companion()
    return open_stream(c.events)


def open_stream(hub) -> Response:
    """An event stream from ``hub``, or a 503 when the cap is reached."""
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    if request.method == "HEAD":      # headers only: never hold a thread for a HEAD
        return Response(b"", mimetype="text/event-stream", headers=headers)
    stream = hub.open(request.environ)
    if stream is None:
        if hub.closed:
            raise ApiError(503, N_("the companion is shutting down"), headers={"Retry-After": "2"})
        raise ApiError(503, N_("too many live connections ({n}): close a page or try again later"),
                       headers={"Retry-After": "10"}, n=hub.slots.limit)
    return Response(stream, mimetype="text/event-stream", headers=headers)


@bp.post("/api/actions")
def actions():
    """Submit one action: anything with the PIN; with a seat token, only
    that seat's own bid or secret (:func:`web.auth.may_enter`).  The
    credential is checked before the body is read."""
    c = companion()
    seat = seat_or_pin()
    action = json_body(required=True)
    if seat is None:            # the PIN
        return _submit(c, action)
    with c.session.lock:     # the check and the submit see the same state
        if not may_enter(c.session.game, c.session.timeline.state, action, seat):
            raise ApiError(403, N_("a seat token can only enter its own seat's bid or secret; "
                                   "other actions need the table PIN"))
        return _submit(c, action, source="seat")


def _submit(c, action, source="web"):
    # "seat": entered by that seat's own phone, the one entry its token may read back.
    state = c.session.submit(action, source=source)
    response = jsonify(state)
    response.headers["Cache-Control"] = "no-store"
    return response


# -- request helpers shared by the blueprints ---------------------------------
# (the credentials a request shows are web/guards.py's)

class _Refused(ValueError):
    """A JSON number the box will not take; raised from inside ``json.loads``."""

    def __init__(self, template: str, **params):
        super().__init__(template)
        self.template, self.params = template, params


def _no_constants(name):
    raise _Refused(N_("the request body holds {value}, which JSON does not allow: "
                      "NaN and Infinity are not numbers"), value=name)


def _stored_int(text: str) -> int:
    # 19 digits hold every 64-bit integer: never run int() on a longer string.
    if len(text.lstrip("-")) > 19 or abs(int(text)) > MAX_STORED_INT:
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise _Refused(N_("the number {value} is too large: the box keeps whole numbers "
                          "from -{max} to {max}"), value=shown, max=MAX_STORED_INT)
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):           # 1e400
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise _Refused(N_("the number {value} is too large"), value=shown)
    return value


def refuse_unsafe_text(value, where: str = "") -> None:
    """Refuse a control character (C0, DEL, C1) or a direction override in
    any string of a request body (player names, seat labels...): it would
    reach a terminal or reorder a name on every screen (companion/text.py)."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = unsafe_char(item)
            if found:
                raise ApiError(400, N_("'{where}' holds the character {char}: names and labels must not "
                                       "hold control or text-direction characters"),
                               where=path or "body", char=found)
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack.append((key, path or "body"))
                stack.append((inner, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))


def json_body(required: bool):
    """The request body as JSON (any value; the caller checks its shape).
    An empty body is None when not ``required``.  Numbers are what the store
    keeps (64-bit whole numbers, finite decimals) and strings hold no
    control or direction characters: anything else is a clear 400."""
    kind = request.mimetype
    raw = request.get_data(cache=False)     # 413 beyond MAX_CONTENT_LENGTH
    if not raw.strip():
        if required:
            raise ApiError(400, N_("the request body is empty: send one action as a JSON object"))
        return None
    if kind and kind != "application/json" and not kind.endswith("+json"):
        raise ApiError(415, N_("send JSON with the header Content-Type: application/json"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApiError(400, N_("the request body is not UTF-8 text")) from None
    try:
        body = json.loads(text, parse_constant=_no_constants, parse_int=_stored_int, parse_float=_finite_float)
    except _Refused as exc:
        raise ApiError(400, exc.template, **exc.params) from None
    except (ValueError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deep or too large"
        where = f" (line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ApiError(400, N_("the request body is not valid JSON: {detail}{where}"),
                       detail=detail, where=where) from None
    refuse_unsafe_text(body)
    return body
