"""The release keys a box trusts: reading the list, adding to it, asking root to change it.

``/etc/companion/release-keys`` (``Layout.keys``; root's, mode 0644) lists the
public keys whose update bundles the box installs (appliance/bundle.py checks
a bundle's signature against it).  One key a line, ``ed25519 BASE64
[comment]`` (the line ``companion bundle --new-key`` prints), ``#`` starts a
comment; any other line is skipped, so a damaged line only makes the list
shorter (:func:`keys_in`).

Who changes it, and how:

* ``systemd/install.sh --release-key FILE`` and ``systemd/image/build
  --release-key FILE`` *add* the keys of FILE (:func:`merge`, through
  ``python3 -m appliance.release_keys add``).  Neither ever removes a key or
  rewrites the list: a key the owner added by hand stays, and a key the owner
  removed does not come back with the next install.
* The owner, on the Update page: the service writes a request into its
  inbox (:func:`request_change`, the owner's password with it), root's update
  worker serves it (appliance/root/keys.py: the password checked against
  root's own record, the line checked again) and writes the result, which the
  page reads (:func:`read_result`).

A key is shown by its fingerprint (:func:`fingerprint`): ``SHA256:`` and the
unpadded base64 of the SHA-256 of the raw 32-byte key, the way ``ssh-keygen
-l`` writes one.  The owner compares it with the one the release maker
published, and removes a key by it.

Standard library only (install.sh runs this with the system's python3,
before the release's environment exists).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import sys
from pathlib import Path

from companion import durable
from companion.durable import read_json
from companion.i18n import N_

KEY_TYPE = "ed25519"
KEY_BYTES = 32
REQUEST = "keys-request"            # in the service's inbox (Layout.inbox)
RESULT = "keys-status.json"         # in root's folder (Layout.root)
#: A list's header when root has to make the file itself (install.sh makes
#: it from systemd/release-keys, whose comment says more).
HEADER = "# The release keys whose update bundles this box installs: \"ed25519 BASE64 comment\" a line.\n"
#: Bounds on what a phone may send: a key line is about 60 characters.
MAX_LINE = 400
MAX_COMMENT = 100
#: Every bundle is tried against every listed key: a list is kept short.
MAX_KEYS = 32
FINGERPRINT_RE = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

LINE_RULE = N_("release key: one line 'ed25519 BASE64 comment', as 'companion bundle --new-key' prints it")
PRIVATE = N_("release key: this is a private key: give the public line 'companion bundle --new-key' printed, "
              "and keep the private key off the box")
COMMENT_RULE = N_("release key: the comment after the key is at most {n} printable characters")
FINGERPRINT_RULE = N_("release key: a fingerprint is 'SHA256:' and 43 characters, as the Update page shows it")
NO_KEY = N_("release key: the file holds no key")


class ReleaseKeyError(ValueError):
    """A key line (or fingerprint) that cannot be used; ``template`` and
    ``params`` say why (translated by whoever shows it)."""

    def __init__(self, template: str, **params):
        super().__init__(template.format(**params) if params else template)
        self.field, self.template, self.params = "release_key", template, params
        self.line: int | None = None        # set by merge: the file's line it is about


# -- reading a list ------------------------------------------------------------------------------

def parse_line(line: str) -> tuple[bytes, str] | None:
    """``(raw key, comment)`` of one line of a list, or None if it is no key."""
    parts = line.split()
    if len(parts) < 2 or parts[0] != KEY_TYPE:
        return None
    try:
        raw = base64.b64decode(parts[1], validate=True)
    except ValueError:
        return None
    if len(raw) != KEY_BYTES:
        return None
    return raw, " ".join(parts[2:])


def keys_in(text: str) -> list[tuple[bytes, str]]:
    """Every key of a list's text, in order (a key listed twice, twice)."""
    return [found for found in map(parse_line, text.splitlines()) if found is not None]


def read_list(path) -> str:
    """A list's text; a missing list is an empty one."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def fingerprint(raw: bytes) -> str:
    """``SHA256:`` + the unpadded base64 of the SHA-256 of the raw key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode("ascii").rstrip("=")


def listed(keys_path) -> list[dict]:
    """The keys of the list, each once: ``{"fingerprint", "comment"}``."""
    seen, out = set(), []
    for raw, comment in keys_in(read_list(keys_path)):
        if raw not in seen:
            seen.add(raw)
            out.append({"fingerprint": fingerprint(raw), "comment": comment})
    return out


def accepts_updates(keys_path) -> bool:
    """Whether the box lists a release key at all.  An image built without
    ``--release-key`` does not, and installs no bundle until its owner adds
    one: the Update page says so."""
    return bool(keys_in(read_list(keys_path)))


# -- checking what a person gives ---------------------------------------------------------------

def _printable(text: str) -> bool:
    return all(ch.isprintable() for ch in text)


