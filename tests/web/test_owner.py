"""The owner, apart from the table: set-up ends with an owner password,
then the PIN runs games and never the system.

Read as the owner model in docs/security.md: finishing set-up needs the
owner's password and ends it for good (409 whatever the credential); the
owner's routes refuse the PIN alone and a wrong password, and take the
right one; wrong passwords are bounded from any number of addresses; a
reset on the box's buttons waits for the owner's confirmation."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from appliance import owner, setup
from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

HOST = {"Host": "10.42.0.1:8000"}
PIN = {**HOST, "X-Table-Pin": "1234"}
OWNER_PW = "Marc-Antoine's 2nd"


def _key(body=b"k" * 32):
    kind = "ssh-ed25519"
    blob = struct.pack(">I", len(kind)) + kind.encode() + struct.pack(">I", len(body)) + body
    return f"{kind} {base64.b64encode(blob).decode()} eloise@laptop"


@pytest.fixture
def box(session, tmp_path):
    from web.app import create_app

    data = tmp_path / "owner-data"
    data.mkdir()
    config = {"url": "http://10.42.0.1:8000/", "port": 8000, "data_dir": str(data), "mock": False,
              "name": "companion", "language": "en", "root_requests": True}
    app = create_app(session, config=config, pin="1234")
    yield app, data
    app.extensions["companion"].close()


def _files(data: Path) -> dict:
    return {p.name: p.read_bytes() for p in data.iterdir()}


def _finish(client, **extra):
    return client.post("/api/setup", json={"name": "Éloïse", "done": True, "owner_password": OWNER_PW, **extra},
                       headers=PIN)


def test_finishing_needs_an_owner_password_and_ends_setup_for_good(box):
    app, data = box
    client = app.test_client()
    before = _files(data)
    res = client.post("/api/setup", json={"name": "Éloïse", "done": True}, headers=PIN)
    assert res.status_code == 400 and "owner password" in res.json["error"]
    assert _files(data) == before
    res = client.post("/api/setup", json={"done": True, "owner_password": "123456789012"}, headers=PIN)
    assert res.status_code == 400 and "not only digits" in res.json["error"], "the rule, said"
    assert _files(data) == before
    res = _finish(client)
    assert res.status_code == 200 and "owner" in res.json["saved"]
    assert not setup.in_setup_mode(data)
    assert json.loads((data / setup.SYSTEM_REQUEST).read_text())["done"] is True
    # From now on: refused whatever the credential, and nothing changes.
    before = _files(data)
    for headers in (HOST, PIN, {**PIN, "X-Owner-Password": OWNER_PW}):
        res = client.post("/api/setup", json={"ssh_key": _key(b"m" * 32), "done": True,
                                              "owner_password": "someone else's"}, headers=headers)
        assert res.status_code == 409 and "Reset settings" in res.json["error"]
    assert _files(data) == before


def test_an_ssh_key_only_with_finish_then_only_the_owners(box):
    app, data = box
    client = app.test_client()
    res = client.post("/api/setup", json={"ssh_key": _key(), "owner_password": OWNER_PW}, headers=PIN)
    assert res.status_code == 400 and "SSH key" in res.json["error"]
    assert not (data / setup.SYSTEM_REQUEST).exists()
    assert _finish(client, ssh_key=_key()).status_code == 200
    assert json.loads((data / setup.SYSTEM_REQUEST).read_text())["ssh_key"] == _key()
    (data / setup.SYSTEM_REQUEST).unlink()          # root took it
    # After set-up: the owner's route, never the PIN alone.
    res = client.post("/api/owner/ssh-key", json={"ssh_key": _key(b"m" * 32)}, headers=PIN)
    assert res.status_code == 401 and "owner" in res.json["error"]
    res = client.post("/api/owner/ssh-key", json={"ssh_key": _key(b"m" * 32)},
                      headers={**HOST, "X-Owner-Password": "not the owner's"})
    assert res.status_code == 403 and "owner" in res.json["error"]
    assert not (data / setup.SYSTEM_REQUEST).exists()
    res = client.post("/api/owner/ssh-key", json={"ssh_key": _key(b"m" * 32)},
                      headers={**HOST, "X-Owner-Password": OWNER_PW})
    assert res.status_code == 202
    assert json.loads((data / setup.SYSTEM_REQUEST).read_text()) == {"ssh_key": _key(b"m" * 32),
                                                                     "owner_password": OWNER_PW}
    res = client.post("/api/owner/ssh-key/remove", headers={**HOST, "X-Owner-Password": OWNER_PW})
    assert res.status_code == 202
    assert json.loads((data / setup.SYSTEM_REQUEST).read_text()) == {"ssh_remove": True,
                                                                     "owner_password": OWNER_PW}


def test_a_box_without_an_owner_refuses_the_owners_routes(box):
    app, data = box
    res = app.test_client().post("/api/owner/ssh-key/remove", headers={**HOST, "X-Owner-Password": OWNER_PW})
    assert res.status_code == 403 and "no owner yet" in res.json["error"]


def test_on_a_laptop_no_request_keeps_the_owner_password(box):
    app, data = box
    app.extensions["companion"].config["root_requests"] = False
    assert _finish(app.test_client(), timezone="Europe/Paris").status_code == 200
    assert OWNER_PW not in (data / setup.SYSTEM_REQUEST).read_text()
    assert owner.verify(OWNER_PW, owner.read_hash(data))


def test_wrong_owner_passwords_from_many_addresses_are_bounded(box):
    app, data = box
    client = app.test_client()
    assert _finish(client).status_code == 200
    guard = app.extensions["companion"].owner_guard
    now = [1000.0]
    guard.clock = lambda: now[0]
    guard._filled_at = now[0]
    codes = []
    for i in range(300):
        res = client.post("/api/owner/ssh-key/remove", headers={**HOST, "X-Owner-Password": f"guess number {i}"},
                          environ_base={"REMOTE_ADDR": f"192.168.1.{i % 30 + 10}"})
        codes.append(res.status_code)
        now[0] += 0.1                   # 300 tries in 30 s
    assert set(codes) <= {403, 429}
    assert guard.compared <= 10 + 1, f"{guard.compared} wrong passwords compared"
    assert not (data / setup.SYSTEM_REQUEST).exists() or "ssh_remove" not in (data / setup.SYSTEM_REQUEST).read_text()
    # The owner still gets in from an address that did not guess, once the bucket refills.
    now[0] += 120
    res = client.post("/api/owner/ssh-key/remove", headers={**HOST, "X-Owner-Password": OWNER_PW},
                      environ_base={"REMOTE_ADDR": "192.168.1.200"})
    assert res.status_code == 202


def test_a_reset_on_the_buttons_waits_for_the_owner(box):
    app, data = box
    client = app.test_client()
    assert _finish(client).status_code == 200
    (data / setup.SYSTEM_REQUEST).unlink()
    headers = {**HOST, "X-Owner-Password": OWNER_PW}
    res = client.post("/api/owner/reset", headers=headers)
    assert res.status_code == 409 and "Reset settings" in res.json["error"]
    assert not setup.in_setup_mode(data)
    setup.ask_reset(data)               # Menu ▸ Reset settings on the box
    assert client.post("/api/owner/reset", headers=PIN).status_code == 401, "the PIN alone is no owner"
    assert not setup.in_setup_mode(data)
    res = client.post("/api/owner/reset", headers=headers)
    assert res.status_code == 202
    assert setup.in_setup_mode(data) and owner.read_hash(data) is None
    assert json.loads((data / setup.SYSTEM_REQUEST).read_text()) == {"reset": True, "owner_password": OWNER_PW}


def test_a_reset_asked_long_ago_is_no_longer_asked(tmp_path):
    setup.ask_reset(tmp_path, now=1000.0)
    assert setup.reset_asked(tmp_path, now=1000.0 + setup.RESET_WINDOW_S)
    assert not setup.reset_asked(tmp_path, now=1001.0 + setup.RESET_WINDOW_S)


def test_the_box_with_an_owner_only_asks_for_a_reset(tmp_path, make_box):
    from hardware.testing import box_config
    from hardware.ui.setup import ResetConfirm

    data = tmp_path / "box-data"
    data.mkdir()
    (data / "companion.toml").write_text('name = "Éloïse"\n')
    setup.mark_done(data)
    owner.write_hash(data, owner.hash_password(OWNER_PW))
    box = make_box(box_config(data_dir=str(data)))
    box.press("ok")
    box.press("up")
    box.press("ok")
    assert isinstance(box.app.layers[-1], ResetConfirm)
    box.press("ok")
    assert not setup.in_setup_mode(data) and (data / "companion.toml").exists()
    assert setup.reset_asked(data)
    assert "owner" in " ".join(box.app.toast or [])
