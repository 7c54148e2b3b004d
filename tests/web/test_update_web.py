"""The Update page and its API: the owner asks, the root installer decides.

Installing a bundle, going back to the previous version and changing the
release keys are the owner's (the header X-Owner-Password): the table PIN
alone is refused with 401, a wrong password with 403, and then nothing is
asked of root.  What root gets (appliance.release_keys.request_change,
updates.request_back) is recorded as well as written: root checks the
password again itself, and its own tests are the appliance's (tests/core)."""

from __future__ import annotations

import base64
import functools
import os

import pytest

import companion
from appliance import owner, release_keys, updates
from companion import durable
from companion.session import TableSession
from companion.store import Store
from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from web_support import make_app, pin_headers

OWNER = "Éloïse's long password"


def key_line(n: int, comment: str = "") -> str:
    """A release key's public line (``n`` makes each key its own)."""
    return f"ed25519 {base64.b64encode(bytes([n]) * 32).decode()}" + (f" {comment}" if comment else "")


def fingerprint_of(line: str) -> str:
    return release_keys.fingerprint(base64.b64decode(line.split()[1]))


KEY = key_line(1, "release maker")
FINGERPRINT = fingerprint_of(KEY)


@functools.cache
def owner_hash() -> str:
    return owner.hash_password(OWNER)        # scrypt: made once for the whole module


def owner_headers(password=OWNER) -> dict:
    return {"X-Owner-Password": password}


def make_owner(data_dir) -> None:
    owner.write_hash(data_dir, owner_hash())


@pytest.fixture
def asked_keys(monkeypatch):
    """Each change of the release keys asked of root: (layout, password, change, request id)."""
    asked, real = [], release_keys.request_change

    def request_change(layout, owner_password, **change):
        request_id = real(layout, owner_password, **change)
        asked.append((layout, owner_password, change, request_id))
        return request_id
    monkeypatch.setattr(release_keys, "request_change", request_change)
    return asked


@pytest.fixture
def asked_back(monkeypatch):
    """Each request to go back, as root gets it: (layout, password, request id)."""
    asked, real = [], updates.request_back

    def request_back(layout, owner_password):
        request_id = real(layout, owner_password)
        asked.append((layout, owner_password, request_id))
        return request_id
    monkeypatch.setattr(updates, "request_back", request_back)
    return asked


def root_answered(lay, **result) -> None:
    """Root's answer to a change of the keys, where it writes it."""
    durable.write_json(lay.root / release_keys.RESULT, result)


def installed(prefix, current="1.0", previous="0.9"):
    """A fake /opt/companion: two releases, ``current`` and ``previous`` linked."""
    for version in (current, previous):
        if version:
            (prefix / "releases" / version).mkdir(parents=True, exist_ok=True)
    prefix.mkdir(parents=True, exist_ok=True)
    os.symlink(f"releases/{current}", prefix / "current")
    if previous:
        os.symlink(f"releases/{previous}", prefix / "previous")


class Box:
    """A box with an owner (unless ``with_owner`` is False), an installer
    (unless ``installer`` is False) with a version before this one (unless
    ``previous`` is None), and release ``keys``; all under ``tmp_path``."""

    def __init__(self, tmp_path, *, installer=True, previous="0.9", keys=(KEY,), with_owner=True):
        self.store = Store(tmp_path / "data")
        self.lay = updates.Layout(prefix=tmp_path / "opt", data=tmp_path / "data", root=tmp_path / "root",
                                  keys=tmp_path / "etc" / "release-keys")
        if installer:
            installed(self.lay.prefix, previous=previous)
        self.lay.keys.parent.mkdir(parents=True)
        self.lay.keys.write_text("".join(line + "\n" for line in keys), encoding="utf-8")
        if with_owner:
            make_owner(tmp_path / "data")
        self.app = make_app(TableSession(self.store), data_dir=str(self.lay.data), update_state=str(self.lay.root),
                            update_prefix=str(self.lay.prefix), release_keys=str(self.lay.keys))
        self.client = self.app.test_client()

    def close(self):
        self.app.extensions["companion"].close()
        self.store.close()

    def nothing_asked(self) -> bool:
        return not any(path.exists() for path in (self.lay.request, self.lay.incoming, self.lay.back_request,
                                                  self.lay.inbox / release_keys.REQUEST))


