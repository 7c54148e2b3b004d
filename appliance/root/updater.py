"""The root installer of updates: releases side by side, switch, health check, rollback, back.

Run by ``companion update --worker`` (companion-update.service, when the
service asks) and ``companion update --recover`` (companion-update-boot.service,
at boot).  The layout, the requests and the status texts are the service's
side, :mod:`appliance.updates`, whose docstring tells the whole path of an
update and what a power cut at each step leaves.  What holds here:

* **Root trusts only its own files.**  Everything it reads or writes in the
  service's folder (the inbox's requests and bundle, the store it copies
  aside and puts back) goes through :mod:`appliance.root.safefs`: no link
  followed, no file with a second name read, a new file under a random
  name handed over by ``fchown`` on its descriptor.  Root's own folder
  (``pending.json``, ``status.json``, ``highest.json``, ``backups/``,
  ``work/``) is root's alone.
* **Updates only go forward.**  A bundle must be newer than every version
  the box has run (root's ``highest.json``, the current and the previous
  release), or it is refused before anything changes; the one way down is
  going back to the previous version (:meth:`Installer.back`), with the
  owner's password, and it never lowers the record.
* **A failed update never leaves the box stopped.**  Whatever fails once the
  service is stopped (a full card, a damaged release, a self-check that
  raises), the box is put back on a whole version and started, and the
  status says why; each step of going back is tried even if another failed.
* **The code that began an update finishes it.**  After a cut during the
  health check ``current`` is the new release, whose code the units would
  run: :func:`run_from_old_code` hands the job to the release the update
  came from.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from companion import carry_back, durable
from companion.durable import fsync_dir, read_json, switch_link, write_json
from companion.errors import CompanionError
from companion.i18n import N_, gettext

from .. import bundle as bundles
from .. import envreuse
from ..updates import BACK, Layout, status_text
from . import owner as owners
from . import safefs

log = logging.getLogger("appliance.root.updater")

HEALTH_S = 180       # the new version reports ready and stays up within this
SETTLE_S = 15        # up with no restart for this long after it reported ready
MAX_CRASHES = 3      # restarts of the new version that make the installer go back
UNFINISHED = ".unfinished"   # in a release folder still being unpacked and built
STORE_FILES = ("companion.db", "companion.db-wal")

# What the service drops into its inbox (Layout.inbox) for root.
REQUEST, BUNDLE, BACK_REQUEST = "request", "incoming.bundle", "back-request"
#: Set when a process hands its job to the release an update came from: the
#: one it starts does not hand it on again.
FROM_ENV = "COMPANION_UPDATE_FROM"

# The steps of an update, in order, as pending.json records them.
PREPARED = "prepared"        # unpacked and built beside the current release; nothing changed yet
BACKED_UP = "backed-up"      # the service is stopped and its store copied aside
CHECKING = "checking"        # the new version's self-check may be migrating the store
SWITCHING = "switching"      # the links are being switched
SWITCHED = "switched"        # the new version runs (or is about to): it may have acknowledged actions
ROLLING_BACK = "rolling-back"
# Going back to the previous version (kind "back"): its one step, finished at boot if cut short.
GOING_BACK = "going-back"

FORWARD = N_("version {version} is not newer than {newest}, the newest this box has run: "
             "updates only go forward")
HALFWAY = N_("a step could not be finished: {detail}")
EARLIER = N_("an earlier update could not be undone yet: it is tried again at the next start")


def release_of(link: Path) -> str | None:
    """The release a link points at (``releases/<v>``), or None."""
    try:
        return Path(os.readlink(link)).name
    except OSError:
        return None


def _one_name(name) -> bool:
    """A release's name as root's own records give it: one plain path component."""
    return isinstance(name, str) and bool(name) and "/" not in name and name not in (".", "..")


def _detail(exc: BaseException) -> str:
    """What went wrong, in a line: an OS error's own text ("No space left on device")."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return (str(exc) or type(exc).__name__)[:300]


def _try(what: str, step, *args) -> Exception | None:
    """Run one step of a cleanup or of going back; its error, logged, rather than
    raised, so that one step that fails does not keep the others from running."""
    try:
        step(*args)
    except Exception as exc:          # noqa: BLE001 (a full card, a damaged release, a bug: the box comes first)
        log.warning("update: %s failed: %s", what, _detail(exc))
        return exc
    return None


