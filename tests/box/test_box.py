"""The box on mock pins: buttons (debounce, long press, held at power-on),
fonts, screens against reference images, the join screen, display faults.

The full Third Man match and the secrecy of bids are in test_box_match.py.

Reference images live in tests/box/reference/.  To regenerate them after a
deliberate change of a screen, run

    COMPANION_REGEN_REFERENCE=1 .venv/bin/python -m pytest tests/box/test_box.py

look at every PNG it rewrote, and commit them; the run fails loudly so that
it cannot pass unnoticed.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from hardware import Box, draw
from hardware.buttons import Debouncer
from hardware.testing import FlakyDummy, HeldAtPowerOn, box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

REFERENCE = Path(__file__).with_name("reference")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "box"
REGEN = os.environ.get("COMPANION_REGEN_REFERENCE") == "1"
PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]


# -- frame helpers (the mock_factory and make_box fixtures are in box_support) ---

def texts(box) -> str:
    return " | ".join(box.frame.texts)


def shows(box, *words) -> None:
    """Assert that the current frame drew each of ``words`` (readable failure)."""
    drawn = " ".join(box.frame.texts)        # a wrapped message is drawn line by line
    missing = [w for w in words if w not in drawn]
    assert not missing, f"frame {box.frame_version} lacks {missing}; it shows: {texts(box)}"


# -- the debounce, on made-up times ---------------------------------------------------

def test_bounce_edges_within_the_window_count_once():
    deb = Debouncer(bounce_s=0.030, hold_s=1.0)
    deb.add("ok", pressed_now=False)
    events = []
    for i, pressed in enumerate([True, False, True, False, True]):     # contact bounce, 1 ms apart
        events += deb.edge("ok", pressed, 10.000 + i * 0.001)
    assert events == [("press", "ok")]
    assert deb.next_deadline() == pytest.approx(10.030)
    assert deb.due(10.030, lambda name: True) == []        # still pressed: nothing more
    # release, bouncing too: no second press
    for i, pressed in enumerate([False, True, False]):
        events += deb.edge("ok", pressed, 10.100 + i * 0.001)
    assert deb.due(10.200, lambda name: False) == []
    assert events == [("press", "ok")]


def test_a_tap_shorter_than_the_window_is_seen_once_and_released():
    deb = Debouncer(bounce_s=0.030, hold_s=1.0)
    deb.add("up", pressed_now=False)
    assert deb.edge("up", True, 1.0) == [("press", "up")]
    assert deb.edge("up", False, 1.005) == []               # inside the window: re-read later
    assert deb.due(1.030, lambda name: False) == []         # released: no new press
    assert deb.edge("up", True, 1.100) == [("press", "up")]  # the next press counts


def test_back_acts_on_release_and_a_long_press_is_a_hold():
    deb = Debouncer(bounce_s=0.030, hold_s=1.0)
    deb.add("back", pressed_now=False)
    assert deb.edge("back", True, 5.0) == []
    assert deb.edge("back", False, 5.2) == [("press", "back")]
    assert deb.edge("back", True, 6.0) == []
    assert deb.next_deadline() == pytest.approx(7.0)
    assert deb.due(7.0, lambda name: True) == [("hold", "back")]
    assert deb.edge("back", False, 7.5) == []                # the release after a hold does nothing
    assert deb.next_deadline() is None


def test_a_button_held_at_start_does_nothing_until_released_and_pressed_again():
    deb = Debouncer(bounce_s=0.030, hold_s=1.0)
    deb.add("ok", pressed_now=True)
    deb.add("back", pressed_now=True)
    assert deb.due(100.0, lambda name: True) == []           # no hold either
    assert deb.edge("ok", False, 1.0) == []
    assert deb.edge("back", False, 1.0) == []
    assert deb.edge("ok", True, 2.0) == [("press", "ok")]


# -- buttons on mock pins ----------------------------------------------------------------

def test_press_opens_the_menu_and_unknown_buttons_are_key_errors(make_box):
    box = make_box()
    assert box.button_names == ["up", "down", "ok", "back"]
    shows(box, "Game companion")
    box.press("ok")
    shows(box, "Menu", "New game")
    with pytest.raises(KeyError):
        box.press("left")


def test_a_short_press_while_the_box_is_busy_is_never_a_hold(make_box):
    """The box's thread busy for longer than a hold (a loaded machine, a slow
    Pi starting): a short press of BACK reaches it late, with the pin already
    up, and stays a short press (the menu), not a hold (undo)."""
    box = make_box()
    box.session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"],
                        "options": {"target": 10}})
    box.flush()
    busy = threading.Event()
    original = box._render

    def slow_render():
        if not busy.is_set():
            busy.set()
            time.sleep(box.hold_s + 0.5)
        original()
    box._render = slow_render
    box._post(("refresh",))
    assert busy.wait(10)
    box.press("back")
    box._render = original
    assert type(box.app.layers[-1]).__name__ == "MainMenu"


def test_a_short_press_whose_pressing_thread_is_put_off_is_never_a_hold(make_box, monkeypatch):
    """The other side of it: the box idle, the thread pressing (a test's)
    put off for longer than a hold between the low edge and the high one.
    A finger never is; the press stays a short press (the menu), not undo."""
    from hardware import box as box_module

    box = make_box()
    box.session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"],
                        "options": {"target": 10}})
    box.flush()
    original = box_module._sleep_until
    monkeypatch.setattr(box_module, "_sleep_until",
                        lambda deadline: original(deadline + box.hold_s + 0.5))
    box.press("back")
    assert type(box.app.layers[-1]).__name__ == "MainMenu"


def test_bouncing_pin_counts_once(make_box, mock_factory):
    box = make_box(box_config(bounce_ms=30))
    box.press("ok")                                  # the menu: New game, Phones
    shows(box, "New game")
    pin = mock_factory.pin(box.config["buttons"]["down"])
    for _ in range(3):                               # six edges in well under 30 ms
        pin.drive_low()
        pin.drive_high()
    pin.drive_low()
    box.flush()
    time.sleep(0.04)
    pin.drive_high()
    box.flush()
    assert box.app.layers[-1].cursor == 1, "a bouncing DOWN must move the cursor once"


def test_button_held_at_power_on_gives_no_action(session, mock_factory):
    config = box_config()
    mock_factory.pin(config["buttons"]["ok"], pin_class=HeldAtPowerOn)
    box = Box(session, config, mock=True, pin_factory=mock_factory)
    try:
        box.start()
        pin = box.buttons.devices["ok"].pin
        assert box.buttons.level("ok"), "the mock pin should read as pressed at start"
        pin.drive_high()                             # released: still nothing
        box.flush()
        shows(box, "Game companion")
        # Past the release's debounce window: a press inside it is only seen
        # if the box's thread rechecks the pin before the press ends, which a
        # loaded machine may not do (press() settles its own releases only).
        time.sleep(box.bounce_s + 0.01)
        box.press("ok")                              # pressed again: now it counts
        shows(box, "Menu")
    finally:
        box.close()


def test_buttons_are_remappable(make_box, mock_factory):
    config = box_config(buttons={"up": 5, "down": 6, "ok": 13, "back": 19, "extra": 26})
    box = make_box(config)
    assert box.button_names == ["up", "down", "ok", "back", "extra"]
    mock_factory.pin(13).drive_low()
    box.flush()
    shows(box, "Menu")
    box.press("extra")                               # configured but unused: does nothing
    shows(box, "Menu")


def test_long_press_back_asks_before_undoing(make_box, session):
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    session.submit({"type": "add", "seat": 1, "points": 5})
    box = make_box()
    assert box.hold("back")
    shows(box, "Undo the last action?")
    box.press("back")                                # keep it
    assert session.public()["scores"] == [0, 5, 0, 0]
    box.hold("back")
    box.press("ok")
    assert session.public()["scores"] == [0, 0, 0, 0]
    shows(box, "Scoreboard")
    box.hold("back")
    box.press("ok")                                  # nothing left: the refusal is shown
    shows(box, "nothing to undo")
    box.press("up")                                  # dismisses the message, does nothing else
    shows(box, "Scoreboard")


def test_press_needs_mock_mode(session, mock_factory):
    box = Box(session, box_config(), mock=False, pin_factory=mock_factory, display_factory=FlakyDummy)
    try:
        box.start()
        with pytest.raises(RuntimeError):
            box.press("ok")
    finally:
        box.close()


def test_idle_box_does_not_wake_up(make_box):
    # Panel care off: its one deadline (the next dim or sleep) is its own test's.
    box = make_box(box_config(panel_dim_s=0, panel_sleep_s=0))
    box.press("ok")
    time.sleep(0.05)                                 # let the debounce window end
    before = box.wakeups
    time.sleep(0.3)
    assert box.wakeups == before, "the worker woke up with nothing to do (a polling loop?)"
    assert box._timeout() is None


# -- fonts ---------------------------------------------------------------------------------

NAMES = ["Chloé", "François", "Zoë", "Łukasz", "Ærøskøbing", "Søren", "Åsa", "Straße", "Über", "Jürgen",
         "Ümit", "Þóra", "Ðóra", "Šárka", "Zdeněk", "Żaneta", "Grzegorz Brzęczyszczykiewicz", "Ľubica",
         "Ağca", "İlkay", "Çağla", "Nuño", "Joãozinho", "Maëlle", "Œdipe", "Ŕ", "Γιώργος", "Дмитрий", "✓"]


@pytest.mark.parametrize("font_name", sorted(draw.ALL_FONTS))
def test_fonts_have_every_letter_of_european_names(font_name):
    font = draw.ALL_FONTS[font_name]
    missing_mask = bytes(font.getmask("\ue000"))     # a private-use code point: surely not in the font
    missing = sorted({ch for name in NAMES for ch in name
                      if not ch.isspace() and bytes(font.getmask(ch)) == missing_mask})
    assert not missing, f"{font_name} draws these as empty boxes: {missing}"


def test_pillow_default_font_would_fail_that_test():
    """The check above can fail: Pillow's built-in font lacks é."""
    from PIL import ImageFont

    font = ImageFont.load_default(size=11)
    assert bytes(font.getmask("é")) == bytes(font.getmask("\ue000"))


def test_long_names_are_shortened_with_an_ellipsis():
    assert draw.fit("Grzegorz Brzęczyszczykiewicz", draw.BODY, 60).endswith("…")
    assert draw.text_width(draw.fit("Grzegorz Brzęczyszczykiewicz", draw.BODY, 60), draw.BODY) <= 60
    assert draw.fit("Zoë", draw.BODY, 60) == "Zoë"


# -- screens against reference images --------------------------------------------------------

def check_reference(box, name: str) -> None:
    actual = box.frame.image
    path = REFERENCE / f"{name}.png"
    if REGEN:
        REFERENCE.mkdir(exist_ok=True)
        actual.save(path)
        pytest.fail(f"REGENERATED {path} — inspect it, commit it, and run again without COMPANION_REGEN_REFERENCE")
    assert path.exists(), f"no reference {path}: run with COMPANION_REGEN_REFERENCE=1 once, then inspect it"
    expected = Image.open(path).convert("1")
    diff = ImageChops.difference(actual.convert("L"), expected.convert("L"))
    box_ = diff.getbbox()
    if box_ is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        actual.resize((512, 256), Image.NEAREST).save(ARTIFACTS / f"{name}.actual.png")
        diff.resize((512, 256), Image.NEAREST).save(ARTIFACTS / f"{name}.diff.png")
        pytest.fail(f"screen '{name}' differs from {path.name} in the region {box_}; "
                    f"it drew: {texts(box)}; see {ARTIFACTS}/{name}.actual.png and .diff.png")


def test_idle_screen(make_box):
    box = make_box()
    box.show_join("http://192.168.1.20:8000/", "4821")
    box.flush()
    shows(box, "Game companion", "OK: menu", "PIN 4821")
    check_reference(box, "idle")


def test_join_screen_shows_a_scannable_qr_and_the_pin(make_box):
    box = make_box()
    box.show_join("http://192.168.1.20:8000/", "4821")
    box.press("ok")
    box.press("down")
    box.press("ok")
    shows(box, "PIN", "4821", "192.168.1.20")
    check_reference(box, "join")
    # Read the code back from the frame: 2 px per module, a lit 2-module quiet
    # zone, dark modules exactly where segno puts them.
    import segno

    matrix = segno.make_qr("http://192.168.1.20:8000/", error="m").matrix
    image = box.frame.image
    side = (len(matrix) + 4) * 2
    assert side <= 64
    top = (64 - side) // 2
    read = [[image.getpixel((4 + 2 * col, top + 4 + 2 * row)) == 0 for col in range(len(matrix))]
            for row in range(len(matrix))]
    assert read == [[bool(v) for v in row] for row in matrix]
    assert all(image.getpixel((x, top)) == 255 for x in range(side)), "the quiet zone must be lit"


def test_qr_code_fits_the_panel_or_is_left_out():
    from hardware.ui.common import qr_image

    assert qr_image("http://192.168.1.20:8000/").size == (58, 58)          # version 2, 2-module border
    assert qr_image("http://companion-table.local:8000/").size == (62, 62)  # version 3, 1-module border
    assert qr_image("http://" + "x" * 80 + ".local:8000/") is None           # too big for 64 px at 2 px


def test_new_game_names_come_from_the_previous_game_then_the_settings():
    from hardware.ui.menus import default_players

    assert default_players(4, [], ["Ann", "Ben", "Chloé", "Dan", "Zoë"]) == ["Ann", "Ben", "Chloé", "Dan"]
    assert default_players(3, ["Zoë", "Łukasz"], ["Ann", "Zoë"]) == ["Zoë", "Łukasz", "Ann"]
    assert default_players(3, [], ["Ann"]) == ["Ann", "Player 1", "Player 2"]


def test_third_man_score_track(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    for seat, card in [(0, 3), (1, 1), (2, 9), (3, 2), (3, 5), (0, 9), (1, 0), (2, 4)]:
        session.submit({"type": "bid", "seat": seat, "card": card})
    box = make_box()
    shows(box, "Round 1 · bid 3", "leads", "OK: next bid", "Ann", "Chloé")
    check_reference(box, "third_man_track")


def test_frame_png_is_the_frame_scaled(make_box):
    box = make_box()
    for scale in (1, 2, 4):
        image = Image.open(io.BytesIO(box.frame_png(scale)))
        assert image.size == (128 * scale, 64 * scale)
    assert Image.open(io.BytesIO(box.frame_png(1))).convert("1").tobytes() == box.frame.image.tobytes()
    with pytest.raises(ValueError):
        box.frame_png(0)


def test_frame_subscribers_get_each_new_version(make_box):
    box = make_box()
    got = []
    unsubscribe = box.subscribe_frames(got.append)
    box.press("ok")
    box.press("down")
    unsubscribe()
    box.press("up")
    assert got == [box.frame_version - 2, box.frame_version - 1]


def test_new_game_menu_sets_seats_and_names(make_box, session):
    box = make_box()
    for key in ("ok", "ok", "up"):                   # menu, New game, up wraps to the last game
        box.press(key)
    shows(box, "Pick the game", "Scoreboard")
    box.press("ok")
    shows(box, "Start", "Players", "1. Ann")
    box.press("down")
    box.press("ok")                                  # Players: 4 → 5
    assert "5" in box.frame.texts, box.frame.texts
    box.press("down")
    box.press("ok")                                  # seat 1: the names nobody else has
    shows(box, "Seat 1", "Ann", "François", "Zoë")
    assert "Ben" not in box.frame.texts
    box.press("down")
    box.press("ok")
    shows(box, "1. François")
    box.press("up")
    box.press("up")
    box.press("ok")                                  # Start
    assert session.public()["players"] == ["François", "Ben", "Chloé", "Dan", "Élodie"]
    shows(box, "Scoreboard", "Franço.")                 # two seats a row: two letters dropped at least


def test_games_without_a_controller_show_their_public_scores(make_box, session, monkeypatch):
    from hardware.ui import CONTROLLERS

    monkeypatch.delitem(CONTROLLERS, "fight")        # every game has one now: pretend FIGHT? had none
    session.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben", "Zoë"]})
    box = make_box()
    shows(box, "FIGHT?", "Ann", "Zoë", "Use a phone · BACK: menu")
    box.press("back")
    shows(box, "Back to game", "New game")


def test_a_refused_action_shows_its_message_briefly(make_box, session):
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    box = make_box()
    for key in ("ok", "ok", "down", "ok"):           # Ann, skip points, tokens −1, apply
        box.press(key)
    shows(box, "Ann has only 0 tokens")
    assert "toast" in box.app.timers                 # it goes by itself too
    box.press("down")                                # closes the message and does nothing else
    shows(box, "Scoreboard")
    assert box.app.controller.cursor == 0


def test_scoreboard_points_tokens_and_a_secret_round(make_box, session):
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    box = make_box()
    for key in ("down", "ok", "up", "up", "up", "ok"):           # Ben +3
        box.press(key)
    for key in ("ok", "ok", "up", "ok"):                          # Ben +1 token
        box.press(key)
    assert session.public()["scores"] == [0, 3, 0, 0] and session.public()["tokens"] == [0, 1, 0, 0]
    for _ in range(3):
        box.press("down")                                         # to "Secret round"
    box.press("ok")
    for seat, value in enumerate([2, 0, 1, 3]):
        shows(box, "Pass the box to", PLAYERS[seat])
        box.press("ok")
        assert box.frame.private
        for _ in range(value):
            box.press("up")
        box.press("ok")
    assert session.public()["reveal"] == [2, 0, 1, 3]
    shows(box, "Revealed!", "Chloé")


# -- display faults -----------------------------------------------------------------------------

@pytest.mark.parametrize("error", [
    "DeviceNotFoundError", "ImportError", "OSError", "luma.core.error.Error"])
def test_no_display_at_start_does_not_stop_the_box(make_box, caplog, error):
    import luma.core.error as luma_error

    exc = {"DeviceNotFoundError": luma_error.DeviceNotFoundError("I2C device not found on address: 0x3C"),
           "ImportError": ImportError("No module named 'RPi'"),
           "OSError": OSError(121, "Remote I/O error"),
           "luma.core.error.Error": luma_error.Error("boom")}[error]
    attempts = []
    opened = threading.Event()

    def factory():
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise exc
        opened.set()
        return FlakyDummy()

    config = box_config(display={"driver": "ssd1306", "port": 1, "address": 0x3C, "rotate": 0, "retry_s": 0.05})
    with caplog.at_level(logging.WARNING, logger="hardware.display"):
        box = make_box(config, display_factory=factory)
        box.press("ok")
        shows(box, "Menu")                                        # rendered in memory all along
        assert opened.wait(30), "the display was not retried"
        box.flush()
    assert box.screen.device is not None
    assert box.screen.device.image.tobytes() == box.frame.image.tobytes(), "the current frame goes to the new panel"
    warnings = [r for r in caplog.records if r.name == "hardware.display" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1, f"log once, not at every retry: {[r.getMessage() for r in warnings]}"
    assert attempts[2] - attempts[1] >= 0.04, "retries must sleep between attempts"


def test_display_that_starts_failing_is_dropped_and_retried(make_box, caplog):
    panels = []

    def factory():
        panel = FlakyDummy(fail_after=2 if not panels else None)
        panels.append(panel)
        return panel

    config = box_config(display={"driver": "ssd1306", "retry_s": 0.05})
    with caplog.at_level(logging.WARNING, logger="hardware.display"):
        box = make_box(config, display_factory=factory)
        for key in ("ok", "down", "up", "down"):
            box.press(key)                                        # the panel fails on the 3rd frame
        assert box.frame.texts, "frames are still rendered"
        deadline = time.monotonic() + 30
        while box.screen.device is None and time.monotonic() < deadline:
            time.sleep(0.01)
        box.flush()
    assert len(panels) == 2 and box.screen.device is panels[1]
    assert panels[1].image.tobytes() == box.frame.image.tobytes()
    lost = [r for r in caplog.records if "stopped answering" in r.getMessage()]
    assert len(lost) == 1


@pytest.mark.filterwarnings("ignore::gpiozero.PinFactoryFallback")
def test_real_mode_without_a_pi_still_runs(session, caplog, monkeypatch):
    """No pins, no I2C bus (this machine): the box logs and serves frames."""
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    config = box_config(display={"driver": "sh1106", "port": 99, "address": "0x3D", "retry_s": 60})
    box = Box(session, config, mock=False)
    try:
        box.start()
        shows(box, "Notice", "buttons do not work")   # no pin library here: the box says so
        assert box.screen.device is None and box.screen.retrying
    finally:
        box.close()
    assert not box.screen.retrying, "close() stops the retry thread"


def test_unknown_driver_is_a_clear_error_without_retries(make_box, caplog):
    with caplog.at_level(logging.ERROR, logger="hardware.display"):
        box = make_box(box_config(display={"driver": "ssd9999"}))
    assert "unknown display driver" in caplog.text
    assert box.screen.device is None and not box.screen.retrying
    shows(box, "Game companion")