@pytest.fixture
def make(tmp_path, asked_keys, asked_back):
    made = []

    def make_box_(**kw):
        made.append(Box(tmp_path / str(len(made)), **kw))
        return made[-1]
    yield make_box_
    for b in made:
        b.close()


@pytest.fixture
def box(make):
    b = make()
    return b.client, b.lay


def test_without_an_update_the_page_and_the_api_say_so(box):
    client, _lay = box
    assert client.get("/api/update").json == {"state": "none", "to": None, "back": None, "text": "No update yet.",
                                              "version": "1.0", "previous": "0.9", "installer": True,
                                              "accepts_updates": True}
    page = client.get("/update?lang=fr")
    assert page.status_code == 200 and "Aucune mise à jour pour l’instant." in page.get_data(as_text=True)


def refused_to_the_pin(r, status=401):
    """The refusal of an owner's route to a request without the owner password."""
    assert r.status_code == status, r.json
    assert "owner" in r.json["error"] and "X-Owner-Password" in r.json["error"], r.json
    return True


def test_only_the_owner_drops_the_bundle_and_asks_and_nothing_more(box):
    client, lay = box
    assert refused_to_the_pin(client.post("/api/update", data=b"bundle bytes"))
    # The table PIN is on the panel for everyone: alone, it is no owner password.
    assert refused_to_the_pin(client.post("/api/update", data=b"bundle bytes", headers=pin_headers()))
    wrong = client.post("/api/update", data=b"bundle bytes",
                        headers={**pin_headers(), **owner_headers("not it at all")})
    assert wrong.status_code == 403 and wrong.json["error"] == "wrong owner password"
    assert not lay.request.exists() and not lay.incoming.exists()
    r = client.post("/api/update", data=b"bundle bytes", headers=owner_headers())
    assert r.status_code == 202, r.json
    assert r.json["state"] == "asked"
    assert lay.incoming.read_bytes() == b"bundle bytes"
    assert lay.request.read_text() == r.json["request"]
    # One at a time: a second bundle waits for the first's result.
    again = client.post("/api/update", data=b"other", headers=owner_headers())
    assert again.status_code == 409 and "already under way" in again.json["error"]
    assert lay.incoming.read_bytes() == b"bundle bytes"


def test_a_box_with_no_owner_yet_takes_no_bundle(make):
    b = make(with_owner=False)
    r = b.client.post("/api/update", data=b"bundle bytes", headers=owner_headers())
    assert r.status_code == 403 and "no owner yet" in r.json["error"]
    assert b.nothing_asked()


def test_a_box_without_release_keys_says_so_and_takes_no_bundle(make):
    b = make(keys=())
    assert b.client.get("/api/update").json["accepts_updates"] is False
    page = b.client.get("/update").get_data(as_text=True)
    assert '<p class="msg error" id="no-keys" role="status">This box accepts no update: add a release key.</p>' in page
    r = b.client.post("/api/update", data=b"bundle bytes", headers=owner_headers())
    assert r.status_code == 409 and "add a release key" in r.json["error"]
    assert b.nothing_asked()
    # With a key, the line is there for the script but hidden.
    keyed = make()
    assert 'id="no-keys" role="status" hidden>' in keyed.client.get("/update").get_data(as_text=True)


