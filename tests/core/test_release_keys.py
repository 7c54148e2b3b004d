"""The box's release keys and the bytes a release key signs.

* The list (``/etc/companion/release-keys``): fingerprints, the Update
  page's view of it, the lines a person may give, and adding keys the way
  ``install.sh --release-key`` and the image build do: never a key removed,
  never one listed twice, a file that is no key refused with nothing changed
  (the merge, then install.sh itself on a folder of the test's own).
* The owner's change from the Update page: the service's request, root's
  side (``appliance.root.keys``) on a fake root: the owner's password
  checked against root's own record, nothing read through a link, the list
  rewritten whole, the last key removable.
* ``companion bundle`` and the image's wheelhouse fetch only wheels whose
  SHA-256 ``requirements.hashes`` lists for the lock's versions: a wheel
  whose bytes differ makes no bundle (pip run for real, offline, from a
  folder of wheels made here).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from appliance import bundle as bundles
from appliance import release, release_keys
from appliance.release_keys import ReleaseKeyError
from appliance.root import keys as root_keys
from appliance.root import owner as owners
from appliance.updates import Layout

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "the owner's own"


def _line(seed: bytes, comment: str = "") -> str:
    raw = hashlib.sha256(seed).digest()          # any 32 bytes are a key line's shape
    return f"ed25519 {base64.b64encode(raw).decode()}" + (f" {comment}" if comment else "")


def _raw(line: str) -> bytes:
    return base64.b64decode(line.split()[1])


# -- the list ------------------------------------------------------------------------------------

def test_a_fingerprint_is_the_unpadded_base64_of_the_keys_sha256():
    raw = bytes(range(32))
    want = "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    assert release_keys.fingerprint(raw) == want
    assert release_keys.FINGERPRINT_RE.match(want) and "=" not in want


def test_the_page_lists_each_key_once_and_exactly_the_keys_a_bundle_is_checked_against(tmp_path):
    a, b = _line(b"a", "release 2025"), _line(b"b")
    keys = tmp_path / "release-keys"
    keys.write_text(f"# header\n{a}\nnot a key\ned25519 !!!! broken\n{b}\n{a} again\n")
    assert release_keys.listed(keys) == [
        {"fingerprint": release_keys.fingerprint(_raw(a)), "comment": "release 2025"},
        {"fingerprint": release_keys.fingerprint(_raw(b)), "comment": ""}]
    assert set(bundles.read_keys(keys)) == {_raw(a), _raw(b)}


def test_a_box_without_a_key_says_it_accepts_no_update(tmp_path):
    # The list install.sh makes when it is given no key: its header alone.
    assert not release_keys.accepts_updates(REPO / "systemd" / "release-keys")
    assert not release_keys.accepts_updates(tmp_path / "missing")
    keys = tmp_path / "release-keys"
    keys.write_text((REPO / "systemd" / "release-keys").read_text() + _line(b"a") + "\n")
    assert release_keys.accepts_updates(keys)


def test_a_key_line_is_normalised():
    raw = hashlib.sha256(b"a").digest()
    b64 = base64.b64encode(raw).decode()
    assert release_keys.check_key_line(f"  ed25519   {b64}   release   2025 \n") == f"ed25519 {b64} release 2025"
    assert release_keys.check_key_line(f"ed25519 {b64}") == f"ed25519 {b64}"


@pytest.mark.parametrize("given, why", [
    ("", "line"), ("hello", "line"), (None, "line"),
    ("ssh-ed25519 " + base64.b64encode(bytes(32)).decode(), "line"),
    ("ed25519 " + base64.b64encode(bytes(31)).decode(), "line"),
    ("ed25519 not*base64", "line"),
    (_line(b"a") + "\n" + _line(b"b"), "line"),
    ("ed25519 " + base64.b64encode(bytes(32)).decode() + " " + "x" * 101, "comment"),
    ("ed25519 " + base64.b64encode(bytes(32)).decode() + " bell\x07", "comment"),
    ("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n", "private"),
])
def test_a_line_that_is_no_public_key_is_refused_saying_why(given, why):
    with pytest.raises(ReleaseKeyError) as caught:
        release_keys.check_key_line(given)
    assert caught.value.template == {"line": release_keys.LINE_RULE, "comment": release_keys.COMMENT_RULE,
                                     "private": release_keys.PRIVATE}[why]
    assert isinstance(caught.value, ValueError) and caught.value.field == "release_key"


def test_merging_adds_only_the_keys_not_listed_and_keeps_everything_else():
    a, b, c = _line(b"a", "by hand"), _line(b"b"), _line(b"c", "new")
    existing = f"# header\n{a}\nsomething a person wrote\n{b}"          # no final newline
    # b again (another comment, other spaces), c twice: c added once.
    merged = release_keys.merge(existing, f"# from the release maker\n\n{b.replace(' ', '   ')} other\n{c}\n{c}\n")
    assert merged == existing + "\n" + c + "\n"
    assert release_keys.merge(merged, c) == merged


@pytest.mark.parametrize("new", ["", "# only a comment\n\n", f"{_line(b'a')}\nnot a key\n"])
def test_a_key_file_that_is_not_one_adds_nothing(new):
    with pytest.raises(ReleaseKeyError) as caught:
        release_keys.merge("# header\n", new)
    if "not a key" in new:
        assert caught.value.line == 2


# -- install.sh --release-key, on a list of the test's own ---------------------------------------

def _install_keys(tmp_path, *files, only=True):
    target = tmp_path / "etc" / "companion" / "release-keys"
    argv = ["bash", str(REPO / "systemd" / "install.sh"), *(["--keys-only"] if only else [])]
    for f in files:
        argv += ["--release-key", str(f)]
    # The tests run as root (CI does): were the key step ever to fall through
    # to the install itself, it must stop at "run me with sudo", not install
    # this machine.  So `id` says "not root" and what installs fails loudly.
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    for name, body in (("id", "echo 1000"), *((n, "exit 97") for n in ("apt-get", "useradd", "systemctl", "pip"))):
        (stubs / name).write_text(f"#!/bin/sh\n{body}\n")
        (stubs / name).chmod(0o755)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "COMPANION_RELEASE_KEYS": str(target),
                               "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"})
    return done, target


def test_install_sh_adds_keys_to_the_list_and_never_writes_over_it(tmp_path):
    a, b = tmp_path / "a.pub", tmp_path / "b.pub"
    a.write_text(_line(b"a") + "\n")                      # as `companion bundle --new-key` prints it
    b.write_text(f"# the new key\n{_line(b'b', 'release 2026')}\n")
    done, target = _install_keys(tmp_path, a)
    assert done.returncode == 0, done.stderr
    header = (REPO / "systemd" / "release-keys").read_text()
    assert target.read_text() == header + _line(b"a") + "\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert release_keys.fingerprint(_raw(_line(b"a"))) in done.stdout
    # The fingerprint a release maker publishes is the one the box prints and the page shows.
    printed = subprocess.run([sys.executable, "-s", "-m", "appliance.release_keys", "fingerprint", str(b)],
                             capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert printed.split()[:2] == [release_keys.fingerprint(_raw(_line(b"b"))), "release"]
    # A key added by hand, a header edited: kept.  A key given again: not listed twice.
    by_hand = _line(b"by hand", "added by hand")
    target.write_text(target.read_text().replace("# The release keys", "# Our keys") + by_hand + "\n")
    before = target.read_text()
    done, _ = _install_keys(tmp_path, a, b)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == before + _line(b"b", "release 2026") + "\n"
    done, _ = _install_keys(tmp_path, b, a)
    assert target.read_text() == before + _line(b"b", "release 2026") + "\n"
    assert "already listed" in done.stdout


def test_install_sh_refuses_a_key_file_that_is_not_one_and_changes_nothing(tmp_path):
    good, private = tmp_path / "good.pub", tmp_path / "release.pem"
    good.write_text(_line(b"a") + "\n")
    bundles.new_key(private)                                # the private key, given by mistake
    target = tmp_path / "etc" / "companion" / "release-keys"
    target.parent.mkdir(parents=True)
    target.write_text("# ours\n" + _line(b"z") + "\n")
    for wrong in (private, tmp_path / "missing.pub"):
        done, _ = _install_keys(tmp_path, good, wrong)
        assert done.returncode != 0
        assert str(wrong.name) in done.stderr, done.stderr
        assert target.read_text() == "# ours\n" + _line(b"z") + "\n"
    # ... and so does the whole install, before it does anything (it would ask for root next).
    done, _ = _install_keys(tmp_path, private, only=False)
    assert done.returncode == 2 and "private key" in done.stderr and "sudo" not in done.stderr


def test_install_sh_writes_the_list_only_through_the_merge():
    """The whole install (which needs root) reaches the list the way the
    tested --keys-only does: one function, which makes the list only when
    there is none."""
    text = (REPO / "systemd" / "install.sh").read_text()
    mentions = [line.strip() for line in text.splitlines() if "release-keys" in line and not line.lstrip().startswith("#")]
    assert mentions == ['RELEASE_KEYS="${COMPANION_RELEASE_KEYS:-/etc/companion/release-keys}"',
                        'install -m 0644 "$repo/systemd/release-keys" "$RELEASE_KEYS"']
    main_flow = text[text.index('if [ "$(id -u)" -ne 0 ]'):]
    assert "\nadd_release_keys\n" in main_flow


# -- the owner's change: the service asks, root serves ------------------------------------------

@pytest.fixture
def box(tmp_path):
    lay = Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root",
                 keys=tmp_path / "etc" / "release-keys")
    lay.keys.parent.mkdir(parents=True)
    lay.keys.write_text("# the box's keys\n" + _line(b"first", "release 2025") + "\n")
    owner_dir = tmp_path / "owner"
    owners.set_setup_open(owner_dir, True)
    owners.make_owner(PASSWORD, owner_dir)
    owners.close_setup(owner_dir)
    return lay, owner_dir


def test_the_service_writes_a_private_request_with_a_checked_line(box):
    lay, _ = box
    rid = release_keys.request_change(lay, PASSWORD, add="  " + _line(b"new", "release 2026") + "  ")
    path = lay.inbox / release_keys.REQUEST
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"request": rid, "owner_password": PASSWORD,
                                            "add": _line(b"new", "release 2026")}
    with pytest.raises(ReleaseKeyError):
        release_keys.request_change(lay, PASSWORD, remove="SHA256:short")
    with pytest.raises(ReleaseKeyError):
        release_keys.request_change(lay, PASSWORD, add="ed25519 nope")
    with pytest.raises(TypeError):
        release_keys.request_change(lay, PASSWORD)


def test_the_owner_adds_a_key_once_and_removes_one_by_its_fingerprint(box):
    lay, owner_dir = box
    assert root_keys.serve_request(lay, owner_dir) is None          # nothing asked
    new = _line(b"new", "release 2026")
    rid = release_keys.request_change(lay, PASSWORD, add=new)
    result = root_keys.serve_request(lay, owner_dir)
    fp = release_keys.fingerprint(_raw(new))
    assert result == {"request": rid, "state": "done", "reason": "", "params": {}, "fingerprint": fp}
    assert release_keys.read_result(lay) == result
    assert not (lay.inbox / release_keys.REQUEST).exists()
    assert [k["fingerprint"] for k in release_keys.listed(lay.keys)][-1] == fp
    assert stat.S_IMODE(lay.keys.stat().st_mode) == 0o644
    before = lay.keys.read_text()
    release_keys.request_change(lay, PASSWORD, add=new.replace("release 2026", "again"))
    assert root_keys.serve_request(lay, owner_dir)["reason"] == root_keys.ALREADY
    assert lay.keys.read_text() == before
    first = release_keys.fingerprint(_raw(_line(b"first")))
    release_keys.request_change(lay, PASSWORD, remove=first)
    assert root_keys.serve_request(lay, owner_dir)["state"] == "done"
    assert lay.keys.read_text() == before.replace(_line(b"first", "release 2025") + "\n", "")
    assert bundles.read_keys(lay.keys) == [_raw(new)]
    release_keys.request_change(lay, PASSWORD, remove=first)
    assert root_keys.serve_request(lay, owner_dir)["reason"] == root_keys.NOT_LISTED


def test_removing_the_last_key_is_the_owners_call_and_the_result_says_what_it_means(box):
    lay, owner_dir = box
    release_keys.request_change(lay, PASSWORD, remove=release_keys.fingerprint(_raw(_line(b"first"))))
    result = root_keys.serve_request(lay, owner_dir)
    assert result["state"] == "done" and result["reason"] == root_keys.LAST_REMOVED
    assert not release_keys.accepts_updates(lay.keys)
    assert lay.keys.read_text() == "# the box's keys\n"


def test_a_wrong_password_changes_nothing_and_roots_record_is_the_one_that_counts(box):
    lay, owner_dir = box
    before = lay.keys.read_text()
    # The service's own copy of the hash says yes to the attacker's password: root never reads it.
    from appliance import owner
    owner.write_hash(lay.data, owner.hash_password("attacker's own"))
    for password in ("attacker's own", "", None, 1234):
        release_keys.request_change(lay, password, add=_line(b"evil"))
        result = root_keys.serve_request(lay, owner_dir)
        assert result["state"] == "failed" and result["reason"] == root_keys.WRONG_PASSWORD
        assert lay.keys.read_text() == before
        assert not (lay.inbox / release_keys.REQUEST).exists()


def test_root_checks_the_line_again_and_reads_no_request_through_a_link(box, tmp_path):
    lay, owner_dir = box
    before = lay.keys.read_text()
    request = lay.inbox / release_keys.REQUEST
    lay.inbox.mkdir(parents=True, exist_ok=True)
    # Written straight into the file (no check by the service): refused by root.
    request.write_text(json.dumps({"request": "r1", "owner_password": PASSWORD, "add": "ed25519 AAAA evil"}))
    result = root_keys.serve_request(lay, owner_dir)
    assert result["state"] == "failed" and result["reason"] == release_keys.LINE_RULE
    request.write_text(json.dumps({"request": "../../x", "owner_password": PASSWORD,
                                   "add": _line(b"k"), "remove": "SHA256:" + "A" * 43}))
    result = root_keys.serve_request(lay, owner_dir)
    assert result["state"] == "failed" and result["request"] == "-"
    # A link planted at the request's name, to a file holding a perfect request: not followed.
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"request": "r2", "owner_password": PASSWORD, "add": _line(b"planted")}))
    request.symlink_to(elsewhere)
    result = root_keys.serve_request(lay, owner_dir)
    assert result["state"] == "failed" and result["reason"] == root_keys.UNREADABLE
    assert not request.is_symlink() and elsewhere.exists()
    assert lay.keys.read_text() == before
    # The inbox itself a link to a folder holding a perfect request: not entered.
    other = tmp_path / "other-inbox"
    other.mkdir()
    (other / release_keys.REQUEST).write_text(elsewhere.read_text())
    shutil.rmtree(lay.inbox)
    lay.inbox.symlink_to(other)
    assert root_keys.serve_request(lay, owner_dir) is None
    assert (other / release_keys.REQUEST).exists() and lay.keys.read_text() == before


# -- the wheels a bundle signs: only the bytes requirements.hashes lists -------------------------

def _canon_pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.replace("\\\n", " ").splitlines():
        first = line.split("#", 1)[0].split()
        if first and "==" in first[0]:
            name, version = first[0].split("==")
            pins[release.canonical(name)] = version
    return pins


def test_every_pin_of_the_lock_has_hashes_at_the_same_version():
    lock = _canon_pins((REPO / "requirements.lock").read_text())
    table = release.read_hashes(REPO / "requirements.hashes")
    assert {name: version for name, (version, _) in table.items()} == lock, \
        "requirements.hashes is not made from this lock: make it again as its header (and docs/appliance.md) says"
    assert all(hashes and all(len(h) == 64 for h in hashes) for _, hashes in table.values())
    # The lock itself stays without hashes: pip would turn every -c requirements.lock into
    # hash-checking mode, which the editable test install and install.sh's local one cannot pass.
    assert "--hash" not in (REPO / "requirements.lock").read_text()


def _wheel(folder: Path, name: str, version: str, body: str = "") -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": f"VALUE = {body!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d.encode()).digest()).decode().rstrip('=')},"
                     f"{len(d)}\n" for n, d in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for n, d in {**files, f"{info}/RECORD": record}.items():
            zf.writestr(n, d)
    return path


@pytest.fixture
def offline_source(tmp_path, monkeypatch):
    """A companion of two files whose one dependency (and pip) come from a
    folder of wheels, pip offline and deaf to this machine's settings."""
    src, index = tmp_path / "src", tmp_path / "index"
    (src / "companion").mkdir(parents=True)
    index.mkdir()
    (src / "companion" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "companion"\nversion = "0.0.1"\ndependencies = ["tinydep"]\n'
        '[tool.setuptools]\npackages = ["companion"]\n')
    (src / "requirements.lock").write_text("tinydep==1.0\npip==99.0\n")
    good = {name: hashlib.sha256(_wheel(index, name, "99.0" if name == "pip" else "1.0").read_bytes()).hexdigest()
            for name in ("tinydep", "pip")}
    (src / "requirements.hashes").write_text(
        f"pip==99.0 \\\n    --hash=sha256:{good['pip']}\n    # via -r requirements.lock\n"
        f"tinydep==1.0 \\\n    --hash=sha256:{'0' * 64} \\\n    --hash=sha256:{good['tinydep']}\n")
    for name, value in (("PIP_CONFIG_FILE", os.devnull), ("PIP_NO_INDEX", "1"), ("PIP_FIND_LINKS", str(index)),
                        ("PIP_NO_CACHE_DIR", "1"), ("PIP_DISABLE_PIP_VERSION_CHECK", "1")):
        monkeypatch.setenv(name, value)
    key = tmp_path / "release.pem"
    bundles.new_key(key)
    return src, index, key


