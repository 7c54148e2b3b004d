"""Hardware faults on the mock layer (issue 9): a button stuck pressed, the
pin library failing at start, the panel vanishing mid-frame and coming back.

In every case the box goes on: frames keep being drawn (the web mirror and
the phones keep working), the other buttons keep working, the log says what
happened once, and the table is told through a notice (OLED and
``GET /api/notices``) where people at the table can do something about it.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time

import pytest
from gpiozero.exc import BadPinFactory, GPIOPinInUse

from hardware import Box
from hardware.box import STUCK
from hardware.buttons import NO_GPIOCHIP, gpio_notice
from hardware.testing import BrokenPins, FrameLog, HeldAtPowerOn, VanishingPanel, box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)
from web_support import http, make_app, pin_headers, wait_until

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]


def drawn(box) -> str:
    return " ".join(box.frame.texts)


def count_keys(box) -> list:
    """Record every debounced key the box's screen logic receives."""
    keys = []
    original = box.app.key

    def key(name):
        keys.append(name)
        original(name)
    box.app.key = key
    return keys


def stuck_notices(session) -> list:
    return [n for n in session.table.notices if n[0] == STUCK]


# -- a button stuck pressed --------------------------------------------------------

# The stuck time is far above a press's few milliseconds: on a loaded machine
# a press of BACK or DOWN that the scheduler stretches must not itself count
# as a stuck button (found under arm64 emulation with 0.3 s).
STUCK_S = 3.0


def test_a_stuck_ok_acts_once_is_reported_and_the_other_buttons_keep_working(make_box, session, mock_factory):
    box = make_box(box_config(stuck_s=STUCK_S))
    keys = count_keys(box)
    pin = mock_factory.pin(box.config["buttons"]["ok"])
    pin.drive_low()                                   # the lid presses on OK, and stays
    box.flush()
    assert "Menu" in drawn(box)
    assert wait_until(lambda: stuck_notices(session), timeout=30), "no notice for a stuck button"
    box.flush()
    assert keys == ["ok"], f"a held button must act once, not repeat: {keys}"
    assert "OK button seems stuck" in drawn(box)

    # The notice cannot be dismissed with the stuck OK: BACK does it.
    box.press("back")
    assert "Menu" in drawn(box) and session.table.notices == []
    box.press("down")
    assert box.app.layers[-1].cursor == 1, "UP/DOWN still work while OK is stuck"
    time.sleep(0.4)
    box.flush()
    assert keys == ["ok", "back", "down"], "still no repeated OK"

    pin.drive_high()                                  # freed: the release does nothing
    box.flush()
    assert keys == ["ok", "back", "down"] and "Menu" in drawn(box)
    time.sleep(box.bounce_s + 0.05)                   # a new press, not the release's bounce
    box.press("ok")                                   # and OK works again: the QR screen
    assert keys == ["ok", "back", "down", "ok"] and "Menu" not in drawn(box)
    assert session.table.notices == []


def test_the_stuck_notice_goes_away_by_itself_when_the_button_is_released(make_box, session, mock_factory):
    box = make_box(box_config(stuck_s=0.2))
    app = make_app(session, box=box)
    client = app.test_client()
    pin = mock_factory.pin(box.config["buttons"]["up"])
    pin.drive_low()
    assert wait_until(lambda: stuck_notices(session), timeout=30)
    box.flush()
    assert client.get("/api/notices").get_json() == {
        "notices": ["The UP button seems stuck: it is ignored until it is released."]}
    pin.drive_high()
    box.flush()
    assert session.table.notices == []
    assert client.get("/api/notices").get_json() == {"notices": []}
    assert "Game companion" in drawn(box)
    app.extensions["companion"].close()


def test_a_stuck_back_asks_about_undo_once_and_never_undoes_by_itself(make_box, session, mock_factory):
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    session.submit({"type": "add", "seat": 1, "points": 5})
    box = make_box(box_config(stuck_s=STUCK_S))
    holds = []
    original = box.app.hold
    box.app.hold = lambda name: (holds.append(name), original(name))
    pin = mock_factory.pin(box.config["buttons"]["back"])
    pin.drive_low()
    assert wait_until(lambda: stuck_notices(session), timeout=30)
    box.flush()
    assert holds == ["back"], "one long press, not one per hold time"
    box.press("ok")                                   # dismisses the stuck notice
    assert "Undo the last action?" in drawn(box)
    pin.drive_high()
    box.flush()
    assert holds == ["back"]
    assert session.public()["scores"] == [0, 5, 0, 0], "nothing was undone without OK"
    assert "Undo the last action?" in drawn(box), "the release of a stuck BACK is not a press"