def test_a_computer_with_no_installer_says_where_updates_are_installed_and_asks_nothing(make, asked_back, asked_keys):
    """The laptop demo: no /opt/companion/current.  The page shows the
    running version and says updates are installed on the box itself; it
    has nothing to follow, and the routes ask no installer that is not there."""
    b = make(installer=False)
    status = b.client.get("/api/update").json
    assert status["installer"] is False and status["version"] == companion.__version__ and status["previous"] is None
    page = b.client.get("/update").get_data(as_text=True)
    assert "Updates are installed on the box itself" in page
    assert f"Running: version {companion.__version__}." in page
    assert 'id="update-status"' not in page and 'id="update-form"' not in page    # update.js has nothing to wait for
    assert b.client.post("/api/update", data=b"bundle", headers=owner_headers()).status_code == 409
    assert b.client.post("/api/update/back", headers=owner_headers()).status_code == 409
    r = b.client.post("/api/update/keys", json={"add": KEY}, headers=owner_headers())
    assert r.status_code == 409 and "no installer" in r.json["error"]
    assert b.nothing_asked() and not asked_back and not asked_keys


def test_the_page_shows_the_running_and_the_previous_version(make):
    b = make()
    page = b.client.get("/update").get_data(as_text=True)
    assert "Running: version 1.0." in page and "The version before it, 0.9, is kept on the box." in page
    assert 'id="back-ask"' in page and "Go back to version 0.9?" in page
    assert 'autocomplete="current-password"' in page and 'data-testid="owner-password"' in page
    alone = make(previous=None)
    assert alone.client.get("/api/update").json["previous"] is None
    assert 'id="back-ask"' not in alone.client.get("/update").get_data(as_text=True)


# -- back to the previous version ----------------------------------------------------

def test_only_the_owner_goes_back_to_the_previous_version(make, asked_back):
    b = make()
    assert refused_to_the_pin(b.client.post("/api/update/back"))
    assert refused_to_the_pin(b.client.post("/api/update/back", headers=pin_headers()))
    assert b.client.post("/api/update/back", headers=owner_headers("not it at all")).status_code == 403
    assert not asked_back
    r = b.client.post("/api/update/back", headers=owner_headers())
    assert r.status_code == 202, r.json
    assert r.json["state"] == "asked"
    assert r.json["text"] == "Back to the previous version asked for: waiting for the installer…"
    (layout, password, request_id), = asked_back
    # Root gets the password to compare with its own copy; the layout is the box's.
    assert password == OWNER and layout.prefix == b.lay.prefix and layout.data == b.lay.data
    assert r.json["request"] == request_id and b.lay.back_request.exists()
    # Asked until root answers: one request at a time.
    assert b.client.get("/api/update").json["state"] == "asked"
    again = b.client.post("/api/update/back", headers=owner_headers())
    assert again.status_code == 409 and "already under way" in again.json["error"]


def test_going_back_waits_for_an_update_under_way_and_needs_a_previous_version(make, asked_back):
    b = make()
    durable.write_json(b.lay.status, {"state": "installing", "to": "2.0", "back": "1.0"})
    r = b.client.post("/api/update/back", headers=owner_headers())
    assert r.status_code == 409 and "already under way" in r.json["error"]
    alone = make(previous=None)
    r = alone.client.post("/api/update/back", headers=owner_headers())
    assert r.status_code == 409 and "no previous version" in r.json["error"]
    assert not asked_back


# -- the release keys --------------------------------------------------------------------

def test_the_keys_are_public_fingerprints_the_same_with_or_without_a_credential(make):
    laptop = key_line(2, "Marc-Antoine's laptop")
    b = make(keys=(KEY, laptop))
    root_answered(b.lay, request="0123", state="failed", reason=release_keys.COMMENT_RULE, params={"n": 100})
    answers = {b.client.get("/api/update/keys", headers=h).get_data()
               for h in ({}, pin_headers(), owner_headers(), owner_headers("not it at all"))}
    assert len(answers) == 1
    r = b.client.get("/api/update/keys?lang=fr")
    assert r.headers["Cache-Control"] == "no-store"
    assert r.json["keys"] == [{"fingerprint": FINGERPRINT, "comment": "release maker"},
                              {"fingerprint": fingerprint_of(laptop), "comment": "Marc-Antoine's laptop"}]
    assert r.json["accepts_updates"] is True
    # Root's reason, in the page's language.
    assert r.json["result"]["request"] == "0123" and r.json["result"]["state"] == "failed"
    from companion.i18n import gettext
    assert r.json["result"]["text"] == gettext(release_keys.COMMENT_RULE, "fr", n=100)
    page = b.client.get("/update").get_data(as_text=True)
    assert fingerprint_of(laptop) in page and "Marc-Antoine&#39;s laptop" in page


