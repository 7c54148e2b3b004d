"""Making a release: ``companion bundle``, on a release maker's machine, never on the box.

    companion bundle --new-key FILE              make a release key (private, 0600); print its public line
    companion bundle OUT --key FILE [--version V] [--machine M] [--wheels DIR] [--source DIR]

A bundle is this source tree, the companion's own wheel and every
dependency's wheel exactly as ``requirements.lock`` pins them, signed with a
release key (:mod:`appliance.bundle` says the format).  The private key
comes from ``--key`` or ``COMPANION_RELEASE_KEY`` (a path), never from the
repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from companion.i18n import _

from . import MACHINES
from . import bundle as bundles

# Where the wheels of a bundle come from: pip's platform tags per machine, every
# manylinux a box's glibc runs (Debian bookworm: 2.36), newest first.
GLIBC_MINOR = 36
PLATFORMS = {machine: [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 16, -1)]
             + [f"manylinux2014_{machine}"] for machine in MACHINES}
# Pi-only wheels a box on that machine gets besides the companion's own dependencies.
# RPi.GPIO is left out: PyPI has no wheel of it (only a source to build with a C
# compiler), and gpiozero reaches the pins through lgpio on every Pi it supports.
PI_EXTRA = {"aarch64": ["lgpio"]}
RELEASE_SKIP = {".git", ".venv", "tests", "__pycache__", "build", "dist", ".ci"}


def command(args) -> int:
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
