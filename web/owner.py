"""The owner's routes: what changes the system, not the game (docs/api.md, "The owner").

    GET  /api/owner                   public: is there an owner, SSH's state,
                                      whether the box asked for a reset
    POST /api/owner/ssh-key           X-Owner-Password; {"ssh_key": "ssh-ed25519 …"}:
                                      root's SSH for this key (replacing the owner's last one)
    POST /api/owner/ssh-key/remove    X-Owner-Password: the key gone, SSH off
    POST /api/owner/reset             X-Owner-Password: confirm "Reset settings"
                                      asked on the box's buttons (within 10 minutes)

The owner's password is compared here (web/guards.py, ``owner_required``)
and again by root against root's own copy (appliance/root/setup_apply.py):
what this service writes can ask, never decide.  Updates, release keys and
a restore are the owner's too; their routes live with their pages
(web/update.py, web/backup.py).
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, jsonify, request

from appliance import owner
from appliance import setup as core
from companion.i18n import N_

from .app import companion
from .errors import ApiError
from .guards import owner_required
from .setup import _nocache, root_request

bp = Blueprint("owner", __name__)


def _folder() -> Path:
    folder = companion().config.get("data_dir")
    if not folder:
        raise ApiError(409, N_("this box keeps no settings (no data folder)"))
    return Path(folder)


def _password() -> str:
    from .guards import owner_header

    return owner_header()


def view() -> dict:
    folder = companion().config.get("data_dir")
    system = (core.read_json(Path(folder) / core.SYSTEM_STATUS) if folder else None) or {}
    return {"owner": bool(folder) and owner.read_hash(folder) is not None,
            "ssh": system.get("ssh") if isinstance(system, dict) else None,
            "reset_asked": bool(folder) and core.reset_asked(folder)}


@bp.get("/api/owner")
def owner_state():
    return _nocache(jsonify(view()))


@bp.post("/api/owner/ssh-key")
@owner_required(N_("SSH keys are the owner's: send the owner password (header X-Owner-Password)"))
def add_ssh_key():
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) != {"ssh_key"}:
        raise ApiError(400, N_("send a JSON object with: {fields}"), fields="ssh_key")
    try:
        key = core.check_ssh_key(body["ssh_key"])
    except core.SetupError as exc:
        raise ApiError(400, exc.template, **exc.params) from None
    root_request(_folder(), core.SYSTEM_REQUEST, {"ssh_key": key, "owner_password": _password()})
    response = jsonify(asked="ssh_key", **view())
    response.status_code = 202
    return _nocache(response)


@bp.post("/api/owner/ssh-key/remove")
@owner_required(N_("SSH keys are the owner's: send the owner password (header X-Owner-Password)"))
def remove_ssh_key():
    root_request(_folder(), core.SYSTEM_REQUEST, {"ssh_remove": True, "owner_password": _password()})
    response = jsonify(asked="ssh_remove", **view())
    response.status_code = 202
    return _nocache(response)


@bp.post("/api/owner/reset")
@owner_required(N_("a reset is the owner's: send the owner password (header X-Owner-Password)"))
def confirm_reset():
    """The box's "Reset settings", confirmed: set-up mode again (the
    settings file set aside, the owner forgotten, SSH off); games, players
    and the box's Wi-Fi password stay."""
    folder = _folder()
    if not core.reset_asked(folder):
        raise ApiError(409, N_("press Menu ▸ Reset settings on the box first, then confirm here within {n} minutes"),
                       n=core.RESET_WINDOW_S // 60)
    root_request(folder, core.SYSTEM_REQUEST, {"reset": True, "owner_password": _password()})
    core.reset(folder)
    owner.forget(folder)
    response = jsonify(reset=True, **view())
    response.status_code = 202
    return _nocache(response)