def test_only_the_owner_changes_the_keys(make, asked_keys):
    b = make()
    for headers in ({}, pin_headers()):
        assert refused_to_the_pin(b.client.post("/api/update/keys", json={"add": KEY}, headers=headers))
    assert b.client.post("/api/update/keys", json={"remove": FINGERPRINT},
                         headers=owner_headers("not it at all")).status_code == 403
    assert not asked_keys and not (b.lay.inbox / release_keys.REQUEST).exists()
    r = b.client.post("/api/update/keys", json={"add": "  " + KEY.replace(" ", "   ") + "  "}, headers=owner_headers())
    assert r.status_code == 202, r.json
    r2 = b.client.post("/api/update/keys", json={"remove": FINGERPRINT}, headers=owner_headers())
    assert r2.status_code == 202, r2.json
    # Root gets the line as it will list it, and the password to check again.
    assert [(lay.keys, password, change, request) for lay, password, change, request in asked_keys] == [
        (b.lay.keys, OWNER, {"add": KEY}, r.json["request"]),
        (b.lay.keys, OWNER, {"remove": FINGERPRINT}, r2.json["request"])]
    assert r2.json["keys"] == [{"fingerprint": FINGERPRINT, "comment": "release maker"}]      # root has not done it yet


@pytest.mark.parametrize("body, words", [
    ({"add": "ssh-rsa AAAAB3NzaC1yc2E me@laptop"}, "release key: one line"),
    ({"add": "ed25519 c2hvcnQ="}, "release key: one line"),
    ({"add": ""}, "release key: one line"),
    ({"add": 12}, "release key: one line"),
    ({"add": "ed25519 " + "A" * 2000}, "release key: one line"),
    ({"add": "-----BEGIN OPENSSH PRIVATE KEY-----"}, "this is a private key"),
    ({"add": KEY + " " + "x" * 200}, "at most 100 printable characters"),
    ({"remove": "md5:00:11"}, "a fingerprint is"),
    ({"remove": ["SHA256:x"]}, "a fingerprint is"),
    ({}, 'one of: "add"'),
    ({"add": KEY, "remove": FINGERPRINT}, 'one of: "add"'),
    ({"delete": FINGERPRINT}, 'one of: "add"'),
    ([KEY], 'one of: "add"'),
])
def test_a_bad_key_change_says_why_and_asks_root_nothing(make, asked_keys, body, words):
    b = make()
    r = b.client.post("/api/update/keys", json=body, headers=owner_headers())
    assert r.status_code == 400 and words in r.json["error"], r.json
    assert not asked_keys and not (b.lay.inbox / release_keys.REQUEST).exists()
    fr = b.client.post("/api/update/keys?lang=fr", json=body, headers=owner_headers())
    assert fr.status_code == 400 and "\n" not in fr.json["error"]


