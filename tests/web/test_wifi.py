"""The box's own Wi-Fi, its panel and web sides: the panel's QR code (what
it holds, the default network name's room in it), the QR code read back
from the box's own frame by a real decoder (zbar), and the captive
portal's answers under the Host rules.

The decision, the settings, the generated configurations and argument
lists, the QR code's text and the join address are in
tests/core/test_own_wifi.py (whence ``_own`` and the autouse fixture
``_a_box_that_was_set_up``); the radio itself is raised in the VM:
tests/vm/appliance-vm --wifi."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import pytest

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from appliance import wifi
from test_own_wifi import _a_box_that_was_set_up, _own  # noqa: F401 (an autouse fixture)

# -- the panel's QR code: what it holds -------------------------------------------------------------


def test_the_panel_qr_code_holds_exactly_QR_BYTES():
    from hardware.ui.common import qr_image

    head = wifi.wifi_qr_payload("", "")
    assert qr_image(head + "x" * (wifi.QR_BYTES - len(head)), error="l") is not None
    assert qr_image(head + "x" * (wifi.QR_BYTES - len(head) + 1), error="l") is None


@pytest.mark.parametrize("name", ["companion", "Table 12", "Table de Marc-Antoine Éloïse",
                                  "Club; de jeux: «Ça»", "x" * 40, "Ŝŝ" * 15])
def test_the_default_network_name_leaves_room_for_the_qr_code(name):
    from hardware.ui.common import qr_image

    ssid = wifi.default_ssid(name, "machine")
    assert ssid.endswith("-" + wifi.default_ssid("", "machine")[-4:]) and len(ssid) > 5
    assert ssid.startswith(name[:3]), "the name is still recognisable"
    password = wifi.draw_password()
    assert wifi.fits_panel_qr(ssid, password)
    assert qr_image(wifi.wifi_qr_payload(ssid, password), error="l") is not None


# -- the box's Phones screen: the QR code read back from its own frame --------------------------

ZBAR = shutil.which("zbarimg")


def _decode(png: bytes, scale: int = 4) -> list[str]:
    """zbar reads the panel's own pixels (scaled up like a camera would see them)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    image = image.resize((image.width * scale, image.height * scale), Image.NEAREST)
    buf = io.BytesIO()
    image.save(buf, "PNG")
    res = subprocess.run([ZBAR, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", "-"], input=buf.getvalue(),
                         capture_output=True, timeout=60)
    return [line for line in res.stdout.decode("utf-8").splitlines() if line]


def _box(tmp_path, make_box, **own):
    """A mock box whose data folder holds ``wifi.json`` (the box's own network
    with the fields ``own`` gives, when given)."""
    from hardware.testing import box_config

    data = tmp_path / "wifi-data"
    data.mkdir()
    if own:
        _own(data, **own)
    config = box_config()
    config["data_dir"] = str(data)
    return make_box(config), data


@pytest.mark.skipif(ZBAR is None, reason="zbar-tools (zbarimg) is not installed")
def test_the_box_shows_its_wifi_qr_code_then_the_address_one_press_apart(tmp_path, make_box):
    box, data = _box(tmp_path, make_box)
    box.show_join("http://192.168.1.20:8000/", "1234")
    box.flush()
    assert not box.app.layers, "no own network: nothing pops up"
    _own(data, password='k7m;xq2"wv9')
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")      # what serve.py does when the address changes
    box.flush()
    assert box.app.layers, "the box's own network came up: its QR code is shown by itself"
    for mirror in (True, False):
        png = box.frame_png(1, mirror=mirror)
        found = _decode(png)
        assert found and wifi.parse_wifi_qr(found[0]) == {"T": "WPA", "S": "companion-7f3a", "P": 'k7m;xq2"wv9'}
    box.press("ok")                                     # one press: the table's address
    assert _decode(box.frame_png(1, mirror=True)) == [f"http://{wifi.ADDRESS}:8000/"]
    assert "1234" in box.frame.texts and "1234" not in box.mirror.texts
    box.press("ok")                                     # and back
    assert _decode(box.frame_png(1))[0].startswith("WIFI:")
    box.press("back")
    assert not box.app.layers
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")
    box.flush()
    assert not box.app.layers, "shown once, not at every address change"


@pytest.mark.skipif(ZBAR is None, reason="zbar-tools (zbarimg) is not installed")
def test_an_open_phones_screen_drops_the_code_of_a_network_that_went_down(tmp_path, make_box):
    box, data = _box(tmp_path, make_box, ssid="companion-7f3a")
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")
    box.flush()
    assert _decode(box.frame_png(1, mirror=True))[0].startswith("WIFI:")
    # The Wi-Fi unit stops (its network is gone, wifi.json with it) and the
    # machine's address changes: the screen, still open, shows the new address.
    wifi.clear_status(data)
    box.show_join("http://192.168.1.20:8000/", "1234")
    box.flush()
    assert box.app.layers, "the Phones screen stays open"
    assert _decode(box.frame_png(1, mirror=True)) == ["http://192.168.1.20:8000/"]
    box.press("ok")                                     # no Wi-Fi page to turn to: OK closes
    assert not box.app.layers


@pytest.mark.skipif(ZBAR is None, reason="zbar-tools (zbarimg) is not installed")
def test_a_long_fixed_password_still_fits_or_is_spelled_out(tmp_path, make_box):
    box, _data = _box(tmp_path, make_box, ssid="companion-7f3a", password="x" * 40)
    box.show_join(f"http://{wifi.ADDRESS}:8000/", "1234")
    box.flush()
    assert box.app.layers
    texts = box.frame.texts
    assert any("xxxx" in t for t in texts), "the password is on the screen to type by hand"


# -- the captive portal and the Host rules --------------------------------------------------------

PROBES = [("connectivitycheck.gstatic.com", "/generate_204"), ("captive.apple.com", "/hotspot-detect.html"),
          ("www.msftconnecttest.com", "/connecttest.txt"), ("www.msftncsi.com", "/ncsi.txt"),
          ("detectportal.firefox.com", "/canonical.html"), ("detectportal.firefox.com", "/success.txt")]


@pytest.fixture
def portal_app(session, tmp_path):
    from web.app import create_app

    data = tmp_path / "wifi-data"
    data.mkdir()
    config = {"url": "http://192.168.1.20:8000/", "port": 8000, "data_dir": str(data), "mock": False}
    app = create_app(session, config=config, pin="1234")
    yield app, data
    app.extensions["companion"].close()


@pytest.mark.parametrize("host, path", PROBES)
def test_probes_on_the_own_network_land_on_the_scoreboard(portal_app, host, path):
    app, data = portal_app
    _own(data)
    client = app.test_client()
    res = client.get(path, headers={"Host": host})
    assert res.status_code == 302
    assert res.headers["Location"] == f"http://{wifi.ADDRESS}:8000/"
    assert res.headers["Cache-Control"] == "no-store"
    board = client.get("/", headers={"Host": f"{wifi.ADDRESS}:8000"})
    assert board.status_code == 200 and b"page-board" in board.data


def test_on_the_own_network_any_name_leads_to_the_scoreboard_but_writes_are_refused(portal_app):
    app, data = portal_app
    _own(data)
    client = app.test_client()
    res = client.get("/api/state", headers={"Host": "example.com"})
    assert res.status_code == 302 and res.headers["Location"] == f"http://{wifi.ADDRESS}:8000/"
    assert b'"' not in res.data.split(b"href=")[0]
    post = client.post("/api/actions", json={"type": "undo"}, headers={"Host": "example.com", "X-Table-Pin": "1234"})
    assert post.status_code == 400 and "does not answer" in post.get_json()["error"]


def test_without_the_own_network_foreign_names_are_refused_as_before(portal_app):
    app, data = portal_app
    client = app.test_client()
    res = client.get("/api/state", headers={"Host": "example.com"})
    assert res.status_code == 400 and "does not answer" in res.get_json()["error"]
    # A probe path is only ever a redirect to the box's public address: nothing to read.
    probe = client.get("/generate_204", headers={"Host": "connectivitycheck.gstatic.com"})
    assert probe.status_code == 302 and probe.headers["Location"] == "http://192.168.1.20:8000/"
    (data / wifi.STATUS_FILE).write_text(json.dumps({"mode": "join", "reason": "a known network"}))
    res = client.get("/", headers={"Host": "example.com"})
    assert res.status_code == 400


def test_pages_say_there_is_no_internet_on_the_own_network(portal_app):
    app, data = portal_app
    client = app.test_client()
    host = {"Host": "192.168.1.20:8000"}
    assert b"no internet" not in client.get("/join", headers=host).data
    _own(data)
    page = client.get("/join", headers={"Host": f"{wifi.ADDRESS}:8000"}).data.decode()
    assert "companion-7f3a" in page and "no internet" in page
    assert "k7mxq2wv9pzt" not in page, "the page names the network, never its password"