def _bundle(tmp_path, src, key, *extra):
    out = tmp_path / "out.bundle"
    done = subprocess.run([sys.executable, "-m", "appliance.cli", "bundle", str(out), "--key", str(key),
                           "--machine", "x86_64", "--source", str(src), *extra],
                          capture_output=True, text=True, cwd=REPO)
    return done, out


def _bundled_wheels(path: Path) -> dict[str, bytes]:
    payload = path.read_bytes()[:-(bundles.SIG_LEN + len(bundles.TRAILER))]
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        return {m.name.removeprefix("wheels/"): tar.extractfile(m).read()
                for m in tar if m.name.startswith("wheels/")}


@pytest.mark.parametrize("how", ["fetched", "--wheels"])
def test_a_wheel_whose_bytes_differ_from_the_pinned_hash_makes_no_bundle(tmp_path, offline_source, how):
    src, index, key = offline_source
    extra = ["--wheels", str(index)] if how == "--wheels" else []
    done, out = _bundle(tmp_path, src, key, *extra)
    assert done.returncode == 0, done.stderr
    wheels = _bundled_wheels(out)
    assert set(wheels) == {"companion-0.0.1-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl",
                           "pip-99.0-py3-none-any.whl"}
    assert wheels["tinydep-1.0-py3-none-any.whl"] == (index / "tinydep-1.0-py3-none-any.whl").read_bytes()
    out.unlink()
    _wheel(index, "tinydep", "1.0", body="swapped on its way")       # same name and version, other bytes
    done, out = _bundle(tmp_path, src, key, *extra)
    assert done.returncode != 0 and not out.exists()
    assert "no bundle" in done.stderr, done.stderr


