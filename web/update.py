"""The Update page and its API (docs/api.md, "Updates").

    GET  /update              the page: this version, the last update's result, and
                              for the owner: send a bundle, go back, the release keys
    GET  /api/update          {state, to, back, text, version, previous, installer, accepts_updates}
    POST /api/update          a bundle (the request body; owner): 202 {request, ...}
    POST /api/update/back     back to the previous version (owner): 202 {request, ...}
    GET  /api/update/keys     the release keys' fingerprints: {keys, accepts_updates, result}
    POST /api/update/keys     {"add": "ed25519 BASE64 comment"} or {"remove": "SHA256:..."} (owner): 202 {request}

What runs on the box is the owner's, not the table's: the PIN is on the
panel for everyone, so every route here that changes something asks for
the owner's password (header ``X-Owner-Password``, web/guards.py
``owner_required``) and the PIN alone is refused with 401.  Even then the
service only *asks*: a bundle is dropped into its inbox
(appliance/updates.py) and the root unit checks its signature against the
box's release keys before anything in it runs; going back and changing the
keys are requests that root carries out after checking the password again
against its own copy (appliance/root/owner.py).  So a service that was
broken into cannot install, go back or add a key by itself.

What the box shows is public like everything else: the version, the result,
the keys' fingerprints (never anything secret); none of it depends on the
PIN or the owner's password (tests/two_worlds.py).

A computer with no installer (the laptop demo: no ``/opt/companion/current``)
says that updates are installed on the box itself, and refuses the routes
that would ask an installer that is not there (409), so no page waits for
an answer that cannot come.  ``update_prefix``, ``update_state`` and
``release_keys`` in the app's config move the installer's folders and the
key list (the tests' fake root).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from appliance import release_keys, updates
from companion import __version__
from companion.i18n import N_, gettext

from .app import companion
from .errors import ApiError, request_language
from .guards import owner_header, owner_required

bp = Blueprint("update", __name__)
MAX_BUNDLE_BYTES = 128 * 1024 * 1024     # a release with its wheels is ~33 MB: room to grow, not to fill a card
BUSY = ("verifying", "installing", "checking")

# Texts the page's script shows (boot.texts; tests/box/test_i18n.py finds them here).
JS_TEXTS = [N_("Enter the owner password first."),
N_("Choose an update bundle first."),
            N_("Paste a key line first."), N_("Sending…"), N_("The box does not answer: try again."),
            N_("Asked: the box changes its release keys…"), N_("The release keys were changed."),
            N_("The release keys were not changed."), N_("Remove"), N_("no comment"),
            N_("No release key: this box accepts no update.")]


def _layout() -> updates.Layout:
    config = companion().config
    lay = updates.Layout()
    lay.data = Path(config.get("data_dir") or lay.data)
    lay.root = Path(config.get("update_state") or lay.root)
    lay.prefix = Path(config.get("update_prefix") or lay.prefix)
    lay.keys = Path(config.get("release_keys") or lay.keys)
    return lay


def _release_of(link: Path) -> str | None:
    """The release a link of the installer points at (``releases/<v>``):
    read here, not through appliance.root, which the service never imports."""
    try:
        return Path(os.readlink(link)).name
    except OSError:
        return None


def _installed(lay: updates.Layout) -> bool:
    return os.path.lexists(lay.current)


def _status(language: str) -> dict:
    lay = _layout()
    status = updates.read_json(lay.status) or {}
    text = updates.status_text(status, lambda s: gettext(s, language)) or gettext(N_("No update yet."), language)
    state = status.get("state") or "none"
    if state not in BUSY:
        if lay.request.exists():
            state, text = "asked", gettext(N_("Update asked for: waiting for the installer…"), language)
        elif lay.back_request.exists():
            state, text = "asked", gettext(N_("Back to the previous version asked for: waiting for the "
                                              "installer…"), language)
    installer = _installed(lay)
    # The installer names a release by its bundle's version, and so do its
    # results ("Updated to 2.0 (was 1.0)"): the link it switches says which
    # runs.  Without an installer, the code's own version.
    version = (_release_of(lay.current) if installer else None) or __version__
    return {"state": state, "to": status.get("to"), "back": status.get("back"), "text": text,
            "version": version, "previous": _release_of(lay.previous) if installer else None,
            "installer": installer, "accepts_updates": release_keys.accepts_updates(lay.keys)}


def _no_store(response, status: int = 200):
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response


NO_INSTALLER = N_("this computer has no installer: updates are installed on the box itself")


def _ready_to_ask(lay: updates.Layout) -> None:
    """Refuse what no installer would answer: none on this computer, or one busy."""
    if not _installed(lay):
        raise ApiError(409, NO_INSTALLER)
    if _status("en")["state"] in (*BUSY, "asked"):
        raise ApiError(409, N_("an update is already under way: wait for its result"))


def _owner_password() -> str:
    # Already compared by owner_required; root compares it again with its own copy.
    return owner_header()


@bp.get("/api/update")
def update_status():
    return _no_store(jsonify(_status(request_language())))


@bp.post("/api/update")
@owner_required(N_("installing an update is the owner's: send the owner password (header X-Owner-Password)"))
def update_upload():
    lay = _layout()
    _ready_to_ask(lay)
    if not release_keys.accepts_updates(lay.keys):
        raise ApiError(409, N_("this box accepts no update: add a release key first"))
    request.max_content_length = MAX_BUNDLE_BYTES
    request_id = secrets.token_hex(8)
    try:
        updates.request_update(lay, request.stream, request_id)
    except RequestEntityTooLarge:
        raise ApiError(413, N_("the bundle is too large (at most {limit} bytes)"), limit=MAX_BUNDLE_BYTES) from None
    except ClientDisconnected:
        raise ApiError(400, N_("the upload was cut short: send the bundle again")) from None
    except OSError as exc:
        raise ApiError(507, N_("the box cannot keep the bundle: {reason}"), reason=exc.strerror or str(exc)) from None
    return _no_store(jsonify(request=request_id, **_status(request_language())), 202)


@bp.post("/api/update/back")
@owner_required(N_("going back to the previous version is the owner's: send the owner password "
                   "(header X-Owner-Password)"))
def update_back():
    lay = _layout()
    _ready_to_ask(lay)
    if _release_of(lay.previous) is None:
        raise ApiError(409, N_("there is no previous version on this box to go back to"))
    try:
        request_id = updates.request_back(lay, _owner_password())
    except OSError as exc:
        raise ApiError(507, N_("the box cannot keep the request: {reason}"), reason=exc.strerror or str(exc)) from None
    return _no_store(jsonify(request=request_id, **_status(request_language())), 202)


def _keys_view(language: str) -> dict:
    """The key list by fingerprint, and root's answer to the last change
    with its reason in ``language`` (``text``)."""
    lay = _layout()
    result = release_keys.read_result(lay)
    if result is not None and isinstance(result.get("reason"), str) and result["reason"]:
        result = dict(result)
        try:
            result["text"] = gettext(result["reason"], language, **(result.get("params") or {}))
        except (KeyError, IndexError, ValueError, TypeError):
            result["text"] = gettext(result["reason"], language)
    return {"keys": release_keys.listed(lay.keys), "accepts_updates": release_keys.accepts_updates(lay.keys),
            "result": result}


@bp.get("/api/update/keys")
def keys_list():
    return _no_store(jsonify(_keys_view(request_language())))


KEYS_BODY = N_("send a JSON object with one of: \"add\" (a key line: ed25519 BASE64 comment) "
               "or \"remove\" (a key's fingerprint: SHA256:…)")


@bp.post("/api/update/keys")
@owner_required(N_("changing the release keys is the owner's: send the owner password (header X-Owner-Password)"))
def keys_change():
    from .api import json_body

    body = json_body(required=False)
    if not isinstance(body, dict) or len(body) != 1 or not set(body) <= {"add", "remove"}:
        raise ApiError(400, KEYS_BODY)
    lay = _layout()
    if not _installed(lay):
        raise ApiError(409, NO_INSTALLER)
    # Checked here for a clear answer at once; root checks the line again.
    try:
        if "add" in body:
            change = {"add": release_keys.check_key_line(body["add"])}
        else:
            change = {"remove": release_keys.check_fingerprint(body["remove"])}
    except release_keys.ReleaseKeyError as exc:
        raise ApiError(400, exc.template, **exc.params) from None
    try:
        request_id = release_keys.request_change(lay, _owner_password(), **change)
    except OSError as exc:
        raise ApiError(507, N_("the box cannot keep the request: {reason}"), reason=exc.strerror or str(exc)) from None
    return _no_store(jsonify(request=request_id, **_keys_view(request_language())), 202)


@bp.get("/update")
def update_page():
    from .pages import _common, _html

    language = request_language()
    status = _status(language)
    keys = _keys_view(language) if status["installer"] else {"keys": [], "accepts_updates": False, "result": None}
    context = _common("update", update=status, keys=keys)
    context["boot"]["texts"].update({k: gettext(k, language) for k in JS_TEXTS})
    return _html("update.html", status=status, keys=keys["keys"], **context)
