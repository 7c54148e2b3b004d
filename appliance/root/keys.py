"""The owner's change to the release keys: root's side (appliance/release_keys.py has the why).

The service writes ``keys-request`` into its inbox (``Layout.inbox``):
``{"request", "owner_password", "add": LINE}`` or ``{..., "remove":
FINGERPRINT}``.  The update worker calls :func:`serve_request`, which reads it
as hostile input:

* through appliance/root/safefs.py only (no link followed, a plain file with
  one name, bounded), and removes it before acting, so a request is served
  once whatever it holds;
* the owner's password compared with *root's* record of the owner
  (appliance/root/owner.py), never the service's copy: the service cannot
  change the keys that decide what runs as root on this box unless its owner
  asked;
* the line or fingerprint checked again with the service's own rules.

Then the list (``Layout.keys``, root's own file) is rewritten durably
(:func:`appliance.release_keys.write_list`) and the result written to
``keys-status.json`` in root's folder, which the Update page reads.

Removing the last key is allowed: it leaves a box that takes no update until
a key is added again, and that is the owner's call to make (a key that
leaked must be removable even when it is the only one).  The result says so.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from companion import durable
from appliance import release_keys as rk
from appliance.root import owner, safefs
from companion.i18n import N_

log = logging.getLogger("appliance.root.keys")

#: A request is one key line and a password: a few hundred bytes.
MAX_REQUEST = 16 * 1024

UNREADABLE = N_("the request to change the release keys was unreadable")
WRONG_PASSWORD = N_("wrong owner password: the release keys were not changed")
ALREADY = N_("this key was already listed: nothing changed")
TOO_MANY = N_("the box already lists {n} release keys: remove one first")
NOT_LISTED = N_("no listed release key has this fingerprint")
LAST_REMOVED = N_("the last release key was removed: this box accepts no update until a key is added")
NO_LIST = N_("the list of release keys cannot be read or written: {reason}")


def _present(folder, name: str) -> bool:
    """Whether ``name`` is in ``folder`` at all (a link, a folder...), without following anything."""
    try:
        with safefs.open_folder(folder) as dfd:
            os.stat(name, dir_fd=dfd, follow_symlinks=False)
        return True
    except OSError:
        return False


def _finish(layout, request_id: str, state: str, reason: str = "", fingerprint: str | None = None,
            **params) -> dict:
    result = {"request": request_id, "state": state, "reason": reason, "params": params,
              "fingerprint": fingerprint}
    durable.write_json(Path(layout.root) / rk.RESULT, result)
    log.info("release keys: request %s %s %s %s", request_id, state, fingerprint or "-",
             reason.format(**params) if params else reason)
    return result


def serve_request(layout, owner_dir) -> dict | None:
    """Serve the owner's pending request, if any; its result (also written
    to ``keys-status.json``), or None when there is no request."""
    raw = safefs.read_file(layout.inbox, rk.REQUEST, limit=MAX_REQUEST)
    if raw is None and not _present(layout.inbox, rk.REQUEST):
        return None
    try:
        safefs.unlink(layout.inbox, rk.REQUEST)
    except OSError as exc:          # a folder by that name: nothing to serve, and say so
        log.warning("release keys: %s", exc)
    try:
        body = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (ValueError, UnicodeError):
        body = None
    if not isinstance(body, dict):
        return _finish(layout, "-", "failed", UNREADABLE)
    request_id = body.get("request")
    request_id = request_id if isinstance(request_id, str) and rk.REQUEST_ID_RE.match(request_id) else "-"
    # The password first: without it, nothing about the list is looked at.
    if not owner.verifies(body.get("owner_password"), owner_dir):
        return _finish(layout, request_id, "failed", WRONG_PASSWORD)
    add, remove = body.get("add"), body.get("remove")
    if (add is None) == (remove is None):
        return _finish(layout, request_id, "failed", UNREADABLE)
    try:
        if add is not None:
            return _add(layout, request_id, rk.check_key_line(add))
        return _remove(layout, request_id, rk.check_fingerprint(remove))
    except rk.ReleaseKeyError as exc:
        return _finish(layout, request_id, "failed", exc.template, **exc.params)
    except OSError as exc:
        return _finish(layout, request_id, "failed", NO_LIST, reason=exc.strerror or str(exc))


def _add(layout, request_id: str, line: str) -> dict:
    raw = rk.parse_line(line)[0]
    fp = rk.fingerprint(raw)
    text = rk.read_list(layout.keys)
    have = [key for key, _ in rk.keys_in(text)]
    if raw in have:
        return _finish(layout, request_id, "done", ALREADY, fp)
    if len(set(have)) >= rk.MAX_KEYS:
        return _finish(layout, request_id, "failed", TOO_MANY, fp, n=rk.MAX_KEYS)
    if not text:
        text = rk.HEADER
    rk.write_list(layout.keys, rk.merge(text, line))
    return _finish(layout, request_id, "done", "", fp)


def _remove(layout, request_id: str, fp: str) -> dict:
    text = rk.read_list(layout.keys)
    kept, gone = [], 0
    for line in text.splitlines(keepends=True):
        found = rk.parse_line(line)
        if found is not None and rk.fingerprint(found[0]) == fp:
            gone += 1                   # every line of that key: a key listed twice goes at once
        else:
            kept.append(line)
    if not gone:
        return _finish(layout, request_id, "failed", NOT_LISTED, fp)
    left = "".join(kept)
    rk.write_list(layout.keys, left)
    if not rk.keys_in(left):
        return _finish(layout, request_id, "done", LAST_REMOVED, fp)
    return _finish(layout, request_id, "done", "", fp)
