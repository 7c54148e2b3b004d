"""The Update page and its API: the PIN asks, the root installer decides."""

from __future__ import annotations

import pytest

from appliance import durable, updates
from companion.session import TableSession
from companion.store import Store
from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from web_support import make_app, pin_headers


@pytest.fixture
def box(tmp_path):
    store = Store(tmp_path / "data")
    app = make_app(TableSession(store), data_dir=str(tmp_path / "data"), update_state=str(tmp_path / "root"))
    lay = updates.Layout(data=tmp_path / "data", root=tmp_path / "root")
    yield app.test_client(), lay
    app.extensions["companion"].close()
    store.close()


def test_without_an_update_the_page_and_the_api_say_so(box):
    client, _lay = box
    assert client.get("/api/update").json == {"state": "none", "to": None, "back": None, "text": "No update yet."}
    page = client.get("/update?lang=fr")
    assert page.status_code == 200 and "Aucune mise à jour pour l’instant." in page.get_data(as_text=True)


def test_the_pin_drops_the_bundle_and_asks_and_nothing_more(box):
    client, lay = box
    assert client.post("/api/update", data=b"bundle bytes").status_code == 401
    assert client.post("/api/update", data=b"bundle bytes", headers=pin_headers("9999")).status_code == 403
    assert not lay.request.exists() and not lay.incoming.exists()
    r = client.post("/api/update", data=b"bundle bytes", headers=pin_headers())
    assert r.status_code == 202, r.json
    assert r.json["state"] == "asked"
    assert lay.incoming.read_bytes() == b"bundle bytes"
    assert lay.request.read_text() == r.json["request"]
    # One at a time: a second bundle waits for the first's result.
    again = client.post("/api/update", data=b"other", headers=pin_headers())
    assert again.status_code == 409 and "already under way" in again.json["error"]
    assert lay.incoming.read_bytes() == b"bundle bytes"


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
                               {**pin_headers(), "Content-Type": "application/octet-stream"}, timeout=120)
        assert status == 202, body
    assert lay.incoming.read_bytes() == bundle


def test_one_big_body_at_a_time_and_a_connection_cut_short_frees_its_place(box):
    """waitress reads a body whole before the app checks the PIN: one
    bundle-sized body is taken in at a time, so no client can make the box
    spool many to its card; a second meanwhile is refused at once (413),
    and an upload whose connection is dropped gives its place back."""
    import socket

    from web_support import http, running_server, wait_until
    from web.serve import BIG_SLOT

    client, lay = box
    bundle = BUNDLE_SIZED
    headers = {**pin_headers(), "Content-Type": "application/octet-stream"}
    with running_server(client.application) as server:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        slow.sendall(f"POST /api/update HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Table-Pin: {headers['X-Table-Pin']}\r\n"
                     f"Content-Length: {len(bundle)}\r\n\r\n".encode() + bundle[:4096])
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
