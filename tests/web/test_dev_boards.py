"""The mock box's page knows its board: ``companion run --mock --board ID``
draws that board's keys on /dev, and ``POST /dev/pins/<bcm>/press|hold``
presses a mock pin by its BCM number, as a finger on that board would.
``/dev/buttons/<key>/…`` stays."""

from __future__ import annotations

import pytest
from gpiozero.pins.mock import MockFactory

from hardware import Box
from hardware.testing import box_config

from web_support import make_app


@pytest.fixture
def dev(session):
    made = []

    def start(board):
        factory = MockFactory()
        box = Box(session, box_config(board=board), mock=True, pin_factory=factory)
        box.start()
        app = make_app(session, box=box, mock=True)
        made.append((app, box, factory))
        return box, app.test_client(), factory

    yield start
    for app, box, factory in made:
        app.extensions["companion"].close()
        box.close()
        factory.reset()


def test_the_bonnets_keys_are_drawn_and_pressed_by_their_pins(dev, session):
    box, client, factory = dev("adafruit-oled-bonnet")
    page = client.get("/dev").get_data(as_text=True)
    assert "Adafruit 128x64 OLED Bonnet" in page and 'class="joystick"' in page
    for pin in (17, 22, 27, 23, 4, 5, 6):
        assert f'data-pin="{pin}"' in page
    assert page.index('data-pin="6"') < page.index('data-pin="5"'), "B above A, as on the board"
    before = len(factory.pin(5).states)
    r = client.post("/dev/pins/5/press")                     # A
    assert r.status_code == 200 and r.json["key"] == "ok" and r.json["control"] == "A"
    assert len(factory.pin(5).states) > before, "the very mock pin was driven"
    assert "Menu" in box.frame.texts
    r = client.post("/dev/pins/27/press")                    # the joystick's left: nothing
    assert r.status_code == 200 and r.json["key"] is None and "Menu" in box.frame.texts
    r = client.post("/dev/pins/6/hold")
    assert r.status_code == 200 and r.json["handled"] is True
    assert client.post("/dev/buttons/ok/press").status_code == 200, "/dev/buttons/<key> stays"


def test_the_waveshares_keys_are_drawn_in_their_order(dev):
    box, client, _ = dev("waveshare-oled-hat")
    page = client.get("/dev").get_data(as_text=True)
    assert "Waveshare 1.3inch OLED HAT" in page
    assert page.index('data-pin="21"') < page.index('data-pin="20"') < page.index('data-pin="16"')
    assert client.post("/dev/pins/13/press").json["key"] == "ok"
    assert "Menu" in box.frame.texts
    assert client.post("/dev/pins/16/press").json["key"] == "back"
    assert "Menu" not in box.frame.texts


def test_a_wired_box_shows_each_buttons_gpio(dev):
    box, client, _ = dev("wired")
    page = client.get("/dev").get_data(as_text=True)
    assert 'data-name="ok"' in page and "GPIO 22" in page and 'class="joystick"' not in page
    assert client.post("/dev/pins/22/press").json["key"] == "ok"
    assert "Menu" in box.frame.texts


@pytest.mark.parametrize("path", ["/dev/pins/18/press", "/dev/pins/abc/press", "/dev/pins/%C2%B2/press",
                                  "/dev/pins/5/tap", "/dev/pins/-1/press"])
def test_pins_that_are_not_the_boards_are_404_json(dev, path):
    _box, client, _ = dev("adafruit-oled-bonnet")
    r = client.post(path)
    assert r.status_code == 404
    if not path.endswith("/tap"):
        assert "GPIO" in r.json["error"] and "17" in r.json["error"]


def test_pins_answer_only_in_mock_mode_and_from_this_computer(session):
    app = make_app(session)
    try:
        assert app.test_client().post("/dev/pins/22/press").status_code == 404
    finally:
        app.extensions["companion"].close()


def test_another_sites_page_cannot_press_a_pin(dev):
    _box, client, _ = dev("wired")
    r = client.post("/dev/pins/22/press", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
