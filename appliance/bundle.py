"""Update bundles: one file holding a release and every wheel it needs, signed.

A bundle is ``PAYLOAD || SIGNATURE || TRAILER``:

* ``PAYLOAD`` is an uncompressed tar with ``manifest.json`` (the version, the
  Python and machine the wheels are for, the wheels' names), ``release/``
  (the source tree: the units, ``install.sh``, the lock) and ``wheels/``
  (the companion's own wheel and every dependency pinned by
  ``requirements.lock``, for the box's Python and architecture).
* ``SIGNATURE`` is an Ed25519 signature (64 bytes) of
  ``DOMAIN + SHA-512(PAYLOAD)``, made with a release key that never enters
  the repository.
* ``TRAILER`` is a fixed line: a file cut short anywhere has lost it, so a
  truncated bundle is named as such before any signature is tried.

The signature covers every byte that is unpacked, and nothing is read from
the payload before it is checked against the root-owned list of release
keys (``/etc/companion/release-keys``): whoever may upload a bundle (the
table's PIN) cannot make the box run code no release key signed.

Ed25519 comes from ``cryptography`` (imported only here, when a bundle is
made or checked).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from companion import durable
from companion.errors import CompanionError
from companion.i18n import N_

from .release_keys import keys_in, read_list

DOMAIN = b"companion-bundle-v1\0"
TRAILER = b"\ncompanion-bundle-signature-v1\n"
SIG_LEN = 64
FORMAT = 1
VERSION_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$")
MAX_MEMBERS = 20_000


class BundleError(CompanionError):
    """A bundle that is not installed: the reason, in one line."""


@dataclass(frozen=True)
class Manifest:
    version: str
    python: str           # "3.11"
    machine: str          # platform.machine() of the box: x86_64, aarch64
    wheels: tuple[str, ...]

    @classmethod
    def parse(cls, raw: bytes) -> "Manifest":
        try:
            data = json.loads(raw)
            version, python, machine = data["version"], data["python"], data["machine"]
            wheels = tuple(data["wheels"])
            if data.get("format") != FORMAT:
                raise BundleError(N_("the bundle's format ({found}) is not one this companion reads"),
                                  found=data.get("format"))
        except (ValueError, KeyError, TypeError):
            raise BundleError(N_("the bundle's manifest is unreadable")) from None
        if not (isinstance(version, str) and VERSION_RE.match(version)):
            raise BundleError(N_("the bundle names no valid version"))
        if not all(isinstance(w, str) and _plain_name(w) and w.endswith(".whl") for w in wheels):
            raise BundleError(N_("the bundle's manifest is unreadable"))
        return cls(version, str(python), str(machine), wheels)

    def to_json(self) -> bytes:
        return json.dumps({"format": FORMAT, "version": self.version, "python": self.python,
                           "machine": self.machine, "wheels": list(self.wheels)},
                          indent=1, sort_keys=True).encode()


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


# -- keys ---------------------------------------------------------------------
def new_key(private_path: Path) -> str:
    """Write a new private release key (PEM, mode 0600) and return its public line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    # Made once, never over another key (exclusive), and whole on the card.
    durable.write(private_path, pem, mode=0o600, exclusive=True)
    return public_line(key)


def load_private(path: Path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (ValueError, TypeError):
        raise BundleError(N_("{file} is not an unencrypted release key"), file=str(path)) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BundleError(N_("{file} is not an Ed25519 key"), file=str(path))
    return key


def public_line(private_key) -> str:
    """The line for the box's key list: ``ed25519 BASE64``."""
    from cryptography.hazmat.primitives import serialization

    raw = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519 " + base64.b64encode(raw).decode()


def read_keys(path: Path) -> list[bytes]:
    """The raw public keys of a key list: ``ed25519 BASE64 [comment]`` per line, ``#`` comments.
    A line that is not a key is skipped (it can only make the list shorter).  The same reading
    as the Update page's list of keys (appliance/release_keys.py), so the page shows exactly
    the keys a bundle is checked against."""
    return [raw for raw, _ in keys_in(read_list(path))]


# -- making -------------------------------------------------------------------
def write_bundle(out: Path, manifest: Manifest, release_dir: Path, wheel_dir: Path, private_key) -> None:
    """Write the bundle: the release tree, the manifest's wheels, the signature."""
    h = hashlib.sha512()
    # The bundle appears whole or not at all (and on the card): a release
    # maker's machine can lose power too, and a half bundle must not look made.
    with durable.writing(out) as raw:
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, "manifest.json", manifest.to_json())
            for path in sorted(Path(release_dir).rglob("*")):
                if path.is_file() and not path.is_symlink():
                    rel = path.relative_to(release_dir).as_posix()
                    _add_bytes(tar, f"release/{rel}", path.read_bytes(), mode=path.stat().st_mode & 0o755)
            for name in manifest.wheels:
                _add_bytes(tar, f"wheels/{name}", (Path(wheel_dir) / name).read_bytes())
        raw.seek(0)
        for chunk in iter(lambda: raw.read(1 << 20), b""):
            h.update(chunk)
        raw.seek(0, os.SEEK_END)
        raw.write(private_key.sign(DOMAIN + h.digest()) + TRAILER)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o755 if mode & 0o111 else 0o644
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


