"""Updates as the service sees them: where everything is, asking for one, saying how it went.

The installer itself runs as root (:mod:`appliance.root.updater`); this is
the side the web page, the panel and ``companion update`` use.

The layout (``Layout``; a fake root in the tests)::

    /opt/companion/releases/<version>/src      the release's source tree (units, install.sh, lock)
    /opt/companion/releases/<version>/venv     its own environment, from the bundle's wheels
    /opt/companion/current  -> releases/<v>    what the units run; switched by one rename(2)
    /opt/companion/previous -> releases/<v>    the version before, kept (the one way back)
    /var/lib/companion/update/                 the service's inbox: incoming.bundle and request,
                                               back-request, keys-request (appliance/root/keys.py)
    /var/lib/companion-update/                 root's: pending.json, status.json, highest.json,
                                               backups/pre-<version>/, work/
    /etc/companion/release-keys                the release keys a bundle must be signed by

**Asking.**  The service (not root) only writes into its inbox: a bundle
and ``request`` (:func:`request_update`), or ``back-request`` with the
owner's password (:func:`request_back`); companion-update.path starts the
root worker (``companion update --worker``) for either.  Root reads that
folder as hostile: without following a link, only plain files with one
name, and whatever it writes there (the store put back) is a new file
under a random name, handed to the service on its descriptor
(:mod:`appliance.root.safefs`).  A request it will not read is removed
unread.

**An update, step by step**, and what a power cut at each step leaves
(``pending.json`` names the step reached, written durably, with its
folder, before each step that changes the box):

1. Root copies the bundle into its own ``work/`` and checks it there: the
   signature against the release keys (never a check the service made),
   the Python and the machine, and the version: **updates only go
   forward**.  A bundle must be newer (``packaging``'s versions) than the
   newest version this box has run: root's ``highest.json`` (written when
   an update is kept, and from the current release at boot and before a
   bundle is checked when it holds less), the current release and the
   previous one.  Refused, nothing has changed; a cut, nothing has changed
   either (the boot says the update was cut short).
2. Unpacked and built beside the current release, in
   ``releases/<version>`` flagged ``.unfinished`` until whole (a cut: the
   boot removes it).  ``prepared``.
3. The service stopped, the store copied aside (``backups/pre-<version>``,
   ``complete`` once whole).  ``backed-up``.
4. The new version's self-check, which may migrate the store.  ``checking``.
5. ``previous`` and ``current`` switched, one rename each.  ``switching``,
   then ``switched``; the service started.
6. The new version must report ready and stay up (:data:`SETTLE_S`) within
   :data:`HEALTH_S`, with fewer than :data:`MAX_CRASHES` restarts: then it
   is kept (``highest.json`` raised, old releases and copies tidied), else
   rolled back: the links back, the new release removed, the new version's
   store kept beside the data (``rolled-back-<version>-<stamp>.db``: hard
   links, nothing of it read by root), the pre-update store back, the
   service started; that start replays onto the store what the new version
   acknowledged (:mod:`companion.carry_back`).

A cut before step 5 ends: at boot, before the service starts, ``companion
update --recover`` reverts the update (the links, the new release, the
store if its copy was whole).  A cut in step 6: the new version boots,
and the worker checks it again and keeps or reverts it.  Since after the
switch ``current`` is the new release, whose command the units run, both
hand themselves over (``execv``) to the release the pending update came
from: the code that began an update finishes it, never the code under test.

**A failed update never leaves the box stopped.**  Whatever fails once the
service is stopped (a full card, a folder that cannot be written, a
damaged release, a self-check or a switch that raises) is rolled back as
above, every step of it tried even when another fails (and the failed ones
tried once more after the rest has freed room), and the service started;
the status is ``failed`` with the reason.  If something could not be put
back, ``pending.json`` stays and the next start tries again.  So the box
always comes back on exactly one of the two versions, whole, with the
store that version wrote.

**Back to the previous version**, the only way down: the owner's password
is checked by root against its own record (appliance/root/owner.py); then
the service stopped, ``current`` switched to the previous release and
``previous`` to the one left (the links first: if one cannot be switched,
nothing else changes), the store copied aside before the update to the
version left brought back if that copy is whole (the games played since
are lost: the page says so), the service started; status ``done`` with
``kind: "back"``.  ``highest.json`` is not lowered: the box goes forward
again only to a version newer than any it has run.  A cut while going back
(``pending.json`` of kind ``back``): the boot finishes it.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from companion import durable
from companion.durable import read_json, write_json
from companion.i18n import N_, _, gettext

#: The status's ``kind`` of a step back to the previous version (an update's status has none).
BACK = "back"

@dataclass
class Layout:
    prefix: Path = Path("/opt/companion")
    data: Path = Path("/var/lib/companion")
    root: Path = Path("/var/lib/companion-update")
    keys: Path = Path("/etc/companion/release-keys")

    def __post_init__(self):
        self.prefix, self.data, self.root, self.keys = map(Path, (self.prefix, self.data, self.root, self.keys))

    releases = property(lambda self: self.prefix / "releases")
    current = property(lambda self: self.prefix / "current")
    previous = property(lambda self: self.prefix / "previous")
    inbox = property(lambda self: self.data / "update")
    incoming = property(lambda self: self.data / "update" / "incoming.bundle")
    request = property(lambda self: self.data / "update" / "request")
    back_request = property(lambda self: self.data / "update" / "back-request")
    marker = property(lambda self: self.root / "pending.json")
    status = property(lambda self: self.root / "status.json")
    work = property(lambda self: self.root / "work")
    backups = property(lambda self: self.root / "backups")
    highest = property(lambda self: self.root / "highest.json")



# -- the service's side: ask for an update ----------------------------------------
def request_update(layout: Layout, src, request_id: str) -> None:
    """Drop a bundle into the inbox and ask the root unit (companion-update.path)
    to install it.  ``src`` is a path or a binary file object.

    Both are on the card when this returns (the phone is told 202 then): a
    power cut a moment later leaves the request asked for, and the root unit
    takes it at the next boot, rather than an update that vanished and a
    page still showing the update before it."""
    layout.inbox.mkdir(parents=True, exist_ok=True)
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as bundle:
            durable.write(layout.incoming, bundle)
    else:
        durable.write(layout.incoming, src)
    durable.write_text(layout.request, request_id)


def request_back(layout: Layout, owner_password: str) -> str:
    """Ask the root unit to go back to the previous version (the only way
    down: a bundle must always be newer than any version the box has run);
    the request's id, which the status names once root has answered.

    The owner's password goes with it: root checks it against its own copy
    (appliance/root/owner.py) and does nothing for a wrong one.  Owner-only
    (0600) and on the card when this returns, like an update's request."""
    request_id = secrets.token_hex(8)
    write_json(layout.back_request, {"request": request_id, "owner_password": owner_password}, mode=0o600)
    return request_id