def test_a_button_held_since_power_on_is_reported_stuck_then_released(session, mock_factory):
    config = box_config(stuck_s=0.2)
    mock_factory.pin(config["buttons"]["down"], pin_class=HeldAtPowerOn)
    box = Box(session, config, mock=True, pin_factory=mock_factory)
    try:
        box.start()
        assert wait_until(lambda: stuck_notices(session), timeout=30)
        box.flush()
        assert "DOWN button seems stuck" in drawn(box)
        box.buttons.devices["down"].pin.drive_high()
        box.flush()
        assert session.table.notices == [] and "Game companion" in drawn(box)
    finally:
        box.close()


def test_a_stuck_button_does_not_make_the_box_poll(make_box, mock_factory):
    box = make_box(box_config(stuck_s=0.1))
    mock_factory.pin(box.config["buttons"]["down"]).drive_low()
    time.sleep(0.3)                                   # past the stuck deadline
    box.flush()
    before = box.wakeups
    time.sleep(0.4)
    assert box.wakeups == before, "the worker keeps waking up for a stuck button"


# -- the pin library failing at start ------------------------------------------------

PIN_ERRORS = {
    "BadPinFactory": BadPinFactory("Unable to load any default pin factory!"),
    "RuntimeError": RuntimeError("This module can only be run on a Raspberry Pi!"),
    "ImportError": ImportError("No module named 'lgpio'"),
    "GPIOPinInUse": GPIOPinInUse("pin GPIO22 is already in use"),
    "PermissionError": PermissionError(13, "Permission denied", "/dev/gpiochip0"),
}


@pytest.mark.parametrize("error", sorted(PIN_ERRORS))
def test_pin_library_errors_leave_a_box_with_a_screen_and_no_buttons(make_box, session, caplog, error):
    exc = PIN_ERRORS[error]
    panel = VanishingPanel()
    config = box_config(notice_s=0.3, leds=[5, 6], buzzer=12)
    with caplog.at_level(logging.ERROR):
        box = make_box(config, mock=False, pin_factory=BrokenPins(exc), display_factory=panel.opener)
    assert box.buttons is None
    assert any("buttons unavailable" in r.getMessage() and error in r.getMessage() for r in caplog.records)
    notice = gpio_notice(exc)
    assert session.table.notices == [notice] and error in notice[1]["error"]
    assert "buttons do not work" in drawn(box)
    assert panel.image.tobytes() == box.frame.image.tobytes(), "the panel shows the notice"

    # The phones still run the table; the box follows and draws.
    app = make_app(session, box=box, mock=False)
    client = app.test_client()
    text = client.get("/api/notices").get_json()["notices"][0]
    assert text.startswith(f"The buttons do not work ({error}: ") and "gpiochip" in text
    reply = client.post("/api/actions", json={"type": "new_game", "game": "scoreboard", "players": PLAYERS},
                        headers=pin_headers())
    assert reply.status_code == 200
    box.flush()
    assert client.get("/oled.png").status_code == 200
    # Nothing on the box can dismiss the notice: it leaves the screen by itself...
    assert wait_until(lambda: (box.flush(), "Scoreboard" in drawn(box))[1], timeout=30), drawn(box)
    # ...and stays listed for the phones, which can dismiss it.
    assert len(client.get("/api/notices").get_json()["notices"]) == 1
    assert client.post("/api/notices/0/dismiss", headers=pin_headers()).get_json() == {"notices": []}
    with pytest.raises(RuntimeError):
        box.press("ok")                                # no mock pins to drive
    app.extensions["companion"].close()


def test_no_pin_library_at_all_still_gives_a_box(make_box, session, monkeypatch):
    monkeypatch.setitem(sys.modules, "gpiozero", None)      # `import gpiozero` fails
    panel = VanishingPanel()
    box = make_box(box_config(leds=[5], notice_s=0.1), mock=False, pin_factory=None, display_factory=panel.opener)
    assert box.buttons is None
    [(template, params)] = session.table.notices
    assert params["error"].startswith("ModuleNotFoundError: ")
    assert template == NO_GPIOCHIP or "chip" in params    # what to check, whichever machine runs this
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    assert wait_until(lambda: (box.flush(), "Scoreboard" in drawn(box))[1], timeout=30), drawn(box)
    assert panel.image.tobytes() == box.frame.image.tobytes()


