"""The Update page and its API (docs/api.md, "Updates").

    GET  /update          the page: the last update's result, a form to send a bundle
    GET  /api/update      the last update's result: {state, to, back, text}
    POST /api/update      a bundle (the request body, X-Table-Pin): 202 {request}

The PIN lets a phone *ask* for an update and nothing more: the bundle is
dropped into the service's inbox (appliance/updates.py) and the root unit
checks its signature against the box's release keys before anything in it
runs.  The result is public like everything else the box shows: it holds no
secret and does not depend on the PIN.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from appliance import updates
from companion.i18n import N_, gettext

from .app import companion
from .errors import ApiError, request_language
from .guards import pin_required

bp = Blueprint("update", __name__)
MAX_BUNDLE_BYTES = 128 * 1024 * 1024     # a release with its wheels is ~33 MB: room to grow, not to fill a card
BUSY = ("verifying", "installing", "checking")


def _layout() -> updates.Layout:
    config = companion().config
    lay = updates.Layout()
    lay.data = Path(config.get("data_dir") or lay.data)
    lay.root = Path(config.get("update_state") or lay.root)
    return lay


def _status(language: str) -> dict:
    lay = _layout()
    status = updates.read_json(lay.status) or {}
    text = updates.status_text(status, lambda s: gettext(s, language)) or gettext(N_("No update yet."), language)
    state = status.get("state") or "none"
    if lay.request.exists() and state not in BUSY:
        state, text = "asked", gettext(N_("Update asked for: waiting for the installer…"), language)
    return {"state": state, "to": status.get("to"), "back": status.get("back"), "text": text}


@bp.get("/api/update")
def update_status():
    response = jsonify(_status(request_language()))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/api/update")
@pin_required(N_("an update needs the table PIN (header X-Table-Pin)"))
def update_upload():
    if _status("en")["state"] in (*BUSY, "asked"):
        raise ApiError(409, N_("an update is already under way: wait for its result"))
    request.max_content_length = MAX_BUNDLE_BYTES
    request_id = secrets.token_hex(8)
    try:
        updates.request_update(_layout(), request.stream, request_id)
    except RequestEntityTooLarge:
        raise ApiError(413, N_("the bundle is too large (at most {limit} bytes)"), limit=MAX_BUNDLE_BYTES) from None
    except ClientDisconnected:
        raise ApiError(400, N_("the upload was cut short: send the bundle again")) from None
    except OSError as exc:
        raise ApiError(507, N_("the box cannot keep the bundle: {reason}"), reason=exc.strerror or str(exc)) from None
    response = jsonify(request=request_id, **_status(request_language()))
    response.status_code = 202
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/update")
def update_page():
    from .history import _page

    return _page("update.html", "update", boot={"update": _status(request_language())},
                 status=_status(request_language()))
