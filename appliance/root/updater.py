"""The root installer of updates: releases side by side, switch, health check, rollback.

Run by ``companion update --worker`` (companion-update.service, when the
service asks) and ``companion update --recover`` (companion-update-boot.service,
at boot).  The layout, the request and the status texts are the service's
side, :mod:`appliance.updates`, whose docstring tells the whole path of an
update and what a power cut at each step leaves.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from companion.errors import CompanionError
from companion.i18n import N_, gettext

from .. import bundle as bundles
from .. import envreuse
from ..durable import fsync_dir, read_json, switch_link, write_json
from ..updates import Layout, status_text

HEALTH_S = 180       # the new version reports ready and stays up within this
SETTLE_S = 15        # up with no restart for this long after it reported ready
MAX_CRASHES = 3      # restarts of the new version that make the installer go back
UNFINISHED = ".unfinished"   # in a release folder still being unpacked and built
STORE_FILES = ("companion.db", "companion.db-wal")

# The steps of an update, in order, as pending.json records them.
PREPARED = "prepared"        # unpacked and built beside the current release; nothing changed yet
BACKED_UP = "backed-up"      # the service is stopped and its store copied aside
CHECKING = "checking"        # the new version's self-check may be migrating the store
SWITCHING = "switching"      # the links are being switched
SWITCHED = "switched"        # the new version runs (or is about to): it may have acknowledged actions
ROLLING_BACK = "rolling-back"


def release_of(link: Path) -> str | None:
    """The release a link points at (``releases/<v>``), or None."""
    try:
        return Path(os.readlink(link)).name
    except OSError:
        return None


# -- the store's pre-update copy ----------------------------------------------
def backup_store(data_dir: Path, dest: Path) -> None:
    """Copy the store (the service stopped) to ``dest``, durably.  The one place
    that knows what "the store" is for an update: a fuller backup can take its place."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in STORE_FILES:
        src = data_dir / name
        if src.exists():
            shutil.copy2(src, dest / name)
            with open(dest / name, "rb") as fh:
                os.fsync(fh.fileno())
    (dest / "complete").touch()
    fsync_dir(dest)
    fsync_dir(dest.parent)