# -- checking and unpacking ---------------------------------------------------
def verify(path: Path, keys: list[bytes]) -> int:
    """Check the file's signature against ``keys``; return the payload's length.
    Raises :class:`BundleError` saying why it is refused."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if not keys:
        raise BundleError(N_("the box has no release key: it installs no bundle"))
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size < SIG_LEN + len(TRAILER):
                raise BundleError(N_("the file is not a complete update bundle (cut short?)"))
            fh.seek(size - len(TRAILER))
            if fh.read() != TRAILER:
                raise BundleError(N_("the file is not a complete update bundle (cut short?)"))
            payload_len = size - len(TRAILER) - SIG_LEN
            fh.seek(payload_len)
            signature = fh.read(SIG_LEN)
            fh.seek(0)
            h = hashlib.sha512()
            left = payload_len
            while left:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    raise BundleError(N_("the file is not a complete update bundle (cut short?)"))
                h.update(chunk)
                left -= len(chunk)
    except OSError as exc:
        raise BundleError(N_("cannot read the bundle: {reason}"), reason=exc.strerror or str(exc)) from None
    message = DOMAIN + h.digest()
    for raw in keys:
        try:
            Ed25519PublicKey.from_public_bytes(raw).verify(signature, message)
            return payload_len
        except (InvalidSignature, ValueError):
            continue
    raise BundleError(N_("the bundle is not signed by a release key this box trusts"))


class _Limited(io.RawIOBase):
    """The payload part of a verified bundle file, and nothing past it."""

    def __init__(self, fh, length: int):
        self.fh, self.left = fh, length

    def readable(self):
        return True

    def readinto(self, buf):
        n = min(len(buf), self.left)
        if n <= 0:
            return 0
        data = self.fh.read(n)
        buf[:len(data)] = data
        self.left -= len(data)
        return len(data)


def unpack(path: Path, payload_len: int, dest: Path) -> Manifest:
    """Unpack a verified bundle into ``dest`` (``release/``, ``wheels/``):
    regular files and folders only, each under ``dest``."""
    dest = Path(dest)
    dest.mkdir(parents=True)
    manifest = None
    with open(path, "rb") as fh:
        stream = io.BufferedReader(_Limited(fh, payload_len))
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for count, member in enumerate(tar):
                    if count > MAX_MEMBERS:
                        raise BundleError(N_("the bundle holds too many files"))
                    target = _member_target(dest, member.name)
                    if member.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    if not member.isfile():
                        raise BundleError(N_("the bundle holds something that is not a file: {name}"),
                                          name=member.name)
                    data = tar.extractfile(member).read()
                    if member.name == "manifest.json":
                        manifest = Manifest.parse(data)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with open(target, "wb") as out:
                        out.write(data)
                    os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
        except (tarfile.TarError, EOFError):
            raise BundleError(N_("the bundle's contents are unreadable")) from None
    if manifest is None:
        raise BundleError(N_("the bundle has no manifest"))
    for name in manifest.wheels:
        if not (dest / "wheels" / name).is_file():
            raise BundleError(N_("the bundle lacks a wheel it names: {name}"), name=name)
    return manifest


def _member_target(dest: Path, name: str) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\0" in name or not pure.parts:
        raise BundleError(N_("the bundle holds a file outside its folder: {name}"), name=name)
    top = pure.parts[0]
    if not (name == "manifest.json" or top in ("release", "wheels")):
        raise BundleError(N_("the bundle holds an unexpected file: {name}"), name=name)
    return dest.joinpath(*pure.parts)
