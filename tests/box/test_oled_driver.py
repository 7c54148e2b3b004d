"""luma.oled's real SSD1306 and SH1106 drivers, on an I2C bus emulated at the controller.

The box's frames go through luma's real device classes (init sequence,
addressing, contrast) and ``luma.core.interface.serial.i2c`` into
:class:`hardware.i2c_panel.EmulatedPanel`, which decodes the command stream
into the controller's memory; what the emulated glass shows is compared
pixel for pixel with the frame the box drew, upside down included.  Bus
errors (errno 121 and 110) are injected at the bus, at start and mid-frame.
"""

from __future__ import annotations

import errno
import os
import time

import pytest
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106, ssd1306
from PIL import Image, ImageChops

from hardware import draw
from hardware.display import NO_DISPLAY, make_device
from hardware.i2c_panel import EmulatedPanel
from hardware.testing import box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]
DRIVERS = ["ssd1306", "sh1106"]


def sample_frame() -> Image.Image:
    c = draw.Canvas()
    c.header("Round 1 · bid 2", "9 cards")
    c.row(14, "Élodie", True, right="−3")
    c.row(26, "Łukasz", False, right="12")
    c.text(3, 44, "x", draw.BIG)
    c.fill(120, 56, 127, 63)                      # a corner: catches mirrored or shifted output
    return c.image


def glass_shows(panel: EmulatedPanel, image: Image.Image, rotate: int = 0) -> bool:
    expected = image.rotate(180) if rotate == 2 else image
    return ImageChops.difference(panel.image().convert("L"), expected.convert("L")).getbbox() is None


