"""The box's backup on the phones (docs/api.md, "Backup").

    GET  /backup                 the page: download a backup, restore one
    GET  /api/backup             the backup file (PIN)
    POST /api/backup/check       what the file sent as the body holds, and what a restore
                                 would replace (owner): nothing is written
    POST /api/backup/restore     restore the file sent as the body (owner)

Downloading is the table's: the PIN opens it, as it opens everything the
file holds.  Restoring replaces every game and player on the box, so it is
the owner's (header ``X-Owner-Password``, web/guards.py ``owner_required``):
the PIN is on the panel for anyone at the table, and the PIN alone is
refused with 401 before the file is looked at.

The file is :mod:`appliance.backup`'s: only what the PIN may read (the PIN
is on the box for the whole table), so its bytes are the same whatever the
secrets and the PIN (tests/web/test_two_worlds.py).  A restore is checked
whole before anything is written; a good one is staged beside the store
and the companion restarts to swap it in (the store is never replaced
under the running table): ``companion run`` finishes it at its start.
"""

from __future__ import annotations

import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from appliance.backup import MAX_BACKUP_BYTES, BackupError, backup_bytes, read_backup, stage_restore
from companion.i18n import N_

from .app import companion
from .errors import ApiError
from .guards import owner_required, pin_required

bp = Blueprint("backup", __name__)

# Texts the page's script shows (boot.texts; tests/box/test_i18n.py finds them here).
JS_TEXTS = [N_("Enter the table PIN first."), N_("Enter the owner password first."),
            N_("Choose a backup file first."), N_("Sending…"),
            N_("Downloaded."), N_("Restored {games} games: the box restarts now."),
            N_("The box does not answer: try again."),
            N_("Replace everything on this box with the backup of {date} ({games})?"),
            N_("What is on this box now is lost: {games} and {players}."),
            N_("The game at the table goes too: {game}."),
            N_("1 game"), N_("{n} games"), N_("1 player"), N_("{n} players"), N_("round {n}"), N_("hand {n}")]
RESTART_DELAY_S = 0.5           # the answer reaches the phone before the companion stops


def _data_dir() -> Path:
    return Path(companion().session.store.dir)


@bp.get("/backup")
def backup_page():
    from .pages import _common, _html
    from companion.i18n import gettext
    from .errors import request_language

    context = _common("backup")
    language = request_language()
    context["boot"]["texts"].update({k: gettext(k, language) for k in JS_TEXTS})
    return _html("backup.html", max_mb=MAX_BACKUP_BYTES // (1024 * 1024), **context)


@bp.get("/api/backup")
@pin_required(N_("a backup needs the table PIN (header X-Table-Pin)"))
def download():
    store = companion().session.store
    # Read on a connection of its own (WAL): the table goes on meanwhile.
    try:
        body, info = backup_bytes(_data_dir(), clock=store.clock)
    except BackupError as exc:
        raise ApiError(503, exc.template, **exc.params) from None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(store.clock()))
    response = Response(body, mimetype="application/zip")
    response.headers["Content-Disposition"] = f'attachment; filename="companion-{stamp}.zip"'
    response.headers["X-Companion-Backup-Games"] = str(info.games)
    response.headers["Cache-Control"] = "no-store"
    return response


@contextmanager
def _upload():
    """The request's body in a temporary file beside the store (removed
    after), bounded as a backup is: 413 beyond it."""
    request.max_content_length = MAX_BACKUP_BYTES
    with tempfile.NamedTemporaryFile(dir=_data_dir(), prefix=".upload-", suffix=".zip") as upload:
        try:
            while chunk := request.stream.read(64 * 1024):
                upload.write(chunk)
                if upload.tell() > MAX_BACKUP_BYTES:
                    raise RequestEntityTooLarge()
            if request.content_length is not None and upload.tell() > request.content_length:
                raise RequestEntityTooLarge()
        except RequestEntityTooLarge:
            raise ApiError(413, N_("the backup is too large (at most {limit} bytes)"),
                           limit=MAX_BACKUP_BYTES) from None
        upload.flush()
        yield Path(upload.name)


@bp.post("/api/backup/check")
@owner_required(N_("restoring a backup is the owner's: send the owner password (header X-Owner-Password)"))
def check():
    """What a restore of this file would bring and replace, for the page's
    one question ("the backup of 27 Nov, 12 games, replaces the 40 games on
    this box"): the file is checked whole, as a restore checks it, and
    nothing is written or staged.  The owner's, like the restore it asks
    about: a wrong password is told before the question, not after."""
    with _upload() as path:
        try:
            info, _content = read_backup(path)
        except BackupError as exc:
            raise ApiError(400, exc.template, **exc.params) from None
    session = companion().session
    with session.lock:
        games, _bytes = session.store.usage()
        players = len(session.store.roster())
    response = jsonify(backup=info.as_dict(), box={"games": games, "players": players})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/api/backup/restore")
@owner_required(N_("restoring a backup is the owner's: send the owner password (header X-Owner-Password)"))
def restore():
    data_dir = _data_dir()
    with _upload() as upload:
        try:
            info = stage_restore(upload, data_dir, now=companion().session.store.clock)
        except BackupError as exc:
            raise ApiError(409 if "under way" in exc.template else 400, exc.template, **exc.params) from None
    restart = current_app.extensions.get("companion.restart")
    if restart is not None:
        threading.Timer(RESTART_DELAY_S, restart).start()
    response = jsonify(restored=info.as_dict(), restarting=restart is not None)
    response.status_code = 202
    response.headers["Cache-Control"] = "no-store"
    return response
