"""Making a release: ``companion bundle``, on a release maker's machine, never on the box.

    companion bundle --new-key FILE              make a release key (private, 0600); print its public line
    companion bundle OUT --key FILE [--version V] [--machine M] [--wheels DIR] [--source DIR]

A bundle is this source tree, the companion's own wheel and every
dependency's wheel exactly as ``requirements.lock`` pins them, signed with a
release key (:mod:`appliance.bundle` says the format).  The private key
comes from ``--key`` or ``COMPANION_RELEASE_KEY`` (a path), never from the
repository.

A signature vouches only for bytes its maker knew: every dependency's wheel
must have a SHA-256 that ``requirements.hashes`` lists for its pinned
version, or there is no bundle (:func:`pinned_wheels`; the wheels of
``--wheels DIR`` too, :func:`check_pinned`).  Whoever could swap a wheel on
its way here (the index, a mirror, a proxy) cannot have it signed.  The
hashes are a file apart from the lock because pip turns a constraints file
with hashes into hash-checking for everything installed with it, which an
editable or a local-folder install cannot pass (the test environment,
install.sh); ``requirements.hashes`` is made from the lock by pip-compile
(its header says how) and ``tests/core/test_release_keys.py`` holds the two
to the same versions.  The image's wheelhouse is fetched the same way
(systemd/image/build).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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
        try:
            if args.wheels:
                table = read_hashes(source / HASHES)
                for whl in Path(args.wheels).glob("*.whl"):
                    if not whl.name.startswith("companion-"):
                        check_pinned(whl, table)
                        shutil.copy2(whl, wheels / whl.name)
            else:
                _download_wheels(wheels, args.machine, source)
        except PinError as exc:
            print(_("companion: no bundle: {reason}", reason=str(exc)), file=sys.stderr)
            return 1
        except subprocess.CalledProcessError:
            print(_("companion: no bundle: pip could not fetch the wheels with the hashes of {file} "
                    "(its reason is above)", file=str(source / HASHES)), file=sys.stderr)
            return 1
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
    instead of installing again.  Each one checked against requirements.hashes."""
    own = next(wheels.glob("companion-*.whl"))
    platform_args = [a for tag in PLATFORMS[machine] for a in ("--platform", tag)]
    pinned_wheels(wheels, [str(own), "pip", *PI_EXTRA.get(machine, [])], source,
                  [*platform_args, "--python-version", "3.11", "--implementation", "cp"])


# -- the wheels' hashes ----------------------------------------------------------------------------

HASHES = "requirements.hashes"
LOCK = "requirements.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


class PinError(Exception):
    """A wheel whose bytes requirements.hashes does not vouch for (the message says which)."""


def canonical(name: str) -> str:
    """A project's name as an index compares it (PEP 503): ``luma.core`` is ``luma-core``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_hashes(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """``requirements.hashes``: ``{canonical name: (version, {sha256 hex...})}``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PinError(f"{path} is missing: every wheel needs a hash to be bundled") from None
    table = {}
    for line in text.replace("\\\n", " ").splitlines():
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        pin = _PIN.match(parts[0])
        if not pin:
            continue
        hashes = frozenset(p.removeprefix("--hash=sha256:") for p in parts[1:] if p.startswith("--hash=sha256:"))
        table[canonical(pin.group(1))] = (pin.group(2), hashes)
    return table


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_pinned(wheel: Path, table: dict) -> None:
    """A wheel given as a file (``--wheels DIR``) is bundled only if its
    bytes are ones requirements.hashes lists for its project and version."""
    name, version = wheel.name.split("-")[:2]
    pinned = table.get(canonical(name))
    if pinned is None or pinned[0] != version:
        raise PinError(f"{wheel.name}: {name}=={version} is not pinned in {HASHES}")
    if sha256_of(wheel) not in pinned[1]:
        raise PinError(f"{wheel.name}: its SHA-256 is not one {HASHES} lists for {name}=={version}")


def pinned_wheels(dest: Path, requirements: list[str], source: Path, pip_options: list[str],
                  pip: list[str] | None = None, skip: frozenset = frozenset({"companion"})) -> list[str]:
    """Fetch into ``dest`` the wheels ``requirements`` need, at the versions
    of ``source``'s requirements.lock, each checked by pip against the
    hashes of ``source``'s requirements.hashes; the pins fetched.

    Two steps, because pip checks hashes only for the requirements it is
    given (the pip 23 a release maker may well have refuses a dependency
    whose hash is only in a constraints file), so each dependency must
    become a requirement of its own: first what the requirements need, resolved from
    the index's metadata alone (``install --dry-run --report``: no wheel is
    kept); then exactly those pins, with their hashes, ``--require-hashes
    --no-deps``.  A pin requirements.hashes lacks stops it before anything
    is fetched; a wheel whose bytes differ makes pip refuse it.
    ``pip_options``: the platform, Python, implementation (and index) pip
    fetches for; ``skip``: what is already there (the companion's own wheel)."""
    pip = pip or [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    table = read_hashes(source / HASHES)
    with tempfile.TemporaryDirectory(prefix="companion-pins-") as tmp:
        tmp = Path(tmp)
        subprocess.run([*pip, "install", "-q", "--dry-run", "--ignore-installed", "--target", str(tmp / "none"),
                        "--report", str(tmp / "report.json"), "--only-binary=:all:", *pip_options,
                        "-c", str(source / LOCK), *requirements], check=True)
        needed = json.loads((tmp / "report.json").read_text(encoding="utf-8"))["install"]
        lines, pins = [], []
        for item in needed:
            name, version = item["metadata"]["name"], item["metadata"]["version"]
            if canonical(name) in skip:
                continue
            pinned = table.get(canonical(name))
            if pinned is None or pinned[0] != version or not pinned[1]:
                raise PinError(f"{name}=={version} has no hash in {source / HASHES}: make it again from "
                               f"{LOCK} (its header says how)")
            lines.append(f"{name}=={version} " + " ".join(f"--hash=sha256:{h}" for h in sorted(pinned[1])))
            pins.append(f"{name}=={version}")
        (tmp / "pinned.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if lines:
            subprocess.run([*pip, "download", "-q", "--require-hashes", "--no-deps", "--only-binary=:all:",
                            *pip_options, "-d", str(dest), "-r", str(tmp / "pinned.txt")], check=True)
    return pins