def wait_until(predicate, timeout=30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# -- the emulator against luma's own, unmodified drivers ------------------------------------------------

@pytest.mark.parametrize("rotate", [0, 2])
@pytest.mark.parametrize("driver", [ssd1306, sh1106], ids=DRIVERS)
def test_luma_drivers_draw_on_the_emulated_glass(driver, rotate):
    panel = EmulatedPanel(driver.__name__)
    device = driver(i2c(bus=panel, address=0x3C), width=128, height=64, rotate=rotate)
    assert panel.on and not panel.image().getbbox(), "after luma's set-up: on, and cleared"
    frame = sample_frame()
    device.display(frame)
    assert glass_shows(panel, frame, rotate)
    device.contrast(0x10)
    assert panel.contrast == 0x10
    device.hide()
    assert not panel.on and panel.image().getbbox() is None
    device.show()
    assert glass_shows(panel, frame, rotate)


def test_the_emulator_reads_the_remap_and_the_sh1106_margin():
    """It can fail: a panel set up without the segment remap shows the frame
    mirrored, and SH1106 data written without its 2-column offset lands shifted."""
    panel = EmulatedPanel("ssd1306")
    device = ssd1306(i2c(bus=panel, address=0x3C))
    frame = sample_frame()
    device.display(frame)
    device.command(0xA0)                                          # segment remap off
    assert panel.image().tobytes() == frame.transpose(Image.Transpose.FLIP_LEFT_RIGHT).tobytes()
    shifted = EmulatedPanel("sh1106")
    sh = sh1106(i2c(bus=shifted, address=0x3C), page_address_offset=0)
    sh.display(frame)
    assert not glass_shows(shifted, frame)


# -- the box through the real driver --------------------------------------------------------------------

def panel_box(make_box, controller: str, rotate: int = 0, notice_s: float = 10.0):
    panel = EmulatedPanel(controller)
    opened = []

    def opener():
        device = make_device(controller, i2c(bus=panel, address=0x3C), rotate)
        opened.append(device)
        return device
    settings = box_config(display={"driver": controller, "rotate": rotate, "retry_s": 0.05, "notice_s": notice_s})
    box = make_box(settings, display_factory=opener)
    return box, panel, opened


@pytest.mark.parametrize("rotate", [0, 2])
@pytest.mark.parametrize("controller", DRIVERS)
def test_every_frame_of_the_box_reaches_the_glass(make_box, session, controller, rotate):
    box, panel, _ = panel_box(make_box, controller, rotate)
    assert glass_shows(panel, box.frame.image, rotate)
    for key in ("ok", "down", "down", "up", "ok"):
        box.press(key)
        assert glass_shows(panel, box.frame.image, rotate), f"after {key}: {box.frame.texts}"
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box.flush()
    assert glass_shows(panel, box.frame.image, rotate)


@pytest.mark.parametrize("controller", DRIVERS)
def test_a_cursor_move_sends_only_what_changed(make_box, controller):
    box, panel, _ = panel_box(make_box, controller)
    box.press("ok")                                               # the menu
    before = panel.counters()
    box.press("down")                                             # two rows change
    moved = {k: panel.counters()[k] - before[k] for k in before}
    assert glass_shows(panel, box.frame.image)
    # Two 13-pixel rows with their bars (full width, a lit row above and
    # below) touch 4 of the 8 pages, the menu's scroll mark a few columns of
    # a fifth: well under the 1024 bytes of a full frame, and a few commands.
    assert 0 < moved["data"] <= 4 * 128 + 32, moved
    assert moved["commands"] <= 5 * 6, moved
    before = panel.counters()
    box.flush()                                                   # nothing changed: nothing sent
    assert panel.counters() == before


# -- bus faults -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [errno.EREMOTEIO, errno.ETIMEDOUT], ids=["EREMOTEIO", "ETIMEDOUT"])
@pytest.mark.parametrize("controller", DRIVERS)
def test_a_fault_mid_frame_is_survived_and_no_press_is_lost(make_box, controller, code):
    box, panel, opened = panel_box(make_box, controller)
    box.press("ok")                                               # the menu
    rows = len(box.app.layers[-1].rows())
    panel.fail(code, after_writes=2)                              # the next frame breaks off after two blocks
    box.press("down")
    assert panel.failures == 1
    for key in ("down", "down", "up"):                            # pressed while the panel is being reopened
        box.press(key)
    assert box.app.layers[-1].cursor == 2 % rows, "every press acted"
    assert wait_until(lambda: box.screen.device is not None and len(opened) == 2), "the panel was not reopened"
    box.flush()
    assert glass_shows(panel, box.frame.image), "the current frame is on the glass again, whole"
    box.press("down")
    assert glass_shows(panel, box.frame.image)


@pytest.mark.parametrize("code", [errno.EREMOTEIO, errno.ETIMEDOUT], ids=["EREMOTEIO", "ETIMEDOUT"])
def test_a_panel_missing_at_start_is_found_later(make_box, code):
    panel = EmulatedPanel("ssd1306")
    panel.unplugged = code
    box = make_box(box_config(display={"retry_s": 0.05}),
                   display_factory=lambda: make_device("ssd1306", i2c(bus=panel, address=0x3C)))
    assert box.screen.device is None
    box.press("ok")
    panel.unplugged = None
    assert wait_until(lambda: box.screen.device is not None)
    box.flush()
    assert glass_shows(panel, box.frame.image) and "Menu" in box.frame.texts


def test_a_panel_gone_for_a_while_is_reported_with_what_to_check_then_taken_back(make_box, session):
    box, panel, _ = panel_box(make_box, "sh1106", notice_s=0.2)
    box.press("ok")
    panel.unplugged = errno.ETIMEDOUT
    box.press("down")                                             # lost here
    assert wait_until(lambda: session.table.notices), "no notice for a panel gone for a while"
    [(template, params)] = session.table.notices
    assert template == NO_DISPLAY and params == {"error": "the I²C bus timed out", "port": 1, "address": "3c"}
    panel.unplugged = None
    assert wait_until(lambda: box.screen.device is not None and not session.table.notices), "not taken back"
    box.flush()
    assert glass_shows(panel, box.frame.image)


def test_the_notice_tells_what_to_check_in_both_languages():
    from companion.i18n import gettext, set_language

    params = {"error": "nothing answers at its address", "port": 1, "address": "3c"}
    try:
        for language in ("en", "fr"):
            set_language(language)
            text = gettext(NO_DISPLAY, **params)
            for needle in ("raspi-config nonint do_i2c 0", "/dev/i2c-1", "i2cdetect -y 1", "3c"):
                assert needle in text, (language, text)
    finally:
        set_language("en")


# -- the Pi's I2C clock -------------------------------------------------------------------------------------

def test_install_sets_400_khz_once_and_the_documented_undo_removes_it(tmp_path):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    config = tmp_path / "config.txt"
    original = "# Pi OS\ndtparam=audio=on\n[pi4]\narm_boost=1\n"
    config.write_text(original)
    for _ in range(2):                                           # the second run changes nothing
        run = subprocess.run(["bash", str(root / "systemd/install.sh"), "--i2c-only", str(config)],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
    text = config.read_text()
    assert text.count("dtparam=i2c_arm=on,i2c_arm_baudrate=400000") == 1
    assert text.rstrip().splitlines()[-2:] == ["[all]", "dtparam=i2c_arm=on,i2c_arm_baudrate=400000"]
    subprocess.run(["sed", "-i", "/^# companion: I2C/,+2d", str(config)], check=True)
    assert config.read_text().rstrip("\n") == original.rstrip("\n")


# -- what the buttons' errors tell ------------------------------------------------------------------------

def test_button_errors_say_what_to_check(tmp_path):
    from companion.i18n import gettext, set_language
    from hardware.buttons import GPIO_DENIED, GPIO_FAILED, NO_GPIOCHIP, gpio_notice

    chip = tmp_path / "gpiochip0"
    chip.write_text("")
    lgpio_error = Exception("can not open gpiochip")           # what lgpio raises, type and all
    assert gpio_notice(lgpio_error, chips=[]) == (NO_GPIOCHIP, {"error": "Exception: can not open gpiochip"})
    template, params = gpio_notice(PermissionError(13, "Permission denied"), chips=[str(chip)])
    assert template == GPIO_DENIED and params["chip"] == str(chip) and params["user"]
    usable = os.access(chip, os.R_OK | os.W_OK)                   # not under every emulator's fake root
    assert gpio_notice(lgpio_error, chips=[str(chip)])[0] == (GPIO_FAILED if usable else GPIO_DENIED)
    try:
        for language in ("en", "fr"):
            set_language(language)
            assert "/dev/gpiochip*" in gettext(NO_GPIOCHIP, error="x")
            text = gettext(GPIO_DENIED, **params)
            assert f"adduser {params['user']} gpio" in text and str(chip) in text
    finally:
        set_language("en")
