"""Updates as the service sees them: where everything is, asking for one, saying how it went.

The installer itself runs as root (:mod:`appliance.root.updater`); this is
the side the web page, the panel and ``companion update`` use.  How an update goes:

The layout (``Layout``; a fake root in the tests)::

    /opt/companion/releases/<version>/src      the release's source tree (units, install.sh, lock)
    /opt/companion/releases/<version>/venv     its own environment, from the bundle's wheels
    /opt/companion/current  -> releases/<v>    what the units run; switched by one rename(2)
    /opt/companion/previous -> releases/<v>    the version before, kept
    /var/lib/companion/update/                 the service's inbox: incoming.bundle, request
    /var/lib/companion-update/                 root's: pending.json, status.json, backups/, work/
    /etc/companion/release-keys                the release keys a bundle must be signed by

The service (not root) only drops a bundle into its inbox and asks
(``request``).  The root unit (``companion update --worker``) copies the
bundle into root's folder, checks its signature there (never trusting a
check the service made), unpacks it beside the current release, stops the
service, copies the store aside, runs the new version's self-check (which
migrates the store forward), switches ``current`` and starts the service;
the new version must then report ready and stay up (:data:`SETTLE_S`)
within :data:`HEALTH_S`, with fewer than :data:`MAX_CRASHES` restarts, or
the installer switches back and brings back the pre-update store.

A power cut at any moment: ``pending.json`` names the step reached, written
(and its folder) durably before each step that changes the box.  At boot,
before the service starts, ``companion update --recover`` reverts any
update that had not yet started the new version; one that had is checked
again by the worker once the service runs, and kept or reverted.  So the
box always comes back on exactly one of the two versions, with the store
that version wrote.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from companion.i18n import N_, _, gettext

from .durable import fsync_dir, read_json

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
    marker = property(lambda self: self.root / "pending.json")
    status = property(lambda self: self.root / "status.json")
    work = property(lambda self: self.root / "work")
    backups = property(lambda self: self.root / "backups")



# -- the service's side: ask for an update ----------------------------------------
def request_update(layout: Layout, src, request_id: str) -> None:
    """Drop a bundle into the inbox and ask the root unit (companion-update.path)
    to install it.  ``src`` is a path or a binary file object.

    Both are on the card when this returns (the phone is told 202 then): a
    power cut a moment later leaves the request asked for, and the root unit
    takes it at the next boot, rather than an update that vanished and a
    page still showing the update before it."""
    layout.inbox.mkdir(parents=True, exist_ok=True)
    part = layout.inbox / "incoming.bundle.part"
    with open(part, "wb") as out:
        if isinstance(src, (str, os.PathLike)):
            with open(src, "rb") as bundle:
                shutil.copyfileobj(bundle, out, 1 << 20)
        else:
            shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
        os.fsync(out.fileno())
    os.replace(part, layout.incoming)
    tmp = layout.inbox / ".request.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(request_id)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, layout.request)
    fsync_dir(layout.inbox)


def status_text(status: dict | None, gettext=lambda s: s) -> str | None:
    """The status as one line for the panel, the page and the command line."""
    if not status:
        return None
    state = status.get("state")
    to, back = status.get("to") or "?", status.get("back") or "?"
    if state == "failed":
        reason = gettext(status.get("reason") or "")
        try:
            reason = reason.format(**(status.get("params") or {}))
        except (KeyError, IndexError, ValueError):
            pass
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
    if not status or status.get("state") != "failed" or not status.get("to"):
        return None
    stamp = str(status.get("time"))
    seen = layout.inbox / "seen"
    try:
        if seen.read_text("utf-8") == stamp:
            return None
        layout.inbox.mkdir(parents=True, exist_ok=True)
        seen.write_text(stamp, encoding="utf-8")
    except FileNotFoundError:
        layout.inbox.mkdir(parents=True, exist_ok=True)
        seen.write_text(stamp, encoding="utf-8")
    except OSError:
        pass
    reason = gettext(status.get("reason") or "")
    try:
        reason = reason.format(**(status.get("params") or {}))
    except (KeyError, IndexError, ValueError):
        pass
    return (N_("Update to {to} failed: back on {back}: {reason}"),
            {"to": status.get("to"), "back": status.get("back") or "?", "reason": reason})


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