def _two_passes(steps) -> dict:
    """Each ``(name, step)`` tried, then the ones that failed tried once more
    after the others (on a full card, a release removed frees the room a
    link or the store needed); the errors of those that failed twice."""
    failed = {name: exc for name, step in steps if (exc := _try(name, step)) is not None}
    return {name: exc for name, step in steps if name in failed and (exc := _try(name, step)) is not None}


# -- which version is newer ------------------------------------------------------
_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def version_key(text):
    """A version, comparable with another, or None when it cannot be read:
    such a version cannot be shown to be newer, so a bundle naming one is
    refused (and a release named so, ``legacy``, weighs nothing)."""
    if not isinstance(text, str):
        return None
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        # packaging comes with pip's and the tests' tools, not with every
        # box's environment: without it, dotted numbers only ("2.0" == "2").
        if not _PLAIN.fullmatch(text):
            return None
        parts = [int(part) for part in text.split(".")]
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()
        return tuple(parts)
    try:
        return Version(text)
    except InvalidVersion:
        return None


# -- the store's pre-update copy ----------------------------------------------
def backup_store(data_dir: Path, dest: Path) -> None:
    """Copy the store (the service stopped) to ``dest``, durably.  The one place
    that knows what "the store" is for an update: a fuller backup can take its place.

    The store's files are the service's: read without following a link and
    only as plain files with one name, so that a link planted in their place
    cannot bring a file of root's into root's copy (and from there, by a
    rollback, into the service's folder).  Such a file makes the copy fail,
    and the update with it."""
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in STORE_FILES:
        try:
            safefs.copy_out(data_dir, name, dest / name)
        except FileNotFoundError:
            continue
    durable.write(dest / "complete", b"")
    fsync_dir(dest.parent)


def keep_new_store(data_dir: Path, version: str | None, clock=time.time) -> str | None:
    """Before a rollback puts the pre-update copy back: the store the new
    version wrote (the service stopped) kept beside it, as it is, for the
    version the box goes back to, which replays onto its own store what the
    new version acknowledged meanwhile (:mod:`companion.carry_back`).

    Two more names for the service's own files (hard links, in its folder,
    made without following a link: :func:`safefs.keep_aside`): no copy, so
    a full card does not stop it, and root reads nothing of them.  Done
    again after a cut, it finds the files already kept.  The name kept, or
    None when there is no store."""
    version = version if _one_name(version) else "unknown"
    stamp = int(clock())
    for later in range(10):          # a name already taken (the same second): the next one
        name = f"{carry_back.PREFIX}{version}-{stamp + later}.db"
        try:
            kept = safefs.keep_aside(data_dir, "companion.db", name)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{carry_back.PREFIX}{version}-{stamp}.db: taken")
    if kept is not None:
        # Its write-ahead log under the name SQLite looks for beside it: the
        # new version's last actions may be only there.
        safefs.keep_aside(data_dir, "companion.db-wal", kept + "-wal", anywhere=False)
    return kept


def restore_store(src: Path, data_dir: Path) -> None:
    """Put the pre-update copy back (the service stopped), owned like the data folder.

    The store's WAL (and its index) beside the target go first: a WAL that is
    not the copy's must never be replayed into it, even if what follows is
    cut short.  Each file of the copy then comes in as a new file under a
    random name, handed to the folder's owner on its descriptor and renamed
    over the old name (:func:`safefs.copy_in`): nothing the service planted
    there is written through."""
    for name in ("companion.db-wal", "companion.db-shm"):
        safefs.unlink(data_dir, name)
    for name in STORE_FILES:
        if (src / name).exists():
            safefs.copy_in(src / name, data_dir, name)