def check_key_line(text) -> str:
    """One public key line, normalised (``ed25519 BASE64`` and the comment,
    if any, one space apart), or :class:`ReleaseKeyError`."""
    if not isinstance(text, str):
        raise ReleaseKeyError(LINE_RULE)
    if "PRIVATE KEY" in text:
        raise ReleaseKeyError(PRIVATE)
    line = text.strip()
    if not line or len(line) > MAX_LINE or "\n" in line or "\r" in line:
        raise ReleaseKeyError(LINE_RULE)
    found = parse_line(line)
    if found is None:
        raise ReleaseKeyError(LINE_RULE)
    raw, comment = found
    if len(comment) > MAX_COMMENT or not _printable(comment):
        raise ReleaseKeyError(COMMENT_RULE, n=MAX_COMMENT)
    return " ".join([KEY_TYPE, base64.b64encode(raw).decode("ascii")] + ([comment] if comment else []))


def check_fingerprint(text) -> str:
    value = text.strip() if isinstance(text, str) else ""
    if not FINGERPRINT_RE.match(value):
        raise ReleaseKeyError(FINGERPRINT_RULE)
    return value


# -- adding keys: install.sh and the image build ------------------------------------------------

def merge(existing_text: str, new_text: str) -> str:
    """``existing_text`` with each key of ``new_text`` it does not list yet
    added at its end.  Nothing of ``existing_text`` is removed or rewritten
    (its comments, a key added by hand, even a line that is no key).

    ``new_text`` is a key file: key lines, blank lines and ``#`` comments.
    Any other line, or no key at all, raises :class:`ReleaseKeyError`
    (``.line`` says which line) and nothing is added."""
    have = {raw for raw, _ in keys_in(existing_text)}
    given, added = 0, []
    for number, line in enumerate(new_text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            clean = check_key_line(line)
        except ReleaseKeyError as exc:
            exc.line = number
            raise
        given += 1
        raw = parse_line(clean)[0]
        if raw not in have:
            have.add(raw)
            added.append(clean)
    if not given:
        raise ReleaseKeyError(NO_KEY)
    if not added:
        return existing_text
    head = existing_text if not existing_text or existing_text.endswith("\n") else existing_text + "\n"
    return head + "".join(line + "\n" for line in added)


def write_list(path, text: str) -> None:
    """The list replaced durably (:mod:`companion.durable`, 0644): a power cut
    leaves the old list or the new one, never an empty one (an empty list
    is a box that takes no update)."""
    durable.write_text(path, text, mode=0o644)


# -- the owner's change, asked of root ----------------------------------------------------------

def request_change(layout, owner_password, *, add: str | None = None, remove: str | None = None) -> str:
    """Ask root to add a key line or remove the key of a fingerprint; the
    request's id.  The request is on the card when this returns (mode 0600:
    it holds the owner's password, which root checks against its own
    record); raises :class:`ReleaseKeyError` for a line or fingerprint that
    cannot be one."""
    if (add is None) == (remove is None):
        raise TypeError("request_change: add= or remove=, one of them")
    request_id = secrets.token_hex(8)
    body = {"request": request_id, "owner_password": owner_password}
    if add is not None:
        body["add"] = check_key_line(add)
    else:
        body["remove"] = check_fingerprint(remove)
    inbox = Path(layout.inbox)
    inbox.mkdir(parents=True, exist_ok=True)
    durable.write_text(inbox / REQUEST, json.dumps(body), mode=0o600)
    return request_id


def read_result(layout) -> dict | None:
    """Root's answer to the last request: ``{"request", "state": "done" |
    "failed", "reason", "params", "fingerprint"}``; ``reason`` is a template
    to translate, then fill with ``params`` ("" when there is nothing to
    say)."""
    result = read_json(Path(layout.root) / RESULT)
    return result if isinstance(result, dict) else None


# -- the command install.sh and the image build run ---------------------------------------------

USAGE = """usage: python3 -m appliance.release_keys check FILE...
       python3 -m appliance.release_keys fingerprint FILE...
       python3 -m appliance.release_keys add LIST FILE...
check: each FILE holds release keys and nothing else; fingerprint: each key's, as the Update page
shows it (the one to publish); add: the keys of the FILEs added to LIST (none removed)."""


def read_key_files(files: list[str]) -> list[tuple[str, str]]:
    """Each key file's name and text; a file that cannot be read or holds
    anything but keys stops the program, saying which and why."""
    out = []
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise SystemExit(f"release key: cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            merge("", text)
        except ReleaseKeyError as exc:
            where = f"{name}, line {exc.line}" if exc.line else name
            raise SystemExit(f"{where}: {exc}") from None
        out.append((name, text))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("check", "fingerprint", "add") or (argv[0] == "add" and len(argv) < 3):
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] == "check":
        read_key_files(argv[1:])           # every file checked before anything is written
        return 0
    if argv[0] == "fingerprint":
        for name, text in read_key_files(argv[1:]):
            for raw, comment in keys_in(text):
                print(f"{fingerprint(raw)}  {comment or '-'}  ({name})")
        return 0
    target, files = Path(argv[1]), read_key_files(argv[2:])
    text = before = read_list(target)
    said = []
    for name, new in files:
        have = {raw for raw, _ in keys_in(text)}
        for raw, _ in keys_in(new):
            word = "already listed in" if raw in have else "added to"
            said.append(f"release key {fingerprint(raw)} ({name}): {word} {target}")
            have.add(raw)
        text = merge(text, new)
    if text != before:
        try:
            write_list(target, text)
        except OSError as exc:
            print(f"release keys: cannot write {target}: {exc.strerror or exc} (root's file: sudo?)", file=sys.stderr)
            return 1
    print("\n".join(said))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