def test_the_result_of_a_failed_update_in_english_and_french(box):
    client, lay = box
    durable.write_json(lay.status, {"state": "failed", "to": "2.0", "back": "1.0",
                                    "reason": "the new version did not stay up: {detail}",
                                    "params": {"detail": "it crashed 3 times"}})
    assert client.get("/api/update").json["text"] == \
        "Update to 2.0 failed: back on 1.0: the new version did not stay up: it crashed 3 times"
    assert client.get("/api/update?lang=fr").json["text"] == \
        ("La mise à jour vers 2.0 a échoué : retour à 1.0 : la nouvelle version n’a pas tenu : "
         "it crashed 3 times")
    assert "La mise à jour vers 2.0 a échoué" in client.get("/update?lang=fr").get_data(as_text=True)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_panel_says_once_that_an_update_was_rolled_back(tmp_path, language, session, make_box, monkeypatch):
    from companion.i18n import gettext
    from hardware.testing import box_config
    from test_layout import Recorder

    lay = updates.Layout(data=tmp_path / "data", root=tmp_path / "root")
    durable.write_json(lay.status, {"state": "failed", "to": "2.0.1-Éloïse", "back": "1.9.7-Marc-Antoine",
                                    "time": 5.0, "reason": "its self-check failed: {detail}",
                                    "params": {"detail": "self-check: the sample yenta_full_hand no longer "
                                               "replays as it should"}})
    notice = updates.start_notice(lay, lambda s: gettext(s, language))
    assert updates.start_notice(lay) is None          # once: the next start says nothing
    recorder = Recorder(monkeypatch)
    box = make_box(box_config(language=language, bounce_ms=1))
    session.update_table(lambda table: table.notices.append(notice))
    box.flush()
    texts = " ".join(box.frame.texts)
    want = {"en": "Update to 2.0.1-", "fr": "La mise à jour vers"}[language]
    assert want in texts, texts
    (tmp_path.parent / f"update-notice-{language}.png").write_bytes(box.frame_png(4))
    for _ in range(6):                                # scroll the whole notice
        box.press("down")
    box.flush()
    assert not recorder.failures(), recorder.failures()


BUNDLE_SIZED = bytes(range(256)) * (12 * 1024)      # 3 MiB: past the server's general limit


def test_a_bundle_sized_upload_reaches_the_page_through_the_real_server_and_no_other_route_takes_one(box, tmp_path):
    """A release with its wheels is tens of megabytes: waitress, which
    refuses any other request that big before reading it, takes it on the
    update route (the VM's first update through the real server was cut off
    by the server's general limit)."""
    from web_support import http, running_server

    client, lay = box
    app = client.application
    bundle = BUNDLE_SIZED
    with running_server(app) as server:
        status, _, body = http(server.port, "POST", "/api/actions", bundle,
                               {**pin_headers(), "Content-Type": "application/json"})
        assert status == 413, body
        status, _, body = http(server.port, "POST", "/api/update", bundle,
                               {**owner_headers(), "Content-Type": "application/octet-stream"}, timeout=120)
        assert status == 202, body
    assert lay.incoming.read_bytes() == bundle


def test_one_big_body_at_a_time_and_a_connection_cut_short_frees_its_place(box):
    """waitress reads a body whole before the app checks the owner password: one
    bundle-sized body is taken in at a time, so no client can make the box
    spool many to its card; a second meanwhile is refused at once (413),
    and an upload whose connection is dropped gives its place back."""
    import socket

    from web_support import http, running_server, wait_until
    from web.serve import BIG_SLOT

    client, lay = box
    bundle = BUNDLE_SIZED
    headers = {**owner_headers(), "Content-Type": "application/octet-stream"}
    with running_server(client.application) as server:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        slow.sendall(f"POST /api/update HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Owner-Password: {OWNER}\r\n"
                     f"Content-Length: {len(bundle)}\r\n\r\n".encode("latin-1") + bundle[:4096])   # headers are Latin-1
        try:
            # Once the server has read the slow upload's headers, it holds the place.
            assert wait_until(lambda: BIG_SLOT._holder is not None and BIG_SLOT._holder() is not None, timeout=60)
            status, _, body = http(server.port, "POST", "/api/update", bundle, headers, timeout=120)
            assert status == 413, ("a second big body was taken while the first was under way", status, body)
            assert not lay.incoming.exists()
        finally:
            slow.close()

        def taken():
            status, _, body = http(server.port, "POST", "/api/update", bundle, headers, timeout=120)
            assert status in (202, 413), (status, body)
            return status == 202
        assert wait_until(taken, timeout=60), "the dropped upload kept its place"
    assert lay.incoming.read_bytes() == bundle