def test_a_dependency_requirements_hashes_does_not_pin_makes_no_bundle(tmp_path, offline_source):
    src, index, key = offline_source
    (src / "requirements.hashes").write_text(
        "\n".join(line for line in (src / "requirements.hashes").read_text().split("\n") if "pip" not in line))
    done, out = _bundle(tmp_path, src, key)
    assert done.returncode != 0 and not out.exists()
    assert "pip==99.0 has no hash" in done.stderr


def test_the_images_wheelhouse_is_fetched_by_hash(tmp_path, monkeypatch):
    """systemd/image/build's wheelhouse: the same two steps, each pin with
    the hashes requirements.hashes lists (pip itself played here: it runs
    for real in the bundle's test above)."""
    build = _load_build()
    monkeypatch.setattr(build, "CACHE", tmp_path)
    monkeypatch.setattr(build, "say", lambda *a: None)
    table = release.read_hashes(REPO / "requirements.hashes")
    ran = []

    def pip(argv, check):
        ran.append(argv)
        if "--report" in argv:
            report = Path(argv[argv.index("--report") + 1])
            report.write_text(json.dumps({"install": [{"metadata": {"name": "Flask", "version": table["flask"][0]}},
                                                      {"metadata": {"name": "luma.core",
                                                                    "version": table["luma-core"][0]}}]}))
        else:
            pinned = Path(argv[argv.index("-r") + 1]).read_text()
            ran.append(pinned)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(release.subprocess, "run", pip)
    monkeypatch.setattr(build, "run", lambda argv, **kw: pip(argv, True))
    build.wheelhouse()
    download = next(argv for argv in ran if isinstance(argv, list) and "download" in argv)
    assert "--require-hashes" in download and "--no-deps" in download
    assert "--platform" in download and "manylinux_2_36_aarch64" in download
    pinned = ran[-1]
    for name in ("flask", "luma-core"):
        assert all(f"--hash=sha256:{h}" in pinned for h in table[name][1])


