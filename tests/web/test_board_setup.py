"""Another board from the Setup page, kept by a press on the box (web/board.py, appliance/board_trial.py).

The page names the board the box found; choosing another is asked with
the table PIN during set-up and with the owner password after it (a
system change, like SSH); the companion restarts on it and its panel asks
"Keep this board?": OK on the new board's keys keeps it in companion.toml,
BACK or the time running out goes back (another restart), and a trial is
tried at one start only.
"""

from __future__ import annotations

import threading
import time
import tomllib

import pytest
from gpiozero.pins.mock import MockFactory

from appliance import board_trial, owner, setup
from hardware import Box
from hardware.testing import box_config

HOST = {"Host": "10.42.0.1:8000"}
PIN = {**HOST, "X-Table-Pin": "1234"}
OWNER_PW = "Éloïse's own 2nd"


@pytest.fixture
def table(session, tmp_path):
    """A mock box and its app on a data folder of their own; ``restarts`` counts the restarts asked."""
    from web.app import create_app

    made = []

    def make(config=None, **settings):
        data = tmp_path / f"data-{len(made)}"
        data.mkdir()
        factory = MockFactory()
        conf = box_config(data_dir=str(data), **settings)
        box = Box(session, conf, mock=True, pin_factory=factory)
        box.start()
        app = create_app(session, box=box, config={"url": "http://10.42.0.1:8000/", "port": 8000,
                                                    "data_dir": str(data), "mock": True, "language": "en",
                                                    "name": "companion"}, pin="1234")
        restarts = []
        app.extensions["companion.restart"] = lambda: restarts.append(time.monotonic())
        box.restart = app.extensions["companion.restart"]
        made.append((app, box, factory))
        return box, app.test_client(), data, restarts

    yield make
    for app, box, factory in made:
        app.extensions["companion"].close()
        box.close()
        factory.reset()


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        time.sleep(0.02)
    return predicate()


def test_the_page_names_the_board_found_and_every_board(table):
    box, client, _data, _ = table()
    view = client.get("/api/board", headers=HOST).json
    assert view["board"] == "wired" and view["how"] == "found" and view["trial"] is None
    assert [b["id"] for b in view["boards"]] == ["wired", "adafruit-oled-bonnet", "waveshare-oled-hat"]
    page = client.get("/setup", headers=HOST).get_data(as_text=True)
    assert 'id="board-section"' in page and "Found by itself: Wired (wiring.md)." in page
    assert "press OK on the box to keep this board" in page
    french = client.get("/setup?lang=fr", headers=HOST).get_data(as_text=True)
    assert "Trouvée toute seule" in french and "Câblé (wiring.md)" in french


def test_in_setup_a_board_is_tried_with_the_pin_and_the_companion_restarts(table):
    box, client, data, restarts = table()
    assert setup.in_setup_mode(data)
    r = client.post("/api/board", json={"board": "adafruit-oled-bonnet"}, headers=HOST)
    assert r.status_code == 401 and not (data / board_trial.FILE).exists()
    r = client.post("/api/board", json={"board": "adafruit-oled-bonnet"}, headers={**HOST, "X-Table-Pin": "0000"})
    assert r.status_code == 403
    r = client.post("/api/board", json={"board": "adafruit-oled-bonnet"}, headers=PIN)
    assert r.status_code == 202 and r.json["trial"]["board"] == "adafruit-oled-bonnet"
    assert board_trial.pending(data)["board"] == "adafruit-oled-bonnet"
    assert wait_for(lambda: restarts), "the companion was not asked to restart"
    assert not (data / "companion.toml").exists(), "nothing kept before a press on the box"


@pytest.mark.parametrize("body", [{}, {"board": "pi-hat-9000"}, {"board": "wired", "x": 1}, ["wired"]])
def test_a_bad_board_is_refused_and_nothing_asked(table, body):
    _box, client, data, restarts = table()
    r = client.post("/api/board", json=body, headers=PIN)
    assert r.status_code == 400 and "board" in r.json["error"]
    assert not (data / board_trial.FILE).exists() and not restarts


def test_after_setup_the_board_is_the_owners(table):
    _box, client, data, restarts = table()
    setup.mark_done(data, True)
    owner.write_hash(data, owner.hash_password(OWNER_PW))
    assert client.post("/api/board", json={"board": "waveshare-oled-hat"}, headers=PIN).status_code == 401
    wrong = {**HOST, "X-Owner-Password": "not it at all"}
    assert client.post("/api/board", json={"board": "waveshare-oled-hat"}, headers=wrong).status_code == 403
    right = {**HOST, "X-Owner-Password": OWNER_PW.encode().decode("latin-1")}
    r = client.post("/api/board", json={"board": "waveshare-oled-hat"}, headers=right)
    assert r.status_code == 202 and board_trial.pending(data)["board"] == "waveshare-oled-hat"


def trial_box(table, board="adafruit-oled-bonnet", seconds=30.0):
    """The start after a trial was asked: at_start marks it tried, the box runs on it."""
    box, client, data, restarts = None, None, None, None
    # The folder first (the box reads the trial at its start, as the runner does).
    made = table(board=board, board_trial=board, board_trial_s=seconds)
    box, client, data, restarts = made
    board_trial.ask(data, board, None)
    assert board_trial.at_start(data) == board
    return box, client, data, restarts


def test_ok_on_the_new_boards_keys_keeps_it(table):
    box, client, data, restarts = trial_box(table)
    assert box.board.id == "adafruit-oled-bonnet" and box.board_how == "trial"
    assert "Keep this board?" in box.frame.texts and "Adafruit 128x64 OLED Bonnet" in " ".join(box.frame.texts)
    assert client.get("/api/board", headers=HOST).json["trial"]["board"] == "adafruit-oled-bonnet"
    box.press_pin(5)                                           # A: OK on the Bonnet
    settings = tomllib.loads((data / "companion.toml").read_text())
    assert settings["board"] == "adafruit-oled-bonnet"
    assert board_trial.pending(data) is None and not restarts
    assert "Board kept: Adafruit 128x64 OLED Bonnet." in " ".join(box.frame.texts)
    assert client.get("/api/board", headers=HOST).json["how"] == "setting"


def test_back_or_the_time_up_goes_back_to_the_board_before(table):
    box, _client, data, restarts = trial_box(table)
    box.press_pin(6)                                           # B: BACK
    assert wait_for(lambda: restarts) and board_trial.pending(data) is None
    assert not (data / "companion.toml").exists()
    box2, _client, data2, restarts2 = trial_box(table, "waveshare-oled-hat", seconds=0.3)
    assert wait_for(lambda: restarts2), "the time ran out without a restart"
    assert board_trial.pending(data2) is None and not (data2 / "companion.toml").exists()


def test_a_trial_is_tried_at_one_start_only(tmp_path):
    board_trial.ask(tmp_path, "waveshare-oled-hat", "wired")
    assert board_trial.at_start(tmp_path) == "waveshare-oled-hat"
    assert board_trial.at_start(tmp_path) is None, "a start cut before OK goes back"
    assert board_trial.pending(tmp_path) is None