def test_companion_run_on_a_machine_without_pins_serves_and_says_so(tmp_path):
    """The real command, not in mock mode, on this laptop: no pin factory
    (gpiozero's BadPinFactory) and no I2C bus.  It serves anyway."""
    env = {k: v for k, v in os.environ.items() if k not in ("GPIOZERO_PIN_FACTORY", "NOTIFY_SOCKET")}
    env.update(COMPANION_PIN="2468", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "appliance.cli", "run", "--host", "127.0.0.1", "--port", "0",
                             "--data", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        line = proc.stdout.readline()
        match = re.search(r":(\d+)/", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        port = int(match.group(1))
        # The pins are claimed on the box's thread right after serving (the
        # first frame and the web come first): the notice follows a moment later.
        deadline = time.monotonic() + 20
        while True:
            status, _, body = http(port, "GET", "/api/notices")
            assert status == 200
            if body["notices"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(body["notices"]) == 1 and body["notices"][0].startswith("The buttons do not work (")
        assert http(port, "GET", "/oled.png")[0] == 200
        status, _, _ = http(port, "POST", "/api/actions",
                            {"type": "new_game", "game": "scoreboard", "players": PLAYERS}, {"X-Table-Pin": "2468"})
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(60)
    err = proc.stderr.read()
    assert "buttons unavailable" in err and "Traceback" not in err


# -- the panel vanishing mid-frame, and coming back ---------------------------------------

def test_the_panel_vanishing_mid_frame_and_coming_back_shows_the_current_frame(make_box, caplog):
    panel = VanishingPanel()
    config = box_config(display={"driver": "ssd1306", "retry_s": 0.05})
    with caplog.at_level(logging.WARNING, logger="hardware.display"):
        box = make_box(config, display_factory=panel.opener)
        frames = FrameLog(box)
        box.press("ok")                                        # the menu, on the panel
        assert panel.image.tobytes() == box.frame.image.tobytes()
        panel.gone = True
        box.press("down")                                      # this frame is cut off half-way
        assert panel.torn == 1 and box.screen.device is None
        assert panel.image.tobytes() != box.frame.image.tobytes(), "the panel holds a torn picture"
        for key in ("down", "ok"):                             # the box goes on without a panel
            box.press(key)
        assert len(frames.since(0)) == 4, "every frame still reaches the mirror"
        time.sleep(0.2)                                        # the retry finds nothing meanwhile
        assert box.screen.retrying and panel.opened == 1
        panel.gone = False                                     # the wire is back
        assert wait_until(lambda: box.screen.device is panel, timeout=30), "the retry did not take it back"
        box.flush()
    assert panel.image.tobytes() == box.frame.image.tobytes(), "the current frame is redrawn, whole"
    assert not box.screen.retrying
    box.press("back")
    assert panel.image.tobytes() == box.frame.image.tobytes(), "and the next frames go to it again"
    lost = [r for r in caplog.records if "stopped answering" in r.getMessage()]
    assert len(lost) == 1, "one warning per loss, not one per frame or retry"


@pytest.mark.parametrize("error", [TimeoutError("I2C transfer timed out"), ValueError("bad frame buffer"),
                                   __import__("struct").error("unpack requires a buffer")],
                         ids=["TimeoutError", "ValueError", "struct.error"])
def test_any_error_from_a_vanishing_panel_is_survived_like_an_oserror(make_box, error):
    panel = VanishingPanel(error=error)
    box = make_box(box_config(display={"driver": "ssd1306", "retry_s": 0.05}), display_factory=panel.opener)
    seen = []
    box.subscribe_frames(seen.append)
    panel.gone = True
    box.press("ok")
    box.press("down")
    assert seen == [box.frame_version - 1, box.frame_version], "the mirror got every frame"
    assert box.screen.device is None and panel.torn == 1, "the failing panel is dropped, not retried per frame"
    panel.gone = False
    assert wait_until(lambda: box.screen.device is panel, timeout=30)
    box.flush()
    assert panel.image.tobytes() == box.frame.image.tobytes()