def _reason(status: dict, gettext) -> str:
    reason = gettext(status.get("reason") or "")
    try:
        return reason.format(**(status.get("params") or {}))
    except (KeyError, IndexError, ValueError):
        return reason


def status_text(status: dict | None, gettext=lambda s: s) -> str | None:
    """The status as one line for the panel, the page and the command line."""
    if not status:
        return None
    state = status.get("state")
    to, back = status.get("to") or "?", status.get("back") or "?"
    if status.get("kind") == BACK:
        if state == "failed":
            return gettext(N_("Could not go back to the previous version: still on {back}: {reason}")).format(
                back=back, reason=_reason(status, gettext))
        if state == "done":
            return gettext(N_("Back on {to} (was {back}).")).format(to=to, back=back)
        if state in ("verifying", "installing", "checking"):
            return gettext(N_("Going back to {to}…")).format(to=to, back=back)
        return None
    if state == "failed":
        reason = _reason(status, gettext)
        if status.get("to"):
            return gettext(N_("Update to {to} failed: back on {back}: {reason}")).format(
                to=to, back=back, reason=reason)
        return gettext(N_("Update refused: still on {back}: {reason}")).format(back=back, reason=reason)
    if state == "done":
        return gettext(N_("Updated to {to} (was {back}).")).format(to=to, back=back)
    if state in ("verifying", "installing", "checking"):
        words = {"verifying": N_("Update: checking the bundle…"),
                 "installing": N_("Update to {to}: installing…"),
                 "checking": N_("Update to {to}: checking the new version…")}
        return gettext(words[state]).format(to=to, back=back)
    return None


def start_notice(layout: Layout, gettext=lambda s: s) -> tuple[str, dict] | None:
    """The last update's rollback, once, as a table notice (the panel and the
    phones) for the start that follows it; None if there is none to show."""
    status = read_json(layout.status)
    # A step back is asked for on the page, which says how it went.
    if not status or status.get("state") != "failed" or not status.get("to") or status.get("kind") == BACK:
        return None
    stamp = str(status.get("time"))
    seen = layout.inbox / "seen"
    try:
        if seen.read_text("utf-8") == stamp:
            return None
    except OSError:
        pass
    try:
        layout.inbox.mkdir(parents=True, exist_ok=True)
        durable.write_text(seen, stamp)
    except OSError:
        pass
    return (N_("Update to {to} failed: back on {back}: {reason}"),
            {"to": status.get("to"), "back": status.get("back") or "?", "reason": _reason(status, gettext)})


# -- companion update -------------------------------------------------------------------
WAIT_S = 30 * 60     # the command line waits at most this for the root unit's answer


def _layout(args) -> Layout:
    lay = Layout()
    if getattr(args, "data", None):
        lay.data = Path(args.data)
    return lay


def command(args) -> int:
    """``companion update``: the last result, or a bundle asked for and waited on.
    The installer's own jobs (``--worker``, ``--recover``, a bundle given by
    root at a shell) are root's, in :mod:`appliance.root.updater`."""
    lay = _layout(args)
    if args.recover or args.worker or (args.file and not args.status and os.geteuid() == 0):
        from .root.updater import command as root_command

        return root_command(lay, args)
    if args.status or not args.file:
        text = status_text(read_json(lay.status), gettext)
        print(text or _("No update yet."))
        return 0
    request = secrets.token_hex(8)
    request_update(lay, args.file, request)
    if args.no_wait:
        print(_("Update asked for: see 'companion update --status'."))
        return 0
    deadline = time.monotonic() + WAIT_S
    shown = None
    while time.monotonic() < deadline:
        status = read_json(lay.status) or {}
        if status.get("request") == request:
            text = status_text(status, gettext)
            if text != shown:
                print(text, flush=True)
                shown = text
            if status.get("state") in ("done", "failed"):
                return 0 if status["state"] == "done" else 1
        time.sleep(1)
    print(_("companion: no answer from the root unit (is companion-update.path enabled?)"), file=sys.stderr)
    return 1
