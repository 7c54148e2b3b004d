"""Set-up from a phone, its web and box sides: the Setup page and API, the
portal's landing in set-up mode, the panel's screens (read back by zbar)
and the box's Reset settings.

Set-up mode itself, the checks and the root side with a fake system are in
tests/core/test_setup_mode.py (whence ``_key``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from appliance import setup, wifi
from appliance.root import setup_apply as setup_root
from test_setup_mode import _key

ZBAR = shutil.which("zbarimg")


# -- the page and its API ---------------------------------------------------------------------------

@pytest.fixture
def setup_app(session, tmp_path):
    from web.app import create_app

    data = tmp_path / "setup-data"
    data.mkdir()
    (data / setup.NETWORKS).write_text(json.dumps([{"ssid": "Maison d'Éloïse", "signal": 64, "secured": True}]))
    config = {"url": "http://10.42.0.1:8000/", "port": 8000, "data_dir": str(data), "mock": False,
              "name": "companion", "language": "en"}
    app = create_app(session, config=config, pin="1234")
    yield app, data
    app.extensions["companion"].close()


def _files(data: Path) -> dict:
    return {p.name: p.read_bytes() for p in data.iterdir()}


def test_the_page_lists_the_networks_in_both_languages(setup_app):
    app, data = setup_app
    client = app.test_client()
    en = client.get("/setup?lang=en", headers={"Host": "10.42.0.1:8000"})
    fr = client.get("/setup?lang=fr", headers={"Host": "10.42.0.1:8000"})
    assert en.status_code == fr.status_code == 200
    assert "Maison d&#39;Éloïse" in en.text and "Join a Wi-Fi" in en.text
    assert "Rejoindre un Wi-Fi" in fr.text
    view = client.get("/api/setup", headers={"Host": "10.42.0.1:8000"}).json
    assert view["setup_mode"] is True and view["networks"][0]["ssid"] == "Maison d'Éloïse"


@pytest.mark.parametrize("body, status", [
    ({"name": "ok", "ssid": "home", "password": "short"}, 400),
    ({"name": "x" * 41}, 400),
    ({"language": "de"}, 400),
    ({"timezone": "../../etc/passwd"}, 400),
    ({"ssh_key": "ssh-ed25519 AAAA\nssh-rsa BBBB"}, 400),
    ({"password": "no-network-picked"}, 400),
    ({"name": "ok", "shell": "reboot"}, 400),
    (["not", "an", "object"], 400),
])
def test_a_bad_request_says_why_and_changes_nothing(setup_app, body, status):
    app, data = setup_app
    before = _files(data)
    res = app.test_client().post("/api/setup", json=body, headers={"Host": "10.42.0.1:8000", "X-Table-Pin": "1234"})
    assert res.status_code == status
    assert res.json["error"] and "\n" not in res.json["error"]
    assert _files(data) == before


def test_the_pin_is_needed_and_only_in_setup_mode(setup_app):
    app, data = setup_app
    client = app.test_client()
    before = _files(data)
    body = {"name": "Marc-Antoine"}
    assert client.post("/api/setup", json=body, headers={"Host": "10.42.0.1:8000"}).status_code == 401
    assert client.post("/api/setup", json=body,
                       headers={"Host": "10.42.0.1:8000", "X-Table-Pin": "9999"}).status_code in (401, 403)
    assert _files(data) == before
    setup.mark_done(data)
    res = client.post("/api/setup", json=body, headers={"Host": "10.42.0.1:8000", "X-Table-Pin": "1234"})
    assert res.status_code == 409 and "Reset settings" in res.json["error"]


def test_a_good_request_saves_the_settings_and_asks_root_for_the_rest(setup_app):
    app, data = setup_app
    app.extensions["companion"].config["root_requests"] = True      # as on a box with its root units
    body = {"name": "Marc-Antoine et Éloïse", "language": "fr", "ssid": "Maison d'Éloïse",
            "password": "right-pass", "ssh_key": _key(), "owner_password": "Éloïse's own 7", "done": True}
    res = app.test_client().post("/api/setup", json=body, headers={"Host": "10.42.0.1:8000", "X-Table-Pin": "1234"})
    assert res.status_code == 200, res.json
    assert "right-pass" not in res.text and "1234" not in res.text and "Éloïse's own 7" not in res.text
    import tomllib

    assert tomllib.loads((data / "companion.toml").read_text()) == {"name": "Marc-Antoine et Éloïse",
                                                                   "language": "fr"}
    assert setup.in_setup_mode(data), "saving the name does not end set-up: the join does"
    assert json.loads((data / setup.JOIN_REQUEST).read_text()) == {
        "ssid": "Maison d'Éloïse", "password": "right-pass", "owner_password": "Éloïse's own 7"}
    system = json.loads((data / setup.SYSTEM_REQUEST).read_text())
    assert system == {"ssh_key": _key(), "hostname": "marc-antoine-et-eloise", "owner_password": "Éloïse's own 7"}
    from appliance.root.setup_apply import check_root_request

    assert check_root_request(system) == system, "what the web side writes passes root's checks"
    from appliance import owner

    assert owner.verify("Éloïse's own 7", owner.read_hash(data)), "the service's copy: a hash"
    assert "Éloïse's own 7" not in (data / owner.RECORD).read_text()
    assert res.json["join"]["state"] == "joining"


def test_the_portal_lands_on_setup_only_in_setup_mode(setup_app):
    app, data = setup_app
    wifi.write_status(data, wifi.Status(mode="own", ssid="companion-7f3a", password="k7mxq2wv9pzt",
                                        address=wifi.ADDRESS, backend="networkmanager"))
    client = app.test_client()
    res = client.get("/generate_204", headers={"Host": "connectivitycheck.gstatic.com"})
    assert res.headers["Location"] == "http://10.42.0.1:8000/setup"
    setup.mark_done(data)
    res = client.get("/generate_204", headers={"Host": "connectivitycheck.gstatic.com"})
    assert res.headers["Location"] == "http://10.42.0.1:8000/"


# -- the panel ---------------------------------------------------------------------------------------

def _decode(png: bytes) -> list[str]:
    res = subprocess.run([ZBAR, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", "-"], input=png,
                         capture_output=True, timeout=60)
    return [line for line in res.stdout.decode("utf-8").splitlines() if line]


def _setup_box(tmp_path, make_box, language):
    from hardware.testing import box_config

    data = tmp_path / f"data-{language}"
    data.mkdir()
    wifi.write_status(data, wifi.Status(mode="own", ssid="Eloise-7f3a", password="k7mxq2wv9pzt",
                                        address=wifi.ADDRESS, backend="networkmanager"))
    box = make_box(box_config(data_dir=str(data), language=language))
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "4321")
    box.flush()
    return box, data


SHOTS = Path("/tmp/companion-setup-screens")


def _look(box, name: str):
    """The frame at 4x, kept for a person to look at, and its layout checked."""
    from hardware import draw as d
    from hardware.layout import problems

    SHOTS.mkdir(exist_ok=True)
    png = box.frame_png(4, mirror=False)
    (SHOTS / f"{name}.png").write_bytes(png)
    canvas = d.Canvas()
    box.app.layers[-1].draw(canvas)
    assert problems(canvas) == [], name
    return png


@pytest.mark.skipif(ZBAR is None, reason="zbar-tools (zbarimg) is not installed")
@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_panel_walks_through_setup(tmp_path, make_box, language):
    from hardware.ui.setup import SetupScreen

    box, data = _setup_box(tmp_path, make_box, language)
    assert isinstance(box.app.layers[-1], SetupScreen), "a fresh box shows the set-up screen by itself"
    png = _look(box, f"own-{language}")
    assert wifi.parse_wifi_qr(_decode(png)[0])["S"] == "Eloise-7f3a"  # zbar guesses Shift-JIS for UTF-8 bytes
    assert "4321" in box.frame.texts and "4321" not in box.mirror.texts
    assert _decode(box.frame_png(4, mirror=True))[0].startswith("WIFI:"), "the mirror shows the code"

    def step(**status):
        setup_root.write_status(data, **status)
        box.app.due(10 ** 9)          # the box's next look at the files
        box.flush()
        box.show_join(f"http://{wifi.ADDRESS}:8000/", "4321")
        box.flush()

    step(state="joining", ssid="Maison de Marc-Antoine")
    _look(box, f"joining-{language}")
    step(state="failed", ssid="Maison de Marc-Antoine", reason="wrong_password")
    png = _look(box, f"failed-{language}")
    assert ("wrong password" if language == "en" else "mauvais mot de passe") in " ".join(box.frame.texts).lower()
    assert _decode(png)[0].startswith("WIFI:"), "back on its own network: its code again"
    step(state="failed", ssid="Maison de Marc-Antoine", reason="not_found")
    assert ("not found" if language == "en" else "introuvable") in " ".join(box.frame.texts).lower()
    step(state="joined", ssid="Maison de Marc-Antoine", address="192.168.77.42", port=8000,
         hostname="marc-antoine-et-eloise")
    png = _look(box, f"joined-{language}")
    assert _decode(png) == ["http://192.168.77.42:8000/"]
    assert "192.168.77.42" in box.mirror.texts


def test_the_new_local_name_is_answered_without_a_restart(setup_app, monkeypatch):
    app, _data = setup_app
    import web.hosts

    client = app.test_client()
    assert client.get("/api/setup", headers={"Host": "marc-antoine-et-eloise.local:8000"}).status_code == 400
    monkeypatch.setattr(web.hosts.socket, "gethostname", lambda: "marc-antoine-et-eloise")   # hostnamectl
    assert client.get("/api/setup", headers={"Host": "marc-antoine-et-eloise.local:8000"}).status_code == 200


@pytest.mark.parametrize("language", ["en", "fr"])
def test_reset_settings_on_the_box_asks_then_puts_it_in_setup_mode(tmp_path, make_box, language):
    from hardware.testing import box_config
    from hardware.ui.setup import ResetConfirm, SetupScreen

    data = tmp_path / "box-data"
    data.mkdir()
    (data / "companion.toml").write_text('name = "Éloïse"\n')
    setup.mark_done(data)
    wifi.write_status(data, wifi.Status(mode="join", reason="a known network"))
    box = make_box(box_config(data_dir=str(data), language=language))
    box.press("ok")                     # the menu
    box.press("up")                     # wraps to its last row: Reset settings
    box.press("ok")
    assert isinstance(box.app.layers[-1], ResetConfirm)
    box.press("back")                   # BACK keeps them
    assert not setup.in_setup_mode(data) and (data / "companion.toml").exists()
    box.press("ok")
    assert isinstance(box.app.layers[-1], ResetConfirm)
    _look(box, f"reset-confirm-{language}")
    box.press("ok")
    assert setup.in_setup_mode(data)
    assert (data / setup.SET_ASIDE).read_text() == 'name = "Éloïse"\n'
    assert isinstance(box.app.layers[-1], SetupScreen)