def _load_build():
    loader = importlib.machinery.SourceFileLoader("image_build", str(REPO / "systemd" / "image" / "build"))
    spec = importlib.util.spec_from_loader("image_build", loader)
    build = importlib.util.module_from_spec(spec)
    loader.exec_module(build)
    return build


def test_the_image_build_hands_its_keys_to_install_sh_and_refuses_a_file_that_is_no_key(tmp_path, monkeypatch):
    """systemd/image/build --release-key FILE: checked before the build
    starts, then given to install.sh inside the image's root (Debian's root,
    the chroot and the mounts played here)."""
    build = _load_build()
    private, public = tmp_path / "release.pem", tmp_path / "release.pub"
    public.write_text(bundles.new_key(private) + " companion releases\n")
    with pytest.raises(SystemExit) as caught:
        build.release_keys([public, private])
    assert "release.pem" in str(caught.value) and "private key" in str(caught.value)
    keys = build.release_keys([public])
    base = tmp_path / "base"
    (base / "tmp").mkdir(parents=True)
    seen = {}

    def chroot(root, *cmd, env=None, **kw):
        if cmd[:2] == ("bash", "/tmp/companion-src/systemd/install.sh"):
            seen["argv"] = cmd[2:]
            seen["keys"] = {p.name: p.read_text() for p in (root / "tmp/companion-keys").iterdir()}

    class NoMounts:
        def __init__(self, root):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(build, "base_root", lambda: base)
    monkeypatch.setattr(build, "run", lambda cmd, **kw: shutil.copytree(cmd[-2], cmd[-1], symlinks=True))
    monkeypatch.setattr(build, "chroot", chroot)
    monkeypatch.setattr(build, "Mounts", NoMounts)
    monkeypatch.setattr(build, "customise", lambda root: None)
    monkeypatch.setattr(build, "say", lambda *a: None)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    root = build.make_root(tmp_path / "work", ["systemd/install.sh", "systemd/release-keys"], wheels, keys)
    assert seen["argv"] == ("--release-key", "/tmp/companion-keys/key-0.pub")
    assert seen["keys"] == {"key-0.pub": public.read_text()}
    assert not (root / "tmp/companion-keys").exists()
