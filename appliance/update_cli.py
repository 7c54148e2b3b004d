"""``companion bundle``, ``companion update`` and ``companion self-check``.

    companion bundle --new-key FILE              make a release key (private, 0600); print its public line
    companion bundle OUT --key FILE [--version V] [--machine M] [--wheels DIR] [--source DIR]
    companion update FILE                        ask the root unit to install a bundle; wait for the result
    companion update --status                    the last update's result
    companion update --worker | --recover        the root units' jobs (companion-update.service, -boot)
    companion self-check [--data DIR]            what a new version must pass before it is kept

The private key comes from ``--key`` or ``COMPANION_RELEASE_KEY`` (a path),
never from the repository.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import bundle as bundles
from . import updater
from companion.errors import CompanionError
from companion.i18n import _, gettext

WAIT_S = 30 * 60     # the command line waits at most this for the root unit's answer
# Where the wheels of a bundle come from: pip's platform tags per machine, every
# manylinux a box's glibc runs (Debian bookworm: 2.36), newest first.
GLIBC_MINOR = 36
PLATFORMS = {machine: [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 16, -1)]
             + [f"manylinux2014_{machine}"] for machine in ("x86_64", "aarch64")}
# Pi-only wheels a box on that machine gets besides the companion's own dependencies.
# RPi.GPIO is left out: PyPI has no wheel of it (only a source to build with a C
# compiler), and gpiozero reaches the pins through lgpio on every Pi it supports.
PI_EXTRA = {"aarch64": ["lgpio"]}
RELEASE_SKIP = {".git", ".venv", "tests", "__pycache__", "build", "dist", ".ci"}


def add_parsers(sub) -> None:
    b = sub.add_parser("bundle", help=_("make a signed update bundle (or a release key)"))
    b.add_argument("out", nargs="?", help=_("the bundle file to write"))
    b.add_argument("--key", help=_("the private release key (or COMPANION_RELEASE_KEY)"))
    b.add_argument("--new-key", metavar="FILE", help=_("write a new private release key to FILE"))
    b.add_argument("--version", help=_("the release's version (default: the package's)"))
    b.add_argument("--machine", choices=sorted(PLATFORMS), default="aarch64", help=_("the box's machine"))
    b.add_argument("--wheels", help=_("take the wheels from this folder instead of PyPI"))
    b.add_argument("--source", help=_("the source tree (default: this one)"))

    u = sub.add_parser("update", help=_("install a signed update bundle, with rollback"))
    u.add_argument("file", nargs="?", help=_("the bundle"))
    u.add_argument("--status", action="store_true", help=_("print the last update's result"))
    u.add_argument("--no-wait", action="store_true", help=_("do not wait for the result"))
    u.add_argument("--worker", action="store_true", help=_("(root unit) install what was asked"))
    u.add_argument("--recover", action="store_true", help=_("(root, at boot) finish or revert a cut update"))
    u.add_argument("--data", help=_("the data folder"))

    c = sub.add_parser("self-check", help=_("check that this version can serve this box's store"))
    c.add_argument("--data", help=_("the data folder"))


def _layout(args) -> updater.Layout:
    lay = updater.Layout()
    if getattr(args, "data", None):
        lay.data = Path(args.data)
    return lay


def cmd_self_check(args) -> int:
    from companion import config as cfg
    from . import selfcheck

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    summary = selfcheck.check(data_dir)
    # The adapters must import too: a release whose web side is broken would
    # pass the core's check and then crash at every start.
    import hardware  # noqa: F401
    import web.app  # noqa: F401
    print(summary)
    return 0


def cmd_update(args) -> int:
    lay = _layout(args)
    if args.recover:
        print("companion update: " + updater.Installer(lay, updater.SystemdSystem(lay)).recover())
        return 0
    if args.worker:
        inst = updater.Installer(lay, updater.SystemdSystem(lay))
        inst.resume()
        request = updater.take_request(lay)
        if request is not None:
            result = inst.install(lay.incoming, request)
            lay.incoming.unlink(missing_ok=True)
            print(updater.status_text(result))
        return 0
    if args.status or not args.file:
        text = updater.status_text(updater.read_json(lay.status), gettext)
        print(text or _("No update yet."))
        return 0
    if os.geteuid() == 0:         # root installs at once, in the foreground
        inst = updater.Installer(lay, updater.SystemdSystem(lay))
        result = inst.install(Path(args.file))
        print(updater.status_text(result, gettext))
        return 0 if result["state"] == "done" else 1
    request = secrets.token_hex(8)
    updater.request_update(lay, args.file, request)
    if args.no_wait:
        print(_("Update asked for: see 'companion update --status'."))
        return 0
    deadline = time.monotonic() + WAIT_S
    shown = None
    while time.monotonic() < deadline:
        status = updater.read_json(lay.status) or {}
        if status.get("request") == request:
            text = updater.status_text(status, gettext)
            if text != shown:
                print(text, flush=True)
                shown = text
            if status.get("state") in ("done", "failed"):
                return 0 if status["state"] == "done" else 1
        time.sleep(1)
    print(_("companion: no answer from the root unit (is companion-update.path enabled?)"), file=sys.stderr)
    return 1


def cmd_bundle(args) -> int:
    if args.new_key:
        print(bundles.new_key(Path(args.new_key)))
        return 0
    key_path = args.key or os.environ.get("COMPANION_RELEASE_KEY")
    if not args.out or not key_path:
        print(_("companion: bundle needs OUT and --key (or COMPANION_RELEASE_KEY)"), file=sys.stderr)
        return 2
    key = bundles.load_private(Path(key_path))
    from companion import __version__

    source = Path(args.source) if args.source else Path(__file__).resolve().parents[1]
    if not (source / "pyproject.toml").exists():
        print(_("companion: {dir} is not the companion's source tree", dir=source), file=sys.stderr)
        return 2
    version = args.version or __version__
    with tempfile.TemporaryDirectory(prefix="companion-bundle-") as tmp:
        tmp = Path(tmp)
        release = tmp / "release"
        shutil.copytree(source, release, ignore=lambda d, names: [n for n in names if n in RELEASE_SKIP
                                                               or n.endswith((".pyc", ".mo"))])
        (release / "RELEASE").write_text(version + "\n")
        wheels = tmp / "wheels"
        wheels.mkdir()
        _own_wheel(source, wheels)
        if args.wheels:
            for whl in Path(args.wheels).glob("*.whl"):
                if not whl.name.startswith("companion-"):
                    shutil.copy2(whl, wheels / whl.name)
        else:
            _download_wheels(wheels, args.machine, source)
        names = tuple(sorted(p.name for p in wheels.glob("*.whl")))
        manifest = bundles.Manifest(version, "3.11", args.machine, names)
        bundles.write_bundle(Path(args.out), manifest, release, wheels, key)
    print(_("Wrote {file}: version {version} for {machine}, {n} wheels.", file=args.out, version=version,
            machine=args.machine, n=len(names)))
    return 0


def _own_wheel(source: Path, wheels: Path) -> None:
    """The companion's own wheel (pure Python), built here from ``source``."""
    with tempfile.TemporaryDirectory(prefix="companion-src-") as tmp:
        # A copy: building writes build/ and *.egg-info beside the sources.
        tree = Path(tmp) / "src"
        shutil.copytree(source, tree, ignore=lambda d, names: [n for n in names if n in RELEASE_SKIP
                                                            or n.endswith(".egg-info")])
        subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(wheels), str(tree)], check=True)


def _download_wheels(wheels: Path, machine: str, source: Path) -> None:
    """The dependencies' wheels from PyPI exactly as requirements.lock pins
    them, for the box's Python and machine, and the lock's pip: the one
    install.sh put in the running release, which the update then links
    instead of installing again."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    own = next(wheels.glob("companion-*.whl"))
    platform_args = [a for tag in PLATFORMS[machine] for a in ("--platform", tag)]
    subprocess.run([*pip, "download", "-q", "--only-binary=:all:", *platform_args, "--python-version", "3.11",
                    "--implementation", "cp", "-c", str(source / "requirements.lock"), "-d", str(wheels),
                    str(own), "pip", *PI_EXTRA.get(machine, [])], check=True)


def run(args) -> int:
    try:
        return {"bundle": cmd_bundle, "update": cmd_update, "self-check": cmd_self_check}[args.command](args)
    except subprocess.CalledProcessError as exc:
        print(_("companion: {command} failed (exit {code})", command=" ".join(map(str, exc.cmd[:4])),
                code=exc.returncode), file=sys.stderr)
        return 1