def restore_store(src: Path, data_dir: Path) -> None:
    """Put the pre-update copy back (the service stopped), owned like the data folder."""
    st = data_dir.stat()
    for name in (*STORE_FILES, "companion.db-shm"):
        target = data_dir / name
        if (src / name).exists():
            tmp = data_dir / f".{name}.restore"
            shutil.copy2(src / name, tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            if os.geteuid() == 0:
                os.chown(tmp, st.st_uid, st.st_gid)
            os.replace(tmp, target)
        elif target.exists():
            target.unlink()      # no WAL in the copy: a newer version's WAL must not be replayed into it
    fsync_dir(data_dir)


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

    # -- status for the page and the panel --
    def status(self, state: str, request: str | None = None, **fields) -> dict:
        old = read_json(self.layout.status) or {}
        record = {"state": state, "time": self.clock(),
                  "request": request if request is not None else old.get("request"), **fields}
        write_json(self.layout.status, record)
        return record

    def _marker(self, **fields) -> dict:
        marker = {**(read_json(self.layout.marker) or {}), **fields}
        write_json(self.layout.marker, marker, mode=0o600)
        return marker

    # -- the update --
    def install(self, bundle_path: Path, request: str | None = None) -> dict:
        """Install a bundle; the final status (``done`` or ``failed``).  Never raises for a bad bundle."""
        lay = self.layout
        pending = read_json(lay.marker)
        if pending:          # an update cut short and not yet recovered: finish that first
            self.resume()
        here = release_of(lay.current)
        self.status("verifying", request, to=None, back=here)
        if request is not None:      # taken once its status says so: no reader sees an old result meanwhile
            lay.request.unlink(missing_ok=True)
        try:
            version, release = self._prepare(Path(bundle_path), here)
        except CompanionError as exc:
            self._drop_unfinished(here)
            return self.status("failed", to=None, back=here, reason=exc.template, params=exc.params)
        except (OSError, subprocess.SubprocessError) as exc:     # a full card, a venv that cannot be made
            self._drop_unfinished(here)
            return self.status("failed", to=None, back=here, reason=N_("the new version could not be unpacked: {detail}"),
                               params={"detail": str(exc)[:300]})
        self._marker(**{"from": here, "to": version, "phase": PREPARED,
                        "previous": release_of(lay.previous)})
        self.status("installing", to=version, back=here)
        self.system.stop()
        backup = lay.backups / f"pre-{version}"
        backup_store(lay.data, backup)
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
        self.system.start()
        return self.check_running()

    def _prepare(self, bundle_path: Path, here: str | None) -> tuple[str, Path]:
        lay = self.layout
        if here is None:
            raise CompanionError(N_("this box has no current release: run install.sh once"))
        shutil.rmtree(lay.work, ignore_errors=True)
        lay.work.mkdir(parents=True, mode=0o700)
        copy = lay.work / "bundle"
        try:
            shutil.copyfile(bundle_path, copy)   # the service cannot change what root checks
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
        lay.releases.mkdir(parents=True, exist_ok=True)
        # Built in its final folder (a venv's scripts name their own path, so
        # it cannot be moved), flagged unfinished until it is whole.
        target = lay.releases / version
        if target.exists():        # an earlier attempt at this version, or the previous release
            shutil.rmtree(target)
        target.mkdir()
        (target / UNFINISHED).touch()
        fsync_dir(lay.releases)
        os.rename(lay.work / "unpacked" / "release", target / "src")
        # The bundle is good: building the environment takes minutes on a
        # Pi, which the page says as installing, not as checking the file.
        self.status("installing", to=version, back=here)
        self.system.build_env(target, lay.work / "unpacked" / "wheels", lay.releases / here)
        (target / UNFINISHED).unlink()
        fsync_dir(target)
        shutil.rmtree(lay.work, ignore_errors=True)
        return version, target

    def _drop_unfinished(self, here: str | None) -> None:
        lay = self.layout
        shutil.rmtree(lay.work, ignore_errors=True)
        for partial in lay.releases.glob(f"*/{UNFINISHED}") if lay.releases.exists() else ():
            if partial.parent.name != here:
                shutil.rmtree(partial.parent, ignore_errors=True)

    def check_running(self) -> dict:
        """The new version runs: keep it if it is up and ready in time, else go back."""
        marker = read_json(self.layout.marker) or {}
        self.status("checking", to=marker.get("to"), back=marker.get("from"))
        reason = self.system.wait_healthy(int(marker.get("restarts", 0)))
        if reason:
            return self.rollback(N_("the new version did not stay up: {detail}"), detail=reason)
        return self.finish()

    def finish(self) -> dict:
        lay = self.layout
        marker = read_json(lay.marker) or {}
        lay.marker.unlink(missing_ok=True)
        fsync_dir(lay.root)
        keep = {release_of(lay.current), release_of(lay.previous)}
        for old in lay.releases.iterdir():
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
        for old in lay.backups.glob("pre-*") if lay.backups.exists() else ():
            if old.name != f"pre-{marker.get('to')}":
                shutil.rmtree(old, ignore_errors=True)
        return self.status("done", to=marker.get("to"), back=marker.get("from"))

    def rollback(self, reason: str, **params) -> dict:
        """Back to the version before, with its pre-update store; the service restarted."""
        lay = self.layout
        marker = self._marker(phase=ROLLING_BACK, reason=reason, params=params)
        self.system.stop()
        self._revert(marker)
        self.system.start()
        return self.status("failed", to=marker.get("to"), back=marker.get("from"), reason=reason, params=params)

    def _revert(self, marker: dict) -> None:
        """Undo an update (the service stopped): links, store, the new release.  Idempotent."""
        lay = self.layout
        here, to = marker.get("from"), marker.get("to")
        if here and release_of(lay.current) != here:
            switch_link(lay.current, f"releases/{here}")
        if marker.get("previous"):
            if release_of(lay.previous) != marker["previous"]:
                switch_link(lay.previous, f"releases/{marker['previous']}")
        backup = Path(marker["backup"]) if marker.get("backup") else None
        if backup is not None and (backup / "complete").exists() and marker.get("phase") != PREPARED:
            restore_store(backup, lay.data)
        if to and to != here and to != marker.get("previous"):
            shutil.rmtree(lay.releases / to, ignore_errors=True)
        lay.marker.unlink(missing_ok=True)
        fsync_dir(lay.root)
        shutil.rmtree(lay.work, ignore_errors=True)

    # -- after a cut, or a worker that died --
    def recover(self) -> str:
        """At boot, before the service starts: revert an update that had not
        started the new version; leave one that had for :meth:`resume`."""
        lay = self.layout
        here = release_of(lay.current)
        for partial in lay.releases.glob(f"*/{UNFINISHED}") if lay.releases.exists() else ():
            if partial.parent.name != here:
                shutil.rmtree(partial.parent, ignore_errors=True)
        marker = read_json(lay.marker)
        if not marker:
            lay.marker.unlink(missing_ok=True)
            shutil.rmtree(lay.work, ignore_errors=True)
            status = read_json(lay.status) or {}
            if status.get("state") in ("verifying", "installing", "checking"):   # cut before it changed anything
                self.status("failed", to=status.get("to"), back=here,
                            reason=N_("it was cut short (a power cut?)"), params={})
                return "cut short before any change"
            return "nothing pending"
        if marker.get("phase") == SWITCHED:
            return "the new version is checked once it runs"
        reason = marker.get("reason") or N_("it was cut short (a power cut?)")
        params = marker.get("params") or {}
        self._revert(marker)
        self.status("failed", to=marker.get("to"), back=marker.get("from"), reason=reason, params=params)
        return "reverted"

    def resume(self) -> dict | None:
        """The worker's first job: an update left pending (after a cut, or a
        worker that died) is checked and kept, or reverted."""
        marker = read_json(self.layout.marker)
        if not marker:
            return None
        if marker.get("phase") == SWITCHED:
            return self.check_running()
        self.system.stop()
        self.recover()
        self.system.start()
        return read_json(self.layout.status)


def take_request(layout: Layout) -> str | None:
    """The request's id for the root worker, or None; :meth:`Installer.install`
    removes the request once its status names it."""
    try:
        request_id = layout.request.read_text("utf-8").strip()[:64]
    except OSError:
        return None
    return request_id or "-"


def command(lay: Layout, args) -> int:
    """The installer's jobs: ``--recover`` (at boot), ``--worker`` (what the
    service asked for), or a bundle given by root at a shell, installed at
    once in the foreground."""
    inst = Installer(lay, SystemdSystem(lay))
    if args.recover:
        print("companion update: " + inst.recover())
        return 0
    if args.worker:
        inst.resume()
        request = take_request(lay)
        if request is not None:
            result = inst.install(lay.incoming, request)
            lay.incoming.unlink(missing_ok=True)
            print(status_text(result))
        return 0
    result = inst.install(Path(args.file))
    print(status_text(result, gettext))
    return 0 if result["state"] == "done" else 1