# -- what the installer asks of the system --------------------------------------
class SystemdSystem:
    """The real box: systemd, the service's user, pip from the bundle's wheels."""

    unit = "companion.service"
    user = "companion"

    def __init__(self, layout: Layout, clock=time.monotonic, sleep=time.sleep):
        self.layout, self.clock, self.sleep = layout, clock, sleep

    def build_env(self, release: Path, wheels: Path, running: Path | None = None) -> None:
        """The release's own environment: exactly the bundle's wheels, no network.

        What the running release (``running``) already has of those wheels,
        file for file, is carried over (:mod:`appliance.envreuse`); pip
        installs the rest, run from the new environment itself or, before it
        has one, from the bundle's own pip wheel.
        """
        # The base interpreter, not this venv's: the new venv must not lean on the old one.
        base = getattr(sys, "_base_executable", None) or sys.executable
        env = release / "venv"
        subprocess.run([base, "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True)
        files = sorted(wheels.glob("*.whl"))
        left = envreuse.carry_over(files, running / "venv", env) if running is not None else files
        python, site = str(env / "bin/python"), envreuse.site_packages(env)
        if site is not None and (site / "pip" / "__init__.py").is_file():
            pip = [python, "-m", "pip"]
        else:
            own = [w for w in files if w.name.startswith("pip-")]
            if own:
                pip = [python, str(own[0] / "pip")]      # pip runs from its wheel, and installs itself
                left = sorted(set(left) | {own[0]})
            else:
                subprocess.run([python, "-m", "ensurepip"], check=True, capture_output=True)
                pip = [python, "-m", "pip"]
        if left:
            done = subprocess.run([*pip, "install", "--no-index", "--no-deps", "--no-cache-dir",
                                   "--disable-pip-version-check", "-q", *map(str, left)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise CompanionError(N_("the new version's environment could not be built: {detail}"),
                                     detail=_last_line(done.stderr))
        envreuse.note_hashes(env)      # what the next update's carry-over checks the compiled files by
        # pip and the links write through the page cache: a card that loses
        # power keeps only what was flushed, and the release is marked whole
        # (and may be switched to) right after this.
        os.sync()

    def stop(self) -> None:
        subprocess.run(["systemctl", "stop", self.unit], check=False, capture_output=True)

    def start(self) -> None:
        subprocess.run(["systemctl", "reset-failed", self.unit], check=False, capture_output=True)
        subprocess.run(["systemctl", "start", "--no-block", self.unit], check=False, capture_output=True)

    def self_check(self, release: Path) -> str | None:
        try:
            return self._self_check(release)
        except subprocess.TimeoutExpired:
            return f"no answer within {HEALTH_S} s"
        except OSError as exc:
            return exc.strerror or str(exc)

    def _self_check(self, release: Path) -> str | None:
        done = subprocess.run(["runuser", "-u", self.user, "--", str(release / "venv/bin/companion"),
                               "self-check", "--data", str(self.layout.data)],
                              # The data folder: the service user's, writable (lgpio opens a
                              # pipe in the working folder at import, as the unit's note says).
                              capture_output=True, text=True, timeout=HEALTH_S, cwd=str(self.layout.data))
        return None if done.returncode == 0 else _last_line(done.stderr or done.stdout) or f"exit {done.returncode}"

    def _show(self) -> dict:
        out = subprocess.run(["systemctl", "show", self.unit, "-p", "ActiveState,SubState,NRestarts,Result"],
                             capture_output=True, text=True).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def restarts(self) -> int:
        try:
            return int(self._show().get("NRestarts", 0))
        except ValueError:
            return 0

    def wait_healthy(self, since_restarts: int) -> str | None:
        """None once the service reported ready and stayed up SETTLE_S; else why not."""
        deadline = self.clock() + HEALTH_S
        up_since = None
        while True:
            props = self._show()
            try:
                crashes = int(props.get("NRestarts", 0)) - since_restarts
            except ValueError:
                crashes = 0
            if crashes >= MAX_CRASHES:
                return f"it crashed {crashes} times"
            if props.get("ActiveState") == "failed":
                return f"it failed ({props.get('Result', '?')})"
            if props.get("ActiveState") == "active" and props.get("SubState") == "running":
                up_since = up_since if up_since is not None else (self.clock(), crashes)
                if crashes != up_since[1]:
                    up_since = (self.clock(), crashes)
                if self.clock() - up_since[0] >= SETTLE_S:
                    return None
            else:
                up_since = None
            if self.clock() > deadline:
                return f"it was not up and ready within {HEALTH_S} s"
            self.sleep(1)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# -- the installer ---------------------------------------------------------------
@dataclass
class Installer:
    layout: Layout
    system: object
    machine: str = field(default_factory=platform.machine)
    python: str = f"{sys.version_info.major}.{sys.version_info.minor}"
    clock: object = time.time
    #: Root's record of the owner (appliance/root/owner.py): going back asks for the password.
    owner_dir: Path = owners.ROOT_DIR
    # The update under way as this process knows it: what pending.json holds,
    # or would hold if a full card had let it be written.
    _pending: dict | None = field(default=None, init=False, repr=False)

    # -- status for the page and the panel --
    def status(self, state: str, request: str | None = None, **fields) -> dict:
        """Write the status for the page; never raises: a status that cannot
        be written (a full card) must not keep the box from being started."""
        old = read_json(self.layout.status)
        old = old if isinstance(old, dict) else {}
        record = {"state": state, "time": self.clock(),
                  "request": request if request is not None else old.get("request"), **fields}
        try:
            write_json(self.layout.status, record)
        except OSError as exc:
            log.warning("update: the status %r could not be written: %s", state, _detail(exc))
        return record

    def _pending_marker(self) -> dict:
        if self._pending is not None:
            return self._pending
        marker = read_json(self.layout.marker)
        return marker if isinstance(marker, dict) else {}

    def _marker(self, **fields) -> dict:
        """The step reached, on the card before the step; raises if it cannot be
        written (the caller then undoes the update from what this process knows)."""
        self._pending = marker = {**self._pending_marker(), **fields}
        write_json(self.layout.marker, marker, mode=0o600)
        return marker

    def _drop_marker(self) -> None:
        durable.remove(self.layout.marker)

    def _start(self) -> None:
        _try("starting the service", self.system.start)

    # -- the newest version this box has run --
    def highest(self) -> str | None:
        record = read_json(self.layout.highest)
        value = record.get("version") if isinstance(record, dict) else None
        return value if isinstance(value, str) else None

    def _note_highest(self, version: str | None) -> None:
        """Raise root's record to ``version``; never lower it (going back does not)."""
        key = version_key(version)
        if key is None:
            return
        old = version_key(self.highest())
        if old is None or key > old:
            write_json(self.layout.highest, {"version": version})

    def _note_current(self) -> None:
        """The current release, if no update is pending: a release the box is
        only checking (after a cut, ``current`` may name it) is not one it has run."""
        if not read_json(self.layout.marker):
            _try("recording the newest version", self._note_highest, release_of(self.layout.current))

    def newest(self) -> str | None:
        """The newest version this box has run: root's record, the current and the previous release."""
        known = [(version_key(name), name) for name in (self.highest(), release_of(self.layout.current),
                                                         release_of(self.layout.previous)) if name]
        known = [(key, name) for key, name in known if key is not None]
        return max(known, key=lambda pair: pair[0])[1] if known else None

    def _check_forward(self, version: str, here: str | None) -> None:
        key = version_key(version)
        if key is None:
            raise CompanionError(N_("version {version} cannot be compared with this box's versions: "
                                    "updates only go forward"), version=version)
        newest = self.newest()
        if newest is not None and key <= version_key(newest):
            raise CompanionError(FORWARD, version=version, newest=newest)
        # Whatever the comparison says, the running release and the one kept
        # to go back to are never rebuilt in place (which removes them first).
        if version in (here, release_of(self.layout.previous)):
            raise CompanionError(FORWARD, version=version, newest=version)

    # -- the update --
    def install(self, bundle_path: Path, request: str | None = None) -> dict:
        """Install a bundle; the final status (``done`` or ``failed``).  Never
        raises for a bad bundle, and from the moment it stops the service
        whatever fails ends with the box started on a whole version."""
        lay = self.layout
        if read_json(lay.marker):     # an update cut short and not yet recovered: finish that first
            self.resume()
        self._pending = None
        here = release_of(lay.current)
        self.status("verifying", request, to=None, back=here)
        if request is not None:      # taken once its status says so: no reader sees an old result meanwhile
            _try("removing the request", safefs.unlink, lay.inbox, REQUEST)
        if read_json(lay.marker):
            return self.status("failed", to=None, back=here, reason=EARLIER, params={})
        try:
            version, release = self._prepare(Path(bundle_path), here)
        except CompanionError as exc:
            self._drop_unfinished(here)
            return self.status("failed", to=None, back=here, reason=exc.template, params=exc.params)
        except (OSError, subprocess.SubprocessError) as exc:     # a full card, a venv that cannot be made
            self._drop_unfinished(here)
            return self.status("failed", to=None, back=here, reason=N_("the new version could not be unpacked: {detail}"),
                               params={"detail": str(exc)[:300]})
        try:
            self._marker(**{"from": here, "to": version, "phase": PREPARED,
                            "previous": release_of(lay.previous)})
            self.status("installing", to=version, back=here)
            self.system.stop()
            backup = lay.backups / f"pre-{version}"
            backup_store(lay.data, backup)
            # "backup" is named only once the copy is whole: a rollback restores it from then on.
            self._marker(phase=BACKED_UP, backup=str(backup))
            self._marker(phase=CHECKING)
            self.status("checking", to=version, back=here)
            failed = self.system.self_check(release)
            if failed:
                return self.rollback(N_("its self-check failed: {detail}"), detail=failed)
            self._marker(phase=SWITCHING)
            if here is not None:
                switch_link(lay.previous, f"releases/{here}")
            switch_link(lay.current, f"releases/{version}")
            self._marker(phase=SWITCHED, restarts=self.system.restarts())
        except Exception as exc:          # noqa: BLE001 (a full card, a damaged release...: back, and started)
            return self.rollback(HALFWAY, detail=_detail(exc))
        self._start()
        return self.check_running()

    def _prepare(self, bundle_path: Path, here: str | None) -> tuple[str, Path]:
        lay = self.layout
        if here is None:
            raise CompanionError(N_("this box has no current release: run install.sh once"))
        self._note_current()
        shutil.rmtree(lay.work, ignore_errors=True)
        lay.work.mkdir(parents=True, mode=0o700)
        copy = lay.work / "bundle"
        try:
            # Root's own copy, so the service cannot change what root checks;
            # read without following a link, in the inbox or on the way to it.
            safefs.copy_out(bundle_path.parent, bundle_path.name, copy)
        except OSError as exc:
            raise CompanionError(N_("cannot read the bundle: {reason}"), reason=exc.strerror or str(exc)) from None
        payload = bundles.verify(copy, bundles.read_keys(lay.keys))
        manifest = bundles.unpack(copy, payload, lay.work / "unpacked")
        if manifest.python != self.python or manifest.machine != self.machine:
            raise CompanionError(N_("the bundle is for Python {python} on {machine}; this box runs Python "
                                    "{box_python} on {box_machine}"), python=manifest.python,
                                 machine=manifest.machine, box_python=self.python, box_machine=self.machine)
        version = manifest.version
        if version == here:
            raise CompanionError(N_("the box already runs version {version}"), version=version)
        self._check_forward(version, here)
        lay.releases.mkdir(parents=True, exist_ok=True)
        # Built in its final folder (a venv's scripts name their own path, so
        # it cannot be moved), flagged unfinished until it is whole.
        target = lay.releases / version
        if target.exists():        # an earlier attempt at this version (never current or previous: above)
            shutil.rmtree(target)
        target.mkdir()
        durable.write(target / UNFINISHED, b"")
        fsync_dir(lay.releases)
        durable.move(lay.work / "unpacked" / "release", target / "src")
        # The bundle is good: building the environment takes minutes on a
        # Pi, which the page says as installing, not as checking the file.
        self.status("installing", to=version, back=here)
        self.system.build_env(target, lay.work / "unpacked" / "wheels", lay.releases / here)
        durable.remove(target / UNFINISHED)
        shutil.rmtree(lay.work, ignore_errors=True)
        return version, target

    def _drop_unfinished(self, here: str | None) -> None:
        lay = self.layout
        shutil.rmtree(lay.work, ignore_errors=True)
        keep = {here, release_of(lay.previous)}
        for partial in lay.releases.glob(f"*/{UNFINISHED}") if lay.releases.exists() else ():
            if partial.parent.name not in keep:
                shutil.rmtree(partial.parent, ignore_errors=True)

    def check_running(self) -> dict:
        """The new version runs: keep it if it is up and ready in time, else go back."""
        marker = self._pending_marker()
        self.status("checking", to=marker.get("to"), back=marker.get("from"))
        try:
            reason = self.system.wait_healthy(int(marker.get("restarts", 0)))
        except Exception as exc:          # noqa: BLE001 (what cannot be checked is not kept)
            reason = _detail(exc)
        if reason:
            return self.rollback(N_("the new version did not stay up: {detail}"), detail=reason)
        return self.finish()

    def finish(self) -> dict:
        """Keep the new version.  What follows is tidying: a step of it that
        fails (a full card) does not undo an update that works."""
        marker = self._pending_marker()
        # Kept: from now on the box has run it, whatever happens later.
        _try("recording the newest version", self._note_highest, marker.get("to"))
        _try("removing pending.json", self._drop_marker)
        self._pending = None
        _try("removing old releases", self._tidy, marker.get("to"))
        return self.status("done", to=marker.get("to"), back=marker.get("from"))

    def _tidy(self, to: str | None) -> None:
        lay = self.layout
        keep = {release_of(lay.current), release_of(lay.previous)}
        if release_of(lay.current) is None:      # no current link: nothing is known to be unused
            return
        for old in lay.releases.iterdir():
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
        for old in lay.backups.glob("pre-*") if lay.backups.exists() else ():
            if old.name != f"pre-{to}":
                shutil.rmtree(old, ignore_errors=True)

    def rollback(self, reason: str, **params) -> dict:
        """Back to the version before, with its pre-update store; the service restarted.
        Never raises: every step is tried, and the service is started whatever failed."""
        lay = self.layout
        marker = {**self._pending_marker(), "phase": ROLLING_BACK, "reason": reason, "params": params}
        self._pending = marker
        _try("writing pending.json", write_json, lay.marker, marker, 0o600)
        _try("stopping the service", self.system.stop)
        self._revert(marker)
        self._start()
        return self.status("failed", to=marker.get("to"), back=marker.get("from"), reason=reason, params=params)

    def _revert(self, marker: dict) -> bool:
        """Undo an update (the service stopped): links, the new release, the
        store.  Idempotent, and each step tried even when another failed;
        pending.json is removed only once the links and the store are back,
        else the next start (``--recover``) tries again.  Whether all is back."""
        lay = self.layout
        here, to, prev = marker.get("from"), marker.get("to"), marker.get("previous")
        here = here if _one_name(here) else None
        to = to if _one_name(to) else None
        prev = prev if _one_name(prev) else None
        backup = Path(marker["backup"]) if isinstance(marker.get("backup"), str) else None

        def current():
            if here and release_of(lay.current) != here:
                switch_link(lay.current, f"releases/{here}")

        def previous():
            if prev and release_of(lay.previous) != prev:
                switch_link(lay.previous, f"releases/{prev}")

        def new_release():      # never one a link names: a release left on is never removed
            if to and to not in {here, prev, release_of(lay.current), release_of(lay.previous)}:
                shutil.rmtree(lay.releases / to, ignore_errors=True)

        def store():            # the copy is named once whole: the store is restored only from then on
            if backup is not None and (backup / "complete").exists():
                # What the new version acknowledged is kept first, for the old one to carry back.
                keep_new_store(lay.data, to, self.clock)
                restore_store(backup, lay.data)

        # The new release goes before the store comes back: on a full card it frees the room the copy needs.
        left = _two_passes([("switching current back", current), ("switching previous back", previous),
                            ("removing the work folder", lambda: shutil.rmtree(lay.work, ignore_errors=True)),
                            ("removing the new release", new_release),
                            ("restoring the store", store)])
        if {"switching current back", "switching previous back", "restoring the store"} & left.keys():
            log.warning("update: not all undone; tried again at the next start")
            return False
        _try("removing pending.json", self._drop_marker)
        self._pending = None
        return True

    # -- back to the previous version: the only way down --
    def back(self, password, request: str | None = None) -> dict:
        """Back to the previous version, asked with the owner's password: the
        links switched (``previous`` becomes the version left), the store
        copied aside before the update to the version left brought back if
        that copy is whole (the games since are lost: the page says so), the
        service started.  The record of the newest version run stays: the box
        goes forward again only to a newer version."""
        lay = self.layout
        if read_json(lay.marker):
            self.resume()
        self._pending = None
        left, prev = release_of(lay.current), release_of(lay.previous)

        def refuse(reason, **params):
            return self.status("failed", request, to=None, back=left, kind=BACK, reason=reason, params=params)

        if read_json(lay.marker):
            return refuse(EARLIER)
        if not owners.verifies(password, self.owner_dir):
            return refuse(N_("wrong owner password: nothing changed"))
        if not _one_name(left) or not _one_name(prev) or prev == left or not self._whole(prev):
            return refuse(N_("there is no previous version on this box"))
        _try("recording the newest version", self._note_highest, left)
        backup = lay.backups / f"pre-{left}"
        try:
            marker = self._marker(kind=BACK, phase=GOING_BACK, to=prev, previous=left,
                                  backup=str(backup) if (backup / "complete").exists() else None,
                                  **{"from": left})
        except Exception as exc:          # noqa: BLE001 (nothing changed yet)
            self._pending = None
            return refuse(HALFWAY, detail=_detail(exc))
        self.status("installing", request, to=prev, back=left, kind=BACK)
        _try("stopping the service", self.system.stop)
        why = self._go_back(marker)
        self._start()
        if why is None:
            return self.status("done", to=prev, back=left, kind=BACK)
        return self.status("failed", to=prev, back=left, kind=BACK, reason=HALFWAY, params={"detail": why})

    def _whole(self, name: str) -> bool:
        release = self.layout.releases / name
        return release.is_dir() and not (release / UNFINISHED).exists()

    def _go_back(self, marker: dict) -> str | None:
        """Going back's steps (the service stopped), each idempotent: None once
        done, else why not, the box then put back on the version it left
        (which reads whatever the store now is: a newer version migrates an
        older store forward)."""
        lay = self.layout
        left, prev = marker.get("from"), marker.get("to")
        if not (_one_name(left) and _one_name(prev)):
            _try("removing pending.json", self._drop_marker)
            self._pending = None
            return "pending.json names no release"
        backup = Path(marker["backup"]) if isinstance(marker.get("backup"), str) else None

        def link(which: Path, name: str):
            def step():
                if release_of(which) != name:
                    switch_link(which, f"releases/{name}")
            return step

        def store():
            if backup is not None and (backup / "complete").exists():
                restore_store(backup, lay.data)

        # The store last, and only once both links are switched: it is the one
        # step that cannot be undone, so a link that cannot be switched leaves
        # the box as it was.
        failed = _two_passes([("switching current", link(lay.current, prev)),
                              ("switching previous", link(lay.previous, left))])
        if not failed:
            failed = _two_passes([("restoring the store", store)])
        if failed:
            why = _detail(next(iter(failed.values())))
            undone = _two_passes([("switching current back", link(lay.current, left)),
                                  ("switching previous back", link(lay.previous, prev))])
            if undone:
                return why          # pending.json stays: the next start finishes going back
        else:
            why = None
        _try("removing pending.json", self._drop_marker)
        self._pending = None
        return why

    # -- after a cut, or a worker that died --
    def recover(self) -> str:
        """At boot, before the service starts: revert an update that had not
        started the new version, finish going back; leave an update whose new
        version had started for :meth:`resume`."""
        lay = self.layout
        self._pending = None
        here = release_of(lay.current)
        _try("removing unfinished releases", self._drop_partials, here)
        marker = read_json(lay.marker)
        if not isinstance(marker, dict) or not marker:
            _try("removing pending.json", self._drop_marker)
            _try("removing the work folder", shutil.rmtree, lay.work, True)
            self._note_current()
            status = read_json(lay.status)
            status = status if isinstance(status, dict) else {}
            if status.get("state") in ("verifying", "installing", "checking"):   # cut before it changed anything
                kind = {"kind": BACK} if status.get("kind") == BACK else {}
                self.status("failed", to=status.get("to"), back=here,
                            reason=N_("it was cut short (a power cut?)"), params={}, **kind)
                return "cut short before any change"
            return "nothing pending"
        if marker.get("kind") == BACK:
            why = self._go_back(marker)
            if why is None:
                self.status("done", to=marker.get("to"), back=marker.get("from"), kind=BACK)
                return "went back"
            self.status("failed", to=marker.get("to"), back=marker.get("from"), kind=BACK, reason=HALFWAY,
                        params={"detail": why})
            return "going back left undone"
        if marker.get("phase") == SWITCHED:
            return "the new version is checked once it runs"
        reason = marker.get("reason") or N_("it was cut short (a power cut?)")
        params = marker.get("params") or {}
        whole = self._revert(marker)
        self.status("failed", to=marker.get("to"), back=marker.get("from"), reason=reason, params=params)
        return "reverted" if whole else "not all reverted: tried again at the next start"

    def _drop_partials(self, here: str | None) -> None:
        keep = {here, release_of(self.layout.previous)}
        for partial in self.layout.releases.glob(f"*/{UNFINISHED}") if self.layout.releases.exists() else ():
            if partial.parent.name not in keep:
                shutil.rmtree(partial.parent, ignore_errors=True)

    def resume(self) -> dict | None:
        """The worker's first job: an update left pending (after a cut, or a
        worker that died) is checked and kept, or reverted; going back, finished."""
        marker = read_json(self.layout.marker)
        if not isinstance(marker, dict) or not marker:
            return None
        self._pending = None
        if marker.get("kind") != BACK and marker.get("phase") == SWITCHED:
            return self.check_running()
        _try("stopping the service", self.system.stop)
        _try("recovering", self.recover)
        self._start()
        return read_json(self.layout.status)


# -- the requests in the service's inbox ---------------------------------------------
def _drop_unreadable(layout: Layout, name: str) -> None:
    """A request root will not read (a link, a second name, a folder...) is
    removed, so that the path unit does not start the worker for it again and again."""
    if safefs.present(layout.inbox, name):
        log.warning("update: %s in the inbox is not a plain file: removed unread", name)
        _try(f"removing {name}", safefs.unlink, layout.inbox, name)


def take_request(layout: Layout) -> str | None:
    """The request's id for the root worker, or None; :meth:`Installer.install`
    removes the request once its status names it.  Read without following a
    link (an id read through one would go into the status the service reads)."""
    raw = safefs.read_file(layout.inbox, REQUEST, limit=4096)
    if raw is None:
        _drop_unreadable(layout, REQUEST)
        return None
    return raw.decode("utf-8", "replace").strip()[:64] or "-"


def take_back_request(layout: Layout) -> dict | None:
    """The request to go back (:func:`appliance.updates.request_back`): its id
    and the password it carries, or None.  One that cannot be read as such
    still gets an answer (a wrong password); removed by the caller once answered."""
    raw = safefs.read_file(layout.inbox, BACK_REQUEST, limit=4096)
    if raw is None:
        _drop_unreadable(layout, BACK_REQUEST)
        return None
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeError, ValueError):
        record = None
    record = record if isinstance(record, dict) else {}
    request = record.get("request")
    request = request.strip()[:64] if isinstance(request, str) else ""
    return {"request": request or "-", "owner_password": record.get("owner_password")}


# -- the command -----------------------------------------------------------------------
def run_from_old_code(lay: Layout, *, execv=os.execv, environ=os.environ, argv=None) -> None:
    """Hand this job to the release a pending update came from, if this process is not it.

    The units run ``current``'s command, and after the switch ``current`` is
    the new release: after a power cut during the health check, the check
    and the rollback would run from the new code alone, the very code under
    test.  So the code that began an update finishes it: ``execv`` of that
    release's own ``companion``, same arguments, once (``FROM_ENV``)."""
    marker = read_json(lay.marker)
    name = marker.get("from") if isinstance(marker, dict) else None
    if not _one_name(name) or environ.get(FROM_ENV):
        return
    venv = lay.releases / name / "venv"
    program = venv / "bin" / "companion"
    try:
        if Path(sys.prefix).resolve() == venv.resolve() or not program.is_file():
            return
    except OSError:
        return
    environ[FROM_ENV] = name
    execv(str(program), [str(program), *(sys.argv[1:] if argv is None else argv)])


def command(lay: Layout, args, *, installer: Installer | None = None, execv=os.execv, environ=os.environ,
            argv=None) -> int:
    """The installer's jobs: ``--recover`` (at boot), ``--worker`` (what the
    service asked for: release keys, going back, an update), or a bundle
    given by root at a shell, installed at once in the foreground."""
    run_from_old_code(lay, execv=execv, environ=environ, argv=argv)
    inst = installer if installer is not None else Installer(lay, SystemdSystem(lay))
    if args.recover:
        print("companion update: " + inst.recover())
        return 0
    if args.worker:
        inst.resume()
        from .keys import serve_request

        try:
            serve_request(lay, inst.owner_dir)
        except Exception as exc:          # noqa: BLE001 (the other requests are still served)
            log.warning("update: the release keys' request failed: %s", _detail(exc))
        back = take_back_request(lay)
        if back is not None:
            try:
                result = inst.back(back["owner_password"], back["request"])
            finally:
                _try("removing the request to go back", safefs.unlink, lay.inbox, BACK_REQUEST)
            print(status_text(result))
        request = take_request(lay)
        if request is not None:
            result = inst.install(lay.incoming, request)
            _try("removing the bundle", safefs.unlink, lay.inbox, BUNDLE)
            print(status_text(result))
        return 0
    # A path a person typed at a root shell: links in it are theirs to follow;
    # the file itself is still read as a plain file with one name.
    result = inst.install(Path(args.file).resolve())
    print(status_text(result, gettext))
    return 0 if result["state"] == "done" else 1
